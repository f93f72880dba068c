//! Legacy data the RedisBloom fixtures lack, checked against answers computed here from the
//! spec (`docs/format.md` ("Legacy 32-bit hash") legacy 32-bit hash, `docs/format.md` ("Power-of-two layers") power-of-two layers,
//! `docs/format.md` ("SCANDUMP") SCANDUMP/LOADCHUNK, `docs/format.md` ("RDB value") RDB value and encoding versions 0–4) with the independent model
//! of `fxutil` — never with the module's own code:
//! * LOADCHUNK headers with options 0, 1, 8 and 9, then adds, lookups and SCANDUMP bit by bit;
//! * RESTORE of hand-built DUMP payloads (RDB module values written byte by byte, Redis'
//!   CRC64) for encoding versions 0–4, and refusal of version 5 and above.
//!
//! The model itself is first pinned to data RedisBloom recorded (spec golden vector GV2, the
//! fixtures fx:legacy32 and fx:exp1).

mod common;
mod fxutil;

use fxutil::{
    args, assert_scandump_eq, check_hash_functions, crc64, dump_payload, format_g, gv2_model, hex,
    loadchunk_commands, server_rdb_version, show, unhex, Conn, DirServer, MAdd, MChain, MLayer,
    ModuleValue, Resp, FORCE64, NOROUND, NO_SCALING,
};
use serde_json::Value as Json;
use std::path::Path;

fn fixture(name: &str) -> Json {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/redisbloom/keys")
        .join(name);
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn chain(options: u32, growth: u32, first: MLayer) -> MChain {
    MChain {
        size: 0,
        options,
        growth,
        layers: vec![first],
    }
}

/// Raw RESP2 reply of one add per the model.
fn add_reply(outcome: MAdd) -> Vec<u8> {
    match outcome {
        MAdd::Added => b":1\r\n".to_vec(),
        MAdd::Exists => b":0\r\n".to_vec(),
        MAdd::Full => b"-ERR non scaling filter is full\r\n".to_vec(),
    }
}

/// Raw RESP2 reply of a BF.MADD per the model: stops after the first "full" (`docs/commands.md` ("BF.ADD")).
fn madd_reply(m: &mut MChain, items: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = Vec::new();
    for it in items {
        let o = m.add(it);
        parts.push(add_reply(o));
        if o == MAdd::Full {
            break;
        }
    }
    [format!("*{}\r\n", parts.len()).into_bytes(), parts.concat()].concat()
}

fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// BF.MEXISTS of `items` must answer exactly the model's membership.
fn assert_membership(c: &mut Conn, key: &[u8], m: &MChain, items: &[Vec<u8>], what: &str) {
    for batch in items.chunks(1000) {
        let mut cmd = args([b"BF.MEXISTS", key]);
        cmd.extend(batch.iter().cloned());
        let r = c.cmd(&cmd);
        let got: Vec<i64> = r.val.array().iter().map(Resp::int).collect();
        let want: Vec<i64> = batch.iter().map(|i| i64::from(m.contains(i))).collect();
        if got != want {
            let bad: Vec<String> = (0..batch.len())
                .filter(|&k| got[k] != want[k])
                .take(10)
                .map(|k| {
                    format!(
                        "{} (model {}, module {})",
                        String::from_utf8_lossy(&batch[k]),
                        want[k],
                        got[k]
                    )
                })
                .collect();
            panic!("{what}: membership differs: {bad:?}");
        }
    }
}

/// DEBUG, INFO and the SCANDUMP walk all equal the model.
fn assert_state(c: &mut Conn, key: &[u8], m: &MChain, what: &str) {
    let r = c.cmd(&[&b"BF.DEBUG"[..], key]);
    assert_eq!(
        show(&r.raw),
        show(&m.debug_reply()),
        "{what}: BF.DEBUG (model lines {:?})",
        m.debug_lines()
    );
    let r = c.cmd(&[&b"BF.INFO"[..], key]);
    assert_eq!(show(&r.raw), show(&m.info_reply()), "{what}: BF.INFO");
    let r = c.cmd(&[&b"BF.CARD"[..], key]);
    assert_eq!(r.val, Resp::Int(m.size as i64), "{what}: BF.CARD");
    assert_scandump_eq(c, key, m, what);
}

#[test]
fn model_reproduces_redisbloom_recordings() {
    check_hash_functions();
    assert_eq!(format_g(0.005), "0.005");
    assert_eq!(format_g(6.25e-05), "6.25e-05");
    assert_eq!(format_g(0.0005), "0.0005");
    assert_eq!(format_g(0.01), "0.01");
    assert_eq!(format_g(0.05 * 0.5f64.powi(20)), "4.76837e-08");
    assert_eq!(format_g(0.000244140625), "0.000244141");

    // `docs/format.md` ("Exact-size layers") table rows: (error, capacity) → (bpe, k, bytes, bits).
    for (err, cap, bpe, k, bytes, bits) in [
        (0.005, 100, 11.027753, 8, 144, 1152),
        (0.005, 1000, 11.027753, 8, 1384, 11072),
        (0.0005, 100, 15.820283, 11, 200, 1600),
        (0.025, 1000, 7.677919, 6, 960, 7680),
        (0.01, 3, 9.585058, 7, 8, 64),
    ] {
        let l = MLayer::sized(cap, err, NOROUND | FORCE64);
        assert!((l.bpe - bpe).abs() < 1e-6);
        assert_eq!(
            (l.hashes, l.bytes, l.bits, l.entries, l.n2),
            (k, bytes, bits, cap, 0)
        );
    }
    // `docs/format.md` ("Power-of-two layers") by hand: capacity 100 at 0.01 → product 958.5…, logb 9, n2 10, 1024 bits;
    // entries = 100 + trunc(trunc(1024 − 958.5…) / 9.585…) = 100 + trunc(65 / 9.585…) = 106.
    let l = MLayer::sized(100, 0.01, 0);
    assert_eq!((l.n2, l.bits, l.bytes, l.entries), (10, 1024, 128, 106));
    // Tiny: capacity 1 at 0.1 → product 4.79, logb 2, n2 3: 8 bytes stored, 8 bits indexed.
    let l = MLayer::sized(1, 0.1, 0);
    assert_eq!(
        (l.n2, l.modulus(), l.bits, l.bytes, l.entries),
        (3, 8, 64, 8, 1)
    );

    // GV2 (spec §12): BF.RESERVE gv2 0.1 4 EXPANSION 3; BF.MADD a..l.
    let m = gv2_model();
    assert_eq!(hex(&m.layers[0].data), "3045a08c50922120");
    assert_eq!(hex(&m.layers[1].data), "85098043064d0830709842d0c219a5ac");

    // fx:legacy32 (options 1, 32-bit hash), as RedisBloom built it.
    let j = fixture("fx_legacy32.json");
    let mut m = chain(1, 2, MLayer::sized(100, 0.01, 1));
    assert_eq!(
        hex(&m.header()),
        "00000000000000000100000001000000020000007800000000000000c00300000000000000000000000000007b14ae47e17a843f88168ac58c2b234007000000640000000000000000"
    );
    for i in 0..50 {
        assert_eq!(m.add(format!("old:{i}").as_bytes()), MAdd::Added);
    }
    assert_eq!(hex(&m.header()), j["header_hex"].as_str().unwrap());
    assert_eq!(
        hex(&m.layers[0].data),
        j["scandump"][1]["data_hex"].as_str().unwrap()
    );
    let lines: Vec<String> = common::json_strs(&j["debug"]);
    assert_eq!(m.debug_lines(), lines);
    let fps: Vec<u64> = (0..5000u64)
        .filter(|n| m.contains(format!("probe:fx:legacy32:{n}").as_bytes()))
        .collect();
    let want: Vec<u64> = j["probes"]["false_positive_n"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(fps, want);

    // fx:exp1: 20 layers of capacity 10, halving error rates, recorded :0 replies.
    let j = fixture("fx_exp1.json");
    let mut m = chain(5, 1, MLayer::sized(10, 0.025, 5));
    let mut zero = Vec::new();
    for i in 0..200 {
        if m.add(format!("e:{i}").as_bytes()) == MAdd::Exists {
            zero.push(i);
        }
    }
    assert_eq!(zero, vec![29, 30, 47, 98, 196, 197]);
    assert_eq!(hex(&m.header()), j["header_hex"].as_str().unwrap());
    let lines: Vec<String> = common::json_strs(&j["debug"]);
    assert_eq!(m.debug_lines(), lines);
    let fps = (0..5000u64)
        .filter(|n| m.contains(format!("probe:fx:exp1:{n}").as_bytes()))
        .count();
    assert_eq!(
        fps as u64,
        j["probes"]["false_positive_count"].as_u64().unwrap()
    );
}

/// The legacy chains LOADCHUNK'ed below: (label, options, growth, first capacity, first error).
const LEGACY: [(&str, u32, u32, u64, f64); 6] = [
    ("opt0", 0, 2, 50, 0.01),
    ("opt0-tiny", 0, 3, 2, 0.1),
    ("opt1", NOROUND, 2, 40, 0.02),
    ("opt8", NO_SCALING, 2, 60, 0.01),
    ("opt9", NOROUND | NO_SCALING, 2, 30, 0.05),
    ("opt1-growth1", NOROUND, 1, 10, 0.05),
];

#[test]
fn loadchunk_legacy_headers_then_add_exists_scandump() {
    check_hash_functions();
    let server = DirServer::start(DirServer::tempdir(), &[]);
    let mut c = server.conn();
    for (label, options, growth, cap, err) in LEGACY {
        let key = format!("legacy:{label}").into_bytes();
        let first = MLayer::sized(cap, err, options);
        if options & NOROUND == 0 {
            assert!(
                first.n2 > 0 && first.entries >= cap,
                "{label}: power of two"
            );
        }
        let mut m = chain(options, growth, first);
        let r = c.cmd(&[&b"BF.LOADCHUNK"[..], &key, b"1", &m.header()]);
        assert_eq!(r.raw, b"+OK\r\n", "{label}: header {}", hex(&m.header()));
        assert_state(&mut c, &key, &m, &format!("{label} (empty)"));

        // Enough items to fill several layers (or hit "full").
        let n = (cap as usize) * 9 + 20;
        let all = items(&format!("{label}:item:"), 0..n);
        let (singles, batch) = all.split_at(n / 2);
        let cmds: Vec<Vec<Vec<u8>>> = singles
            .iter()
            .map(|it| args([b"BF.ADD", &key, it]))
            .collect();
        for (it, r) in singles.iter().zip(c.pipe(&cmds)) {
            let want = add_reply(m.add(it));
            assert_eq!(
                show(&r.raw),
                show(&want),
                "{label}: BF.ADD {}",
                String::from_utf8_lossy(it)
            );
        }
        let mut cmd = args([b"BF.MADD", &key]);
        cmd.extend(batch.iter().cloned());
        let r = c.cmd(&cmd);
        assert_eq!(
            show(&r.raw),
            show(&madd_reply(&mut m, batch)),
            "{label}: BF.MADD"
        );
        if options & NO_SCALING != 0 {
            assert_eq!(m.layers.len(), 1, "{label}");
            assert!(r.raw.ends_with(b"-ERR non scaling filter is full\r\n"));
        } else {
            assert!(m.layers.len() >= 3, "{label}: {} layers", m.layers.len());
            for l in &m.layers {
                assert_eq!(l.n2 == 0, options & NOROUND != 0, "{label}");
            }
        }
        assert_state(&mut c, &key, &m, label);
        let probes = items(&format!("{label}:probe:"), 0..3000);
        assert_membership(&mut c, &key, &m, &all, label);
        assert_membership(&mut c, &key, &m, &probes, label);
        let fps = probes.iter().filter(|p| m.contains(p)).count();
        assert!(fps < 1500, "{label}: {fps} false positives in the model");

        // The other direction: a model-filled filter loaded by header + chunks answers the
        // model's membership (reading legacy bits, not only writing them).
        let mut filled = chain(options, growth, MLayer::sized(cap, err, options));
        let loaded_items = items(&format!("{label}:loaded:"), 0..(cap as usize) * 5);
        for it in &loaded_items {
            filled.add(it);
        }
        let key2 = format!("legacy:{label}:loaded").into_bytes();
        for r in c.pipe(&loadchunk_commands(&key2, &filled)) {
            assert_eq!(r.raw, b"+OK\r\n", "{label}: LOADCHUNK");
        }
        assert_state(&mut c, &key2, &filled, &format!("{label} loaded"));
        assert_membership(&mut c, &key2, &filled, &loaded_items, label);
        assert_membership(&mut c, &key2, &filled, &probes, label);
    }
    c.assert_ping();
}

/// Encodes `m` as an RDB module value of encoding version `encver` (`docs/format.md` ("RDB value")): options only from
/// version 2, growth only from version 4, per-layer bits and n2 only from version 1.
fn encode(m: &MChain, encver: u64) -> ModuleValue {
    let mut v = ModuleValue::new(encver);
    v.u(m.size).u(m.layers.len() as u64);
    if encver >= 2 {
        v.u(u64::from(m.options));
    }
    if encver >= 4 {
        v.u(u64::from(m.growth));
    }
    for l in &m.layers {
        v.u(l.entries).d(l.error).u(u64::from(l.hashes)).d(l.bpe);
        if encver >= 1 {
            v.u(l.bits).u(u64::from(l.n2));
        }
        v.s(&l.data).u(l.size);
    }
    v.eof();
    v
}

/// An encoding-version-0 layer: no stored bits/n2, the loader takes bits = trunc(entries ×
/// bpe) and n2 = 0, and the string length must make bits = bytes × 8; so pick the smallest
/// capacity ≥ `min` for which trunc(capacity × bpe) is a whole number of 64-bit words.
fn v0_layer(min: u64, error: f64) -> MLayer {
    let bpe = (error.ln() / fxutil::LN2_SQUARED).abs();
    let entries = (min..min + 100_000)
        .find(|&e| ((e as f64 * bpe) as u64) % 64 == 0)
        .expect("a capacity with whole words");
    let bits = (entries as f64 * bpe) as u64;
    MLayer {
        entries,
        error,
        bpe,
        hashes: (fxutil::LN2 * bpe).ceil() as u32,
        bits,
        bytes: bits / 8,
        n2: 0,
        size: 0,
        data: vec![0; (bits / 8) as usize],
    }
}

/// Fills the model's newest layers with `n` items, never letting it grow or fill up.
fn fill(m: &mut MChain, prefix: &str, n: usize) -> Vec<Vec<u8>> {
    let mut added = Vec::new();
    let mut i = 0;
    while added.len() < n {
        let it = format!("{prefix}{i}").into_bytes();
        i += 1;
        let last = m.layers.last().unwrap();
        assert!(last.size < last.entries, "fill would grow the chain");
        if m.add(&it) == MAdd::Added {
            added.push(it);
        }
    }
    added
}

#[test]
fn restore_hand_built_payloads_encver_0_to_4() {
    check_hash_functions();
    assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    let server = DirServer::start(DirServer::tempdir(), &["--rdbcompression", "no"]);
    let mut c = server.conn();
    let version = server_rdb_version(&mut c); // also checks crc64 on a real payload
                                              // The spec's DUMP example (GV3, `docs/format.md` ("RDB value")) with our encoder and CRC: identical bytes.
    let mut gv3 = ModuleValue::new(4);
    gv3.u(3).u(1).u(13).u(2).u(10).d(0.05).u(5);
    gv3.d(f64::from_le_bytes(
        unhex("4af7d49edef01840").try_into().unwrap(),
    ))
    .u(64)
    .u(0)
    .s(&unhex("08a02a0018111900"))
    .u(3)
    .eof();
    assert_eq!(
        hex(&dump_payload(&gv3.bytes, [0x0a, 0x00])),
        "07813016e5a289bef80402030201020d0202020a049a9999999999a93f0205044af7d49edef018400240400200\
         050808a02a00181119000203000a00da3496df8cdb5afc"
    );

    // Each case: (encver, chain as the module must see it after loading).
    let mut cases: Vec<(u64, MChain, Vec<Vec<u8>>)> = Vec::new();
    // encver 0: no options (legacy 32-bit, power-of-two growth), growth 2, no bits/n2.
    let mut m = chain(0, 2, v0_layer(50, 0.01));
    let added = fill(&mut m, "v0:", 40);
    cases.push((0, m, added));
    // encver 1: options 0 implied; two power-of-two layers with stored bits/n2.
    let mut m = chain(0, 2, MLayer::sized(30, 0.02, 0));
    let n = m.layers[0].entries as usize;
    let mut added = fill(&mut m, "v1:", n);
    let next = MLayer::sized(m.layers[0].entries * 2, 0.01, 0);
    m.layers.push(next);
    added.extend(fill(&mut m, "v1b:", 20));
    cases.push((1, m, added));
    // encver 2: options stored (NOROUND, 32-bit), growth not (2).
    let mut m = chain(NOROUND, 2, MLayer::sized(60, 0.01, NOROUND));
    let added = fill(&mut m, "v2:", 45);
    cases.push((2, m, added));
    // encver 3: same layout as 2; a modern non-scaling filter (options 13).
    let mut m = chain(13, 2, MLayer::sized(25, 0.01, 13));
    let added = fill(&mut m, "v3:", 20);
    cases.push((3, m, added));
    // encver 4: growth stored; FORCE64 without NOROUND (64-bit hash, power-of-two layers).
    let mut m = chain(FORCE64, 3, MLayer::sized(20, 0.05, FORCE64));
    let n = m.layers[0].entries as usize;
    let mut added = fill(&mut m, "v4:", n);
    let next = MLayer::sized(m.layers[0].entries * 3, 0.025, FORCE64);
    m.layers.push(next);
    added.extend(fill(&mut m, "v4b:", 30));
    cases.push((4, m, added));

    for (encver, mut m, added) in cases {
        let what = format!("encver {encver}");
        let key = format!("restored:v{encver}").into_bytes();
        let body = encode(&m, encver);
        let payload = dump_payload(&body.bytes, version);
        let r = c.cmd(&[&b"RESTORE"[..], &key, b"0", &payload]);
        assert_eq!(show(&r.raw), "+OK\r\n", "{what}: RESTORE {}", hex(&payload));
        assert_eq!(c.cmd(&[&b"TYPE"[..], &key]).raw, b"+MBbloom--\r\n");
        assert_state(&mut c, &key, &m, &what);
        assert_membership(&mut c, &key, &m, &added, &what);
        let probes = items(&format!("{what} probe "), 0..3000);
        assert_membership(&mut c, &key, &m, &probes, &what);

        // Adds after loading use the loaded hash width and sizing (growth included).
        let more = items(&format!("{what} more "), 0..200);
        let mut cmd = args([b"BF.MADD", &key]);
        cmd.extend(more.iter().cloned());
        let r = c.cmd(&cmd);
        assert_eq!(
            show(&r.raw),
            show(&madd_reply(&mut m, &more)),
            "{what}: MADD"
        );
        assert_state(&mut c, &key, &m, &format!("{what} after adds"));

        // Saved again in the version-4 layout, byte for byte (rdbcompression no).
        let d = c.cmd(&[&b"DUMP"[..], &key]);
        let want = dump_payload(&m.rdb_v4().bytes, version);
        assert_eq!(hex(d.val.bulk()), hex(&want), "{what}: DUMP after adds");
        let key2 = [key.as_slice(), b":again"].concat();
        let r = c.cmd(&[&b"RESTORE"[..], &key2, b"0", d.val.bulk()]);
        assert_eq!(r.raw, b"+OK\r\n");
        assert_state(&mut c, &key2, &m, &format!("{what} re-restored"));
    }

    // Encoding versions above 4 are refused and create nothing.
    let mut m = chain(5, 2, MLayer::sized(10, 0.01, 5));
    fill(&mut m, "v5:", 3);
    let v4 = encode(&m, 4);
    for encver in [5u64, 6, 63, 1023] {
        let mut body = v4.bytes.clone();
        body[2..10].copy_from_slice(&fxutil::module_id(encver).to_be_bytes());
        let key = format!("refused:v{encver}").into_bytes();
        let r = c.cmd(&[&b"RESTORE"[..], &key, b"0", &dump_payload(&body, version)]);
        assert_eq!(show(&r.raw), "-ERR Bad data format\r\n", "encver {encver}");
        assert_eq!(c.exists(&key), 0);
    }
    // The same body with encver 4 is fine (the refusal is about the version only).
    let payload = dump_payload(&v4.bytes, version);
    let r = c.cmd(&args([b"RESTORE", b"accepted:v4", b"0", &payload]));
    assert_eq!(r.raw, b"+OK\r\n");
    assert_state(&mut c, b"accepted:v4", &m, "encver 4 control");
    c.assert_ping();
}
