//! Hostile and corrupt input: DUMP payloads (RESTORE, with the CRC64 fixed so Redis hands the
//! value to the module) and SCANDUMP headers / chunks (LOADCHUNK), mutated field by field, byte
//! by byte and truncated at every length. Every one must get an error (`ERR Bad data format`
//! for RESTORE, the exact `docs/format.md` ("LOADCHUNK") text for LOADCHUNK) or become a valid filter; after an error
//! the key does not exist; the server answers PING throughout and at the end.
//!
//! Expected verdicts come from `docs/format.md` ("LOADCHUNK") / `docs/format.md` ("RDB value"), computed here
//! with the independent model of `fxutil`, not with the module's code.

mod common;
mod fxutil;

use fxutil::{
    args, assert_scandump_eq, dump_payload, gv2_model, header_bytes, hex, server_rdb_version, show,
    unhex, Conn, DirServer, MChain, MLayer, ModuleValue, Resp, LN2,
};
use std::path::Path;

use common::wire::{BAD_DATA, BAD_FORMAT, NO_LINK, OK, TOO_BIG};

fn start() -> DirServer {
    DirServer::start(
        DirServer::tempdir(),
        &["--rdbcompression", "no", "--sanitize-dump-payload", "yes"],
    )
}

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// The key holds a usable filter: BF.DEBUG, a SCANDUMP header of the announced length, a walk
/// whose chunks have exactly the announced layer sizes, lookups and an add that answer.
/// Then the key is deleted. Keys that RESTORE turned into another Redis type are only deleted.
fn assert_sane_then_delete(c: &mut Conn, key: &[u8], what: &str) {
    let t = c.cmd(&[&b"TYPE"[..], key]);
    if t.raw == b"+MBbloom--\r\n" {
        let d = c.cmd(&[&b"BF.DEBUG"[..], key]);
        let lines = d.val.array().len();
        let h = c.cmd(&[&b"BF.SCANDUMP"[..], key, b"0"]);
        let a = h.val.array();
        assert_eq!(a[0].int(), 1, "{what}");
        let header = a[1].bulk().to_vec();
        let n = u32::from_le_bytes(header[8..12].try_into().unwrap()) as usize;
        assert_eq!(header.len(), 20 + 53 * n, "{what}: header length");
        assert_eq!(lines, n + 1, "{what}: BF.DEBUG lines");
        let sizes: Vec<u64> = (0..n)
            .map(|j| u64::from_le_bytes(header[20 + 53 * j..28 + 53 * j].try_into().unwrap()))
            .collect();
        let mut it = 1i64;
        for (j, &bytes) in sizes.iter().enumerate() {
            let mut left = bytes;
            while left > 0 {
                let r = c.cmd(&[&b"BF.SCANDUMP"[..], key, it.to_string().as_bytes()]);
                let a = r.val.array();
                let len = a[1].bulk().len() as u64;
                assert!(len > 0 && len <= left, "{what}: layer {j} chunk of {len}");
                assert_eq!(a[0].int(), it + len as i64, "{what}");
                left -= len;
                it += len as i64;
            }
        }
        let r = c.cmd(&[&b"BF.SCANDUMP"[..], key, it.to_string().as_bytes()]);
        assert_eq!(r.raw, b"*2\r\n:0\r\n$0\r\n\r\n", "{what}: end of walk");
        let r = c.cmd(&[&b"BF.EXISTS"[..], key, b"probe"]);
        assert!(
            matches!(r.val, Resp::Int(0 | 1)),
            "{what}: {}",
            show(&r.raw)
        );
        let r = c.cmd(&[&b"BF.ADD"[..], key, b"probe-add"]);
        assert!(
            matches!(r.val, Resp::Int(0 | 1))
                || text(&r.raw) == "-ERR problem inserting into filter\r\n"
                || text(&r.raw) == "-ERR non scaling filter is full\r\n",
            "{what}: BF.ADD {}",
            show(&r.raw)
        );
        let r = c.cmd(&[&b"BF.INFO"[..], key]);
        assert!(!r.val.is_error(), "{what}: BF.INFO {}", show(&r.raw));
    }
    assert_eq!(c.cmd(&[&b"DEL"[..], key]).raw, b":1\r\n", "{what}");
}

/// Sends `RESTORE key 0 payload` + `EXISTS key` for every payload in one pipeline, with a PING
/// every 25; returns the RESTORE replies (EXISTS is checked: 0 after an error, 1 after OK).
fn restore_all(c: &mut Conn, key: &[u8], payloads: &[Vec<u8>], what: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, chunk) in payloads.chunks(25).enumerate() {
        let mut cmds = Vec::new();
        for p in chunk {
            cmds.push(args([b"RESTORE", key, b"0", p]));
            cmds.push(args([b"EXISTS", key]));
            cmds.push(args([b"DEL", key]));
        }
        cmds.push(args([b"PING"]));
        let replies = c.pipe(&cmds);
        for (i, p) in chunk.iter().enumerate() {
            let r = text(&replies[3 * i].raw);
            let exists = replies[3 * i + 1].val.int();
            let idx = n * 25 + i;
            assert!(
                r == OK || r == BAD_FORMAT,
                "{what} #{idx}: RESTORE {} → {r:?}",
                hex(p)
            );
            assert_eq!(
                exists,
                i64::from(r == OK),
                "{what} #{idx}: EXISTS after {r:?}"
            );
            out.push(r);
        }
        assert_eq!(replies.last().unwrap().raw, b"+PONG\r\n", "{what}: PING");
    }
    out
}

/// Encodes a chain as an encoding-version-4 module value.
fn v4(m: &MChain) -> Vec<u8> {
    m.rdb_v4().bytes
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// `ERR Bad data format` (or `ERR received bad data`) and no key.
    Fail,
    /// Accepted; the filter equals the given model.
    Ok,
    /// Either is acceptable (not specified); an accepted value must be a sane filter.
    Either,
}

/// Builds a module value with the layer fields of `m` but each written through `layer_fn`
/// (which may drop, replace or add raw values), for field-level corruption.
fn custom(m: &MChain, head: &[Field], layer_fn: &dyn Fn(usize, &mut ModuleValue)) -> Vec<u8> {
    let mut v = ModuleValue::new(4);
    for f in head {
        f.put(&mut v);
    }
    for (j, _) in m.layers.iter().enumerate() {
        layer_fn(j, &mut v);
    }
    v.eof();
    v.bytes
}

#[derive(Clone, Copy, Debug)]
enum Field {
    U(u64),
    D(f64),
}

impl Field {
    fn put(&self, v: &mut ModuleValue) {
        match *self {
            Field::U(x) => {
                v.u(x);
            }
            Field::D(x) => {
                v.d(x);
            }
        }
    }
}

/// The per-layer fields of `l` in RDB order (data as an index placeholder).
fn layer_fields(l: &MLayer) -> Vec<Field> {
    vec![
        Field::U(l.entries),
        Field::D(l.error),
        Field::U(u64::from(l.hashes)),
        Field::D(l.bpe),
        Field::U(l.bits),
        Field::U(u64::from(l.n2)),
    ]
}

#[test]
fn restore_mutated_fields_truncations_and_byte_flips() {
    let mut server = start();
    let mut c = server.conn();
    let version = server_rdb_version(&mut c);
    let m = gv2_model();
    // The module writes exactly our encoding (rdbcompression no), so mutating ours is
    // mutating a real DUMP payload.
    let r = c.cmd(&[&b"BF.RESERVE"[..], b"src", b"0.1", b"4", b"EXPANSION", b"3"]);
    assert_eq!(r.raw, b"+OK\r\n");
    let mut madd = args([b"BF.MADD", b"src"]);
    madd.extend((b'a'..=b'l').map(|x| vec![x]));
    c.cmd(&madd);
    let real = c.cmd(&[&b"DUMP"[..], b"src"]).val.bulk().to_vec();
    let body = v4(&m);
    assert_eq!(hex(&real), hex(&dump_payload(&body, version)));

    // ---- field by field
    let l0 = &m.layers[0];
    let l1 = &m.layers[1];
    let head = |size: u64, n: u64, options: u64, growth: u64| {
        vec![
            Field::U(size),
            Field::U(n),
            Field::U(options),
            Field::U(growth),
        ]
    };
    let std_head = head(m.size, 2, 5, 3);
    // Writes layer j with field k replaced (k in 0..6 per layer_fields; 6 = data; 7 = size).
    let layer_with = |j: usize, k: usize, repl: Option<Field>, v: &mut ModuleValue| {
        let l = &m.layers[j];
        for (i, f) in layer_fields(l).iter().enumerate() {
            match (i == k, repl) {
                (true, Some(r)) => r.put(v),
                (true, None) => {}
                _ => f.put(v),
            }
        }
        if k == 6 {
            if let Some(Field::U(len)) = repl {
                v.s(&vec![0xa5; len as usize]);
            }
        } else {
            v.s(&l.data);
        }
        match (k == 7, repl) {
            (true, Some(r)) => r.put(v),
            (true, None) => {}
            _ => {
                v.u(l.size);
            }
        }
    };
    let mut cases: Vec<(String, Vec<u8>, Expect, Option<MChain>)> = Vec::new();
    let mut field_case = |label: &str, j: usize, k: usize, repl: Option<Field>, e: Expect| {
        let bytes = custom(&m, &std_head, &|jj, v| {
            if jj == j {
                layer_with(jj, k, repl, v)
            } else {
                layer_with(jj, usize::MAX, None, v)
            }
        });
        cases.push((format!("layer {j} {label}"), bytes, e, None));
    };
    for j in 0..2 {
        let l = &m.layers[j];
        for e in [
            0.0,
            1.0,
            f64::NAN,
            -0.05,
            1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            field_case(&format!("error {e}"), j, 1, Some(Field::D(e)), Expect::Fail);
        }
        let k = u64::from(l.hashes);
        for h in [k - 1, k + 1, 0, 1 << 32, u64::MAX] {
            field_case(
                &format!("hashes {h}"),
                j,
                2,
                Some(Field::U(h)),
                Expect::Fail,
            );
        }
        for bpe in [f64::NAN, l.bpe * 2.0, f64::INFINITY] {
            field_case(
                &format!("bpe {bpe}"),
                j,
                3,
                Some(Field::D(bpe)),
                Expect::Fail,
            );
        }
        for bits in [l.bits - 1, l.bits + 8, 0, l.bits * 2, u64::MAX] {
            field_case(
                &format!("bits {bits}"),
                j,
                4,
                Some(Field::U(bits)),
                Expect::Fail,
            );
        }
        let log2_bits = 63 - l.bits.leading_zeros() as u64; // bits is a power of two here
        for n2 in [64, 255, 1 << 40, log2_bits + 1] {
            field_case(&format!("n2 {n2}"), j, 5, Some(Field::U(n2)), Expect::Fail);
        }
        // Bit array shorter than bits/8, or longer (then bits ≠ bytes × 8).
        for len in [0, l.bytes - 1, l.bytes + 1, l.bytes + 8] {
            field_case(
                &format!("data of {len} bytes"),
                j,
                6,
                Some(Field::U(len)),
                Expect::Fail,
            );
        }
        // Wrong value types where an unsigned / double is expected.
        field_case("entries as double", j, 0, Some(Field::D(4.0)), Expect::Fail);
        field_case("error as unsigned", j, 1, Some(Field::U(0)), Expect::Fail);
        field_case("missing layer size", j, 7, None, Expect::Fail);
        field_case("missing n2", j, 5, None, Expect::Fail);
        // Not checked on RDB load (`docs/format.md` ("RDB value")): entries 0, layer size > entries.
        field_case("entries 0", j, 0, Some(Field::U(0)), Expect::Either);
        field_case(
            "layer size 1000",
            j,
            7,
            Some(Field::U(1000)),
            Expect::Either,
        );
    }
    // Valid per spec: n2 = log2(bits) (power-of-two indexing over the whole array).
    let mut pow = m.clone();
    pow.layers[0].n2 = 6;
    pow.layers[1].n2 = 7;
    cases.push(("n2 = log2(bits)".into(), v4(&pow), Expect::Ok, Some(pow)));
    // Chain-level fields.
    let mut with_head = |label: &str, h: Vec<Field>, e: Expect, model: Option<MChain>| {
        let bytes = custom(&m, &h, &|j, v| layer_with(j, usize::MAX, None, v));
        cases.push((label.to_string(), bytes, e, model));
    };
    for n in [0u64, 1, 3, 1 << 32, 1 << 62, u64::MAX] {
        with_head(
            &format!("nfilters {n}"),
            head(m.size, n, 5, 3),
            Expect::Fail,
            None,
        );
    }
    // RedisBloom accepts this on RDB load; redis-bf refuses it, as LOADCHUNK does, because an
    // AOF rewrite of such a value would write a header LOADCHUNK refuses (src/bloom/rdb.rs).
    with_head(
        "chain size ≠ Σ layer sizes",
        head(999, 2, 5, 3),
        Expect::Fail,
        None,
    );
    let mut g0 = m.clone();
    g0.growth = 0;
    with_head("growth 0", head(m.size, 2, 5, 0), Expect::Ok, Some(g0));
    with_head(
        "growth 2^32",
        head(m.size, 2, 5, 1 << 32),
        Expect::Either,
        None,
    );
    with_head(
        "options 16",
        head(m.size, 2, 16 | 5, 3),
        Expect::Either,
        None,
    );
    with_head(
        "options 2^32",
        head(m.size, 2, 1 << 32, 3),
        Expect::Either,
        None,
    );
    with_head(
        "size as double",
        vec![Field::D(12.0), Field::U(2), Field::U(5), Field::U(3)],
        Expect::Fail,
        None,
    );
    // Raw structure.
    let mut v = ModuleValue::new(4);
    v.eof();
    cases.push(("empty value".into(), v.bytes, Expect::Fail, None));
    let mut no_eof = body.clone();
    no_eof.pop();
    cases.push(("no EOF".into(), no_eof, Expect::Fail, None));
    let mut extra = body.clone();
    extra.pop();
    extra.extend_from_slice(&[2, 7, 0]);
    cases.push(("extra value before EOF".into(), extra, Expect::Fail, None));
    let mut other_module = body.clone();
    other_module[2..10].copy_from_slice(&(0x1234_5678_9abc_d004u64).to_be_bytes());
    cases.push(("unknown module id".into(), other_module, Expect::Fail, None));
    // Strings announcing more bytes than there are (up to absurd sizes).
    for declared in [l0.bytes + 1, 1000, 1 << 32, 1 << 40, 1 << 60] {
        let mut v = ModuleValue::new(4);
        for f in &std_head {
            f.put(&mut v);
        }
        for f in layer_fields(l0) {
            f.put(&mut v);
        }
        v.s_declared(declared, &l0.data).u(l0.size);
        for f in layer_fields(l1) {
            f.put(&mut v);
        }
        v.s(&l1.data).u(l1.size).eof();
        cases.push((
            format!("string declares {declared} bytes"),
            v.bytes,
            Expect::Fail,
            None,
        ));
    }
    // A huge layer count followed by the real layers: no pre-allocation, runs out of data.
    let head_len = custom(&m, &std_head, &|_, _| {}).len() - 1; // type, id, 4 fields
    let mut huge = ModuleValue::new(4);
    huge.u(m.size).u(1 << 40).u(5).u(3);
    let mut huge = huge.bytes;
    huge.extend_from_slice(&body[head_len..]);
    cases.push(("nfilters 2^40 + 2 layers".into(), huge, Expect::Fail, None));

    let mut unexpected = Vec::new();
    for (i, (label, bytes, expect, model)) in cases.iter().enumerate() {
        let key = format!("field:{i}").into_bytes();
        let r = c.cmd(&[&b"RESTORE"[..], &key, b"0", &dump_payload(bytes, version)]);
        let r = text(&r.raw);
        match expect {
            Expect::Fail if r != BAD_FORMAT => {
                unexpected.push(format!("{label}: expected {BAD_FORMAT:?}, got {r:?}"))
            }
            Expect::Ok if r != OK => unexpected.push(format!("{label}: expected +OK, got {r:?}")),
            _ => {}
        }
        assert!(r == OK || r == BAD_FORMAT, "{label}: {r:?}");
        if r == OK {
            if let Some(model) = model {
                assert_scandump_eq(&mut c, &key, model, label);
                let d = c.cmd(&[&b"BF.DEBUG"[..], &key]);
                assert_eq!(text(&d.raw), text(&model.debug_reply()), "{label}");
            }
            assert_sane_then_delete(&mut c, &key, label);
        } else {
            assert_eq!(c.exists(&key), 0, "{label}: key exists after an error");
        }
        c.assert_ping();
    }
    assert!(
        unexpected.is_empty(),
        "RESTORE verdicts differ from the spec:\n{}",
        unexpected.join("\n")
    );

    // ---- truncation at every length, and byte flips at every position (CRC fixed)
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom/keys");
    let mut bodies = vec![(
        "gv2".to_string(),
        body.clone(),
        &[0x01u8, 0x02, 0x10, 0x80, 0xff][..],
    )];
    for name in ["fx_scaled", "fx_legacy32", "fx_binary"] {
        let j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join(format!("{name}.json"))).unwrap())
                .unwrap();
        let p = unhex(j["dump_payload_hex"].as_str().unwrap());
        bodies.push((name.to_string(), p[..p.len() - 10].to_vec(), &[0xffu8][..]));
    }
    for (name, body, masks) in &bodies {
        let truncated: Vec<Vec<u8>> = (0..body.len())
            .map(|l| dump_payload(&body[..l], version))
            .collect();
        // Redis parses the value from the whole payload, footer included, so a value cut
        // just before its end may be completed by the RDB-version / CRC bytes (e.g. a final
        // `02` opcode reads the version byte `0a` as the layer size, the next `00` as EOF):
        // such payloads are valid filters; every other truncation must be refused.
        let got = restore_all(&mut c, b"trunc", &truncated, &format!("{name} truncated"));
        for (l, r) in got.iter().enumerate() {
            if r == OK {
                assert!(
                    l + 10 >= body.len(),
                    "{name} truncated to {l} of {} bytes accepted",
                    body.len()
                );
                let rr = c.cmd(&[&b"RESTORE"[..], b"trunc-ok", b"0", &truncated[l]]);
                assert_eq!(rr.raw, b"+OK\r\n");
                assert_sane_then_delete(&mut c, b"trunc-ok", &format!("{name} truncated to {l}"));
            }
        }
        let refused = got.iter().filter(|r| *r == BAD_FORMAT).count();
        assert!(
            refused + 10 >= got.len(),
            "{name}: {refused} of {} refused",
            got.len()
        );
        let whole = restore_all(&mut c, b"trunc", &[dump_payload(body, version)], name);
        assert_eq!(whole, vec![OK.to_string()], "{name} untouched");

        let mut flipped = Vec::new();
        for p in 0..body.len() {
            for &mask in masks.iter() {
                let mut b = body.clone();
                b[p] ^= mask;
                flipped.push((p, mask, b));
            }
        }
        let payloads: Vec<Vec<u8>> = flipped
            .iter()
            .map(|(_, _, b)| dump_payload(b, version))
            .collect();
        let got = restore_all(&mut c, b"flip", &payloads, &format!("{name} flipped"));
        let mut accepted = 0;
        for (i, r) in got.iter().enumerate() {
            if r == OK {
                accepted += 1;
                let (p, mask, _) = &flipped[i];
                let key = b"flip-ok";
                let rr = c.cmd(&[&b"RESTORE"[..], key, b"0", &payloads[i]]);
                assert_eq!(rr.raw, b"+OK\r\n");
                assert_sane_then_delete(&mut c, key, &format!("{name} byte {p} ^ {mask:#x}"));
            }
        }
        assert!(accepted < got.len(), "{name}: some flips must be refused");
        c.assert_ping();
    }
    c.assert_ping();
    assert!(server.is_alive());
}

// ---------------------------------------------------------------------------- LOADCHUNK

/// `docs/format.md` ("LOADCHUNK") verdict on a LOADCHUNK header: Some(true) = must be accepted, Some(false) = must be
/// refused, None = implementation-defined (C conversion of an out-of-range hash count, a hash
/// count above any real filter's, or a bit array too large to allocate).
fn header_verdict(h: &[u8]) -> Option<bool> {
    if h.len() < 20 {
        return Some(false);
    }
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
    let f64_at = |o: usize| f64::from_le_bytes(h[o..o + 8].try_into().unwrap());
    let n = u32_at(8) as usize;
    if n == 0 || h.len() != 20 + 53 * n || u32_at(12) & !15 != 0 {
        return Some(false);
    }
    let mut sizes: u64 = 0;
    let mut total_bytes: u64 = 0;
    let mut certain = true;
    for j in 0..n {
        let o = 20 + 53 * j;
        let (bytes, bits, size) = (u64_at(o), u64_at(o + 8), u64_at(o + 16));
        let (error, bpe, hashes, n2) = (f64_at(o + 24), f64_at(o + 32), u32_at(o + 40), h[o + 52]);
        if !(error > 0.0 && error < 1.0) || n2 > 63 {
            return Some(false);
        }
        if n2 != 0 && bits < 1u64 << n2 {
            return Some(false);
        }
        if bits == 0 || bytes.checked_mul(8) != Some(bits) {
            return Some(false);
        }
        let k = (LN2 * bpe).ceil();
        if !(0.0..4294967296.0).contains(&k) {
            certain = false; // (unsigned)ceil(...) of NaN / out of range is undefined in C
        } else if k as u32 != hashes {
            return Some(false);
        } else if hashes > 2048 {
            certain = false;
        }
        let Some(s) = sizes.checked_add(size) else {
            return Some(false);
        };
        sizes = s;
        total_bytes = total_bytes.saturating_add(bytes);
    }
    if sizes != u64_at(0) {
        return Some(false);
    }
    if total_bytes > 1 << 30 {
        // Allocation: must fail on any machine for absurd sizes; a GiB may or may not fit.
        return if total_bytes >= 1 << 50 {
            Some(false)
        } else {
            None
        };
    }
    certain.then_some(true)
}

/// A layer header of 53 bytes, in the order of the record: (bytes, bits, size, error, bpe,
/// hashes, entries, n2).
fn layer_header(r: (u64, u64, u64, f64, f64, u32, u64, u8)) -> MLayer {
    let (bytes, bits, size, error, bpe, hashes, entries, n2) = r;
    MLayer {
        bytes,
        bits,
        size,
        error,
        bpe,
        hashes,
        entries,
        n2,
        data: Vec::new(),
    }
}

/// Sends each header to a fresh key; checks the reply against [`header_verdict`]; an accepted
/// header must read back identically (SCANDUMP 0) with zeroed arrays of the announced sizes.
fn check_headers(c: &mut Conn, headers: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut problems = Vec::new();
    for batch in headers.chunks(100) {
        let mut cmds = Vec::new();
        for (i, (_, h)) in batch.iter().enumerate() {
            let key = format!("hdr:{i}").into_bytes();
            cmds.push(args([b"BF.LOADCHUNK", &key, b"1", h]));
            cmds.push(args([b"EXISTS", &key]));
        }
        cmds.push(args([b"PING"]));
        let replies = c.pipe(&cmds);
        assert_eq!(replies.last().unwrap().raw, b"+PONG\r\n");
        for (i, (label, h)) in batch.iter().enumerate() {
            let key = format!("hdr:{i}").into_bytes();
            let r = text(&replies[2 * i].raw);
            let exists = replies[2 * i + 1].val.int();
            let verdict = header_verdict(h);
            // One too big for memory is refused as bad data too, as RedisBloom refuses it.
            assert!(r == OK || r == BAD_DATA, "{label}: {r:?}");
            assert_eq!(exists, i64::from(r == OK), "{label}: EXISTS after {r:?}");
            match verdict {
                Some(true) if r != OK => {
                    problems.push(format!("{label}: header {} refused: {r:?}", hex(h)))
                }
                Some(false) if r != BAD_DATA => {
                    problems.push(format!("{label}: header {} accepted", hex(h)))
                }
                _ => {}
            }
            if r == OK {
                let d = c.cmd(&[&b"BF.SCANDUMP"[..], &key, b"0"]);
                assert_eq!(
                    hex(d.val.array()[1].bulk()),
                    hex(h),
                    "{label}: accepted header reads back differently"
                );
                assert_sane_then_delete(c, &key, label);
            }
        }
    }
    problems
}

#[test]
fn loadchunk_header_mutations() {
    let mut server = start();
    let mut c = server.conn();
    let m = gv2_model();
    let gv2_header = m.header();
    let one = MChain {
        size: 0,
        options: 1,
        growth: 2,
        layers: vec![MLayer::sized(100, 0.01, 1)],
    }
    .header();
    assert_eq!(header_verdict(&gv2_header), Some(true));
    assert_eq!(header_verdict(&one), Some(true));
    let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, base) in [("gv2", &gv2_header), ("legacy", &one)] {
        headers.push((format!("{name} untouched"), base.clone()));
        for p in 0..base.len() {
            for mask in [0x01u8, 0x02, 0x04, 0x10, 0x40, 0x80, 0xff] {
                let mut h = base.clone();
                h[p] ^= mask;
                headers.push((format!("{name} byte {p} ^ {mask:#x}"), h));
            }
        }
        for l in 0..base.len() {
            headers.push((format!("{name} truncated to {l}"), base[..l].to_vec()));
        }
        for extra in [1usize, 52, 53, 54] {
            let mut h = base.clone();
            h.extend(std::iter::repeat_n(0u8, extra));
            headers.push((format!("{name} + {extra} bytes"), h));
        }
    }
    // Targeted fields on a one-layer (8-byte) header: chain size 3, layer size 3.
    let bpe = (0.05f64.ln() / fxutil::LN2_SQUARED).abs();
    let k = (LN2 * bpe).ceil() as u32;
    let layer = |bytes: u64, bits: u64, size: u64, error: f64, bpe: f64, hashes: u32, n2: u8| {
        layer_header((bytes, bits, size, error, bpe, hashes, 10, n2))
    };
    let ok_layer = layer(8, 64, 3, 0.05, bpe, k, 0);
    let ok = || vec![ok_layer.clone()];
    // Headers of chain size 3, options 13, growth 2 and one layer of size 3 (the bits per entry
    // of 0.05): `ok_in` (size, filters, options, growth) with the valid layer, `one` with the
    // layer (bytes, bits, error, hashes, n2); each row with its verdict.
    let ok_in = |(size, filters, options, growth): (u64, u32, u32, u32)| {
        header_bytes(size, filters, options, growth, &ok())
    };
    let one = |(bytes, bits, error, hashes, n2): (u64, u64, f64, u32, u8)| {
        header_bytes(
            3,
            1,
            13,
            2,
            &[layer(bytes, bits, 3, error, bpe, hashes, n2)],
        )
    };
    const BAD: Option<bool> = Some(false);
    const GOOD: Option<bool> = Some(true);
    const EITHER: Option<bool> = None;
    let mut targeted: Vec<(&str, Vec<u8>, Option<bool>)> = vec![
        ("valid", ok_in((3, 1, 13, 2)), GOOD),
        ("nfilters 0", header_bytes(3, 0, 13, 2, &[]), BAD),
        ("nfilters 0 + a layer", ok_in((3, 0, 13, 2)), BAD),
        ("nfilters 2, one layer", ok_in((3, 2, 13, 2)), BAD),
        ("nfilters u32::MAX", ok_in((3, u32::MAX, 13, 2)), BAD),
        ("options 16", ok_in((3, 1, 16 | 13, 2)), BAD),
        ("options 2^31", ok_in((3, 1, 1 << 31, 2)), BAD),
        ("chain size 4 ≠ Σ 3", ok_in((4, 1, 13, 2)), BAD),
        ("chain size 2 ≠ Σ 3", ok_in((2, 1, 13, 2)), BAD),
        ("growth 0 (not checked)", ok_in((3, 1, 13, 0)), GOOD),
        (
            "Σ sizes overflows",
            header_bytes(
                0,
                2,
                13,
                2,
                &[
                    layer(8, 64, u64::MAX, 0.05, bpe, k, 0),
                    layer(8, 64, 1, 0.05, bpe, k, 0),
                ],
            ),
            BAD,
        ),
        ("error 0", one((8, 64, 0.0, k, 0)), BAD),
        ("error 1", one((8, 64, 1.0, k, 0)), BAD),
        ("error NaN", one((8, 64, f64::NAN, k, 0)), BAD),
        ("error -0.05", one((8, 64, -0.05, k, 0)), BAD),
        ("error inf", one((8, 64, f64::INFINITY, k, 0)), BAD),
        ("hashes k-1", one((8, 64, 0.05, k - 1, 0)), BAD),
        ("hashes k+1", one((8, 64, 0.05, k + 1, 0)), BAD),
        ("hashes 0", one((8, 64, 0.05, 0, 0)), BAD),
        // (unsigned)ceil(NaN) is undefined in C: either verdict.
        (
            "bpe NaN",
            header_bytes(3, 1, 13, 2, &[layer(8, 64, 3, 0.05, f64::NAN, k, 0)]),
            EITHER,
        ),
        ("bits 0", one((8, 0, 0.05, k, 0)), BAD),
        ("bytes 0, bits 0", one((0, 0, 0.05, k, 0)), BAD),
        ("bits 63", one((8, 63, 0.05, k, 0)), BAD),
        ("bits 72 ≠ 64", one((8, 72, 0.05, k, 0)), BAD),
        ("n2 6 (= log2 bits)", one((8, 64, 0.05, k, 6)), GOOD),
        ("n2 7 > log2 bits", one((8, 64, 0.05, k, 7)), BAD),
        ("n2 63", one((8, 64, 0.05, k, 63)), BAD),
        ("n2 64", one((8, 64, 0.05, k, 64)), BAD),
        ("n2 255", one((8, 64, 0.05, k, 255)), BAD),
        ("bytes 2^60", one((1 << 60, 1 << 63, 0.05, k, 0)), BAD),
        ("bytes 2^50", one((1 << 50, 1 << 53, 0.05, k, 0)), BAD),
        (
            "bytes 2^61 (bits overflow)",
            one((1 << 61, 0, 0.05, k, 0)),
            BAD,
        ),
        (
            "two layers of 2^49 bytes",
            header_bytes(
                6,
                2,
                13,
                2,
                &[
                    layer(1 << 49, 1 << 52, 3, 0.05, bpe, k, 0),
                    layer(1 << 49, 1 << 52, 3, 0.05, bpe, k, 0),
                ],
            ),
            BAD,
        ),
    ];
    for (label, h, ok) in &targeted {
        assert_eq!(header_verdict(h), *ok, "verdict of {label}");
    }
    headers.extend(targeted.drain(..).map(|(l, h, _)| (l.to_string(), h)));
    // Many small layers: a long valid header, then the same with one bad layer at the end.
    let many: Vec<MLayer> = (0..2000)
        .map(|_| layer(8, 64, 1, 0.05, bpe, k, 0))
        .collect();
    headers.push(("2000 layers".into(), header_bytes(2000, 2000, 5, 2, &many)));
    let mut bad_many = many.clone();
    bad_many[1999] = layer(8, 72, 1, 0.05, bpe, k, 0);
    headers.push((
        "2000 layers, last bad".into(),
        header_bytes(2000, 2000, 5, 2, &bad_many),
    ));

    let problems = check_headers(&mut c, &headers);
    assert!(
        problems.is_empty(),
        "{} LOADCHUNK header verdict(s) differ from §7.3:\n{}",
        problems.len(),
        problems.join("\n")
    );
    c.assert_ping();
    assert!(server.is_alive());
}

/// `docs/format.md` ("LOADCHUNK") verdict for a data chunk on a filter with layers of the given byte sizes:
/// Ok((layer, offset)) or the exact error reply.
fn chunk_verdict(layers: &[u64], iter: i64, len: usize) -> Result<(usize, usize), &'static str> {
    let len_i = len as i64;
    if iter <= 0 || iter < len_i {
        return Err(BAD_DATA);
    }
    let start = iter - len_i;
    if start < 1 {
        return Err(NO_LINK);
    }
    let mut p = (start - 1) as u64;
    for (j, &bytes) in layers.iter().enumerate() {
        if p < bytes {
            if len as u64 > bytes - p {
                return Err(TOO_BIG);
            }
            return Ok((j, p as usize));
        }
        p -= bytes;
    }
    Err(NO_LINK)
}

#[test]
fn loadchunk_chunks_at_every_offset_and_length() {
    let mut server = start();
    let mut c = server.conn();
    let mut m = gv2_model();
    let key = b"chunks";
    let r = c.cmd(&[&b"BF.LOADCHUNK"[..], key, b"1", &m.header()]);
    assert_eq!(r.raw, b"+OK\r\n");
    for l in &mut m.layers {
        l.data.iter_mut().for_each(|b| *b = 0);
    }
    assert_scandump_eq(&mut c, key, &m, "fresh header");
    let sizes: Vec<u64> = m.layers.iter().map(|l| l.bytes).collect();
    let total: i64 = sizes.iter().sum::<u64>() as i64;
    let mut cmds = Vec::new();
    let mut expect = Vec::new();
    let mut seed = 1u32;
    for iter in -3..=total + 4 {
        for len in [0usize, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 40] {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            expect.push((iter, data.clone(), chunk_verdict(&sizes, iter, len)));
            cmds.push(args([
                b"BF.LOADCHUNK",
                key,
                iter.to_string().as_bytes(),
                &data,
            ]));
        }
    }
    let replies = c.pipe(&cmds);
    let mut accepted = 0;
    for ((iter, data, verdict), r) in expect.iter().zip(&replies) {
        let want = match verdict {
            Ok((j, off)) => {
                m.layers[*j].data[*off..off + data.len()].copy_from_slice(data);
                accepted += 1;
                OK
            }
            Err(e) => e,
        };
        assert_eq!(
            text(&r.raw),
            want,
            "LOADCHUNK iter {iter} with {} bytes",
            data.len()
        );
    }
    assert!(accepted > 50, "{accepted}");
    // Counters untouched, every accepted byte in place.
    assert_scandump_eq(&mut c, key, &m, "after chunks");
    // Iterators that are not strict integers.
    for it in [
        &b"abc"[..],
        b"1.5",
        b"",
        b"+1",
        b" 1",
        b"01",
        b"-0",
        b"9223372036854775808",
    ] {
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], key, it, b"x"]);
        assert_eq!(
            text(&r.raw),
            "-ERR Second argument must be numeric\r\n",
            "iter {:?}",
            text(it)
        );
    }
    // Iterator 1 on an existing key is a chunk (quirk 9): a header there is bad data.
    let r = c.cmd(&[&b"BF.LOADCHUNK"[..], key, b"1", &m.header()]);
    assert_eq!(text(&r.raw), BAD_DATA);
    // Missing key with an iterator other than 1; wrong type.
    for it in [&b"0"[..], b"2", b"9", b"-1"] {
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], b"missing", it, b"\x00"]);
        assert_eq!(text(&r.raw), "-ERR not found\r\n");
        assert_eq!(c.exists(b"missing"), 0);
    }
    c.cmd(&[&b"SET"[..], b"str", b"v"]);
    let r = c.cmd(&[&b"BF.LOADCHUNK"[..], b"str", b"1", &m.header()]);
    assert_eq!(
        text(&r.raw),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_scandump_eq(&mut c, key, &m, "after refused commands");
    c.assert_ping();
    assert!(server.is_alive());
}

#[test]
fn absurd_but_valid_headers_fail_on_growth_without_crashing() {
    let mut server = start();
    let mut c = server.conn();
    let bpe = (0.01f64.ln() / fxutil::LN2_SQUARED).abs();
    let k = (LN2 * bpe).ceil() as u32;
    // `docs/format.md` ("LOADCHUNK"): size = entries = 3.6e14, growth 1: accepted; the next new item needs a gigantic
    // layer → `ERR problem inserting into filter`, nothing changes.
    let big = 360_000_000_000_000u64;
    let h = header_bytes(
        big,
        1,
        5,
        1,
        &[layer_header((8, 64, big, 0.01, bpe, k, big, 0))],
    );
    assert_eq!(header_verdict(&h), Some(true));
    // growth 0 with a full layer: the next layer would have capacity 0.
    let h0 = header_bytes(3, 1, 5, 0, &[layer_header((8, 64, 3, 0.01, bpe, k, 3, 0))]);
    for (key, h) in [(&b"absurd"[..], &h), (b"growth0", &h0)] {
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], key, b"1", h]);
        assert_eq!(r.raw, b"+OK\r\n");
        let r = c.cmd(&[&b"BF.ADD"[..], key, b"new item"]);
        assert_eq!(text(&r.raw), "-ERR problem inserting into filter\r\n");
        let r = c.cmd(&[&b"BF.MADD"[..], key, b"x", b"y"]);
        assert_eq!(
            text(&r.raw),
            "*2\r\n-ERR problem inserting into filter\r\n-ERR problem inserting into filter\r\n"
        );
        let d = c.cmd(&[&b"BF.SCANDUMP"[..], key, b"0"]);
        assert_eq!(hex(d.val.array()[1].bulk()), hex(h), "nothing changed");
        let d = c.cmd(&[&b"BF.SCANDUMP"[..], key, b"1"]);
        assert_eq!(
            d.raw,
            b"*2\r\n:9\r\n$8\r\n\x00\x00\x00\x00\x00\x00\x00\x00\r\n"
        );
        c.assert_ping();
    }
    // The same through RESTORE (size/entries are not checked on RDB load either).
    let version = server_rdb_version(&mut c);
    let mut v = ModuleValue::new(4);
    v.u(big).u(1).u(5).u(1);
    v.u(big)
        .d(0.01)
        .u(u64::from(k))
        .d(bpe)
        .u(64)
        .u(0)
        .s(&[0; 8])
        .u(big)
        .eof();
    let payload = dump_payload(&v.bytes, version);
    let r = c.cmd(&args([b"RESTORE", b"absurd-r", b"0", &payload]));
    assert_eq!(r.raw, b"+OK\r\n");
    let r = c.cmd(&[&b"BF.ADD"[..], b"absurd-r", b"new item"]);
    assert_eq!(text(&r.raw), "-ERR problem inserting into filter\r\n");
    c.assert_ping();
    assert!(server.is_alive());
}
