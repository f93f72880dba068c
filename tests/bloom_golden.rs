//! Golden vectors (`tests/data/golden-vectors.json`, captured from RedisBloom v2.8.20 on Redis
//! 7.0.15): the pure core must rebuild every recorded filter bit for bit (header, every SCANDUMP
//! chunk, hashes, bit positions, BF.DEBUG lines, BF.INFO Size, the RDB value inside the DUMP
//! payload), and the module must answer the same over the wire.

mod common;

use std::collections::BTreeMap;

use common::crc64;
use redis_bf::bloom::chain::{AddOutcome, Chain};
use redis_bf::bloom::dump::{apply_chunk, chunk_at, decode_header, encode_header};
use redis_bf::bloom::hash::HashPair;
use redis_bf::bloom::rdb::{load, save, Value as RdbValue, Values};
use redis_bf::module::bloom::commands::info::{debug_lines, format_g};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

const GOLDEN: &str = include_str!("data/golden-vectors.json");
const VECTORS: [&str; 4] = ["gv1", "gv2", "gv3", "gv4"];
/// Module type id of `MBbloom--` encoding version 4, as written in RDB / DUMP payloads.
const MODULE_ID: u64 = 0x3016_e5a2_89be_f804;

fn golden() -> Json {
    serde_json::from_str(GOLDEN).expect("golden-vectors.json parses")
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// Splits a recorded command line into arguments: whitespace separated, `"…"` quotes an
/// argument (so `""` is the empty argument).
fn tokenize(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut arg = String::new();
        if c == '"' {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                arg.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                arg.push(c);
                chars.next();
            }
        }
        out.push(arg.into_bytes());
    }
    out
}

fn s(arg: &[u8]) -> &str {
    std::str::from_utf8(arg).expect("utf-8 argument")
}

/// Replays the recorded commands of one vector with the core; returns the chain and the RESP2
/// reply bytes the module must have sent.
fn replay(commands: &[String]) -> (Chain, Vec<String>) {
    let mut chain: Option<Chain> = None;
    let mut replies = Vec::new();
    let int = |o: AddOutcome| match o {
        AddOutcome::Added => ":1\r\n".to_string(),
        AddOutcome::Exists => ":0\r\n".to_string(),
    };
    for line in commands {
        let args = tokenize(line);
        let name = s(&args[0]).to_ascii_uppercase();
        match name.as_str() {
            "BF.RESERVE" => {
                assert!(chain.is_none(), "RESERVE on an existing filter in {line}");
                let error: f64 = s(&args[2]).parse().unwrap();
                let capacity: u64 = s(&args[3]).parse().unwrap();
                let mut expansion = 2u32;
                let mut nonscaling = false;
                let mut i = 4;
                while i < args.len() {
                    match s(&args[i]).to_ascii_uppercase().as_str() {
                        "EXPANSION" => {
                            expansion = s(&args[i + 1]).parse().unwrap();
                            i += 2;
                        }
                        "NONSCALING" => {
                            nonscaling = true;
                            i += 1;
                        }
                        other => panic!("unexpected RESERVE argument {other}"),
                    }
                }
                chain = Some(Chain::new(capacity, error, expansion, nonscaling, u64::MAX).unwrap());
                replies.push("+OK\r\n".to_string());
            }
            "BF.ADD" => {
                let c =
                    chain.get_or_insert_with(|| Chain::new(100, 0.01, 2, false, u64::MAX).unwrap());
                replies.push(int(c.add(&args[2], u64::MAX).unwrap()));
            }
            "BF.MADD" => {
                let c =
                    chain.get_or_insert_with(|| Chain::new(100, 0.01, 2, false, u64::MAX).unwrap());
                let mut r = format!("*{}\r\n", args.len() - 2);
                for item in &args[2..] {
                    r.push_str(&int(c.add(item, u64::MAX).unwrap()));
                }
                replies.push(r);
            }
            other => panic!("unexpected command {other}"),
        }
    }
    (chain.expect("a filter was created"), replies)
}

/// Every SCANDUMP reply of a full walk of `chain` as (request iter, reply iter, data).
fn core_walk(chain: &Chain) -> Vec<(i64, i64, Vec<u8>)> {
    let mut out = vec![(0, 1, encode_header(chain))];
    let mut it = 1;
    loop {
        let (next, data) = chunk_at(chain, it);
        out.push((it, next, data.to_vec()));
        if next == 0 {
            return out;
        }
        assert!(out.len() < 100_000, "endless walk");
        it = next;
    }
}

/// Checks one recorded SCANDUMP chunk (hex / sha256 / nonzero_bytes, whatever the JSON has).
fn check_chunk(label: &str, expected: &Json, got: &[u8]) {
    assert_eq!(
        got.len() as u64,
        expected["len"].as_u64().unwrap(),
        "{label}: length"
    );
    assert_eq!(
        sha256_hex(got),
        expected["sha256"].as_str().unwrap(),
        "{label}: sha256"
    );
    if let Some(h) = expected["hex"].as_str() {
        assert_eq!(hex(got), h, "{label}: bytes");
    }
    if let Some(nz) = expected["nonzero_bytes"].as_object() {
        let want: BTreeMap<usize, u8> = nz
            .iter()
            .map(|(k, v)| {
                (
                    k.parse::<usize>().unwrap(),
                    u8::from_str_radix(v.as_str().unwrap(), 16).unwrap(),
                )
            })
            .collect();
        let have: BTreeMap<usize, u8> = got
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .map(|(i, b)| (i, *b))
            .collect();
        assert_eq!(have, want, "{label}: nonzero bytes");
    }
}

/// The chunk bytes a recorded SCANDUMP entry stands for (rebuilt from hex or nonzero_bytes).
fn recorded_chunk(entry: &Json) -> Vec<u8> {
    if let Some(h) = entry["hex"].as_str() {
        return unhex(h);
    }
    let mut v = vec![0u8; entry["len"].as_u64().unwrap() as usize];
    for (k, b) in entry["nonzero_bytes"].as_object().unwrap() {
        v[k.parse::<usize>().unwrap()] = u8::from_str_radix(b.as_str().unwrap(), 16).unwrap();
    }
    assert_eq!(sha256_hex(&v), entry["sha256"].as_str().unwrap());
    v
}

// ------------------------------------------------------------------------------------------
// DUMP payload decoding (RDB_TYPE_MODULE_2 value + footer), CRC64 (Jones, as Redis).

fn lzf_decompress(input: &[u8], out_len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            out.extend_from_slice(&input[ip..ip + ctrl + 1]);
            ip += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += input[ip] as usize;
                ip += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + input[ip] as usize + 1;
            ip += 1;
            let start = out.len() - back;
            for i in 0..len + 2 {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    assert_eq!(out.len(), out_len, "LZF output length");
    out
}

struct Rdb<'a> {
    data: &'a [u8],
    pos: usize,
}

enum Len {
    Plain(u64),
    Encoded(u8),
}

impl Rdb<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data[self.pos];
        self.pos += 1;
        b
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    fn len_or_enc(&mut self) -> Len {
        let b = self.byte();
        match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte())),
            2 if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(
                self.bytes(4).try_into().unwrap(),
            ))),
            2 if b == 0x81 => Len::Plain(u64::from_be_bytes(self.bytes(8).try_into().unwrap())),
            3 => Len::Encoded(b & 0x3f),
            _ => panic!("bad RDB length byte {b:#x}"),
        }
    }
    fn len(&mut self) -> u64 {
        match self.len_or_enc() {
            Len::Plain(n) => n,
            Len::Encoded(e) => panic!("unexpected encoded length {e}"),
        }
    }
    fn string(&mut self) -> Vec<u8> {
        match self.len_or_enc() {
            Len::Plain(n) => self.bytes(n as usize).to_vec(),
            Len::Encoded(0) => (self.byte() as i8).to_string().into_bytes(),
            Len::Encoded(1) => i16::from_le_bytes(self.bytes(2).try_into().unwrap())
                .to_string()
                .into_bytes(),
            Len::Encoded(2) => i32::from_le_bytes(self.bytes(4).try_into().unwrap())
                .to_string()
                .into_bytes(),
            Len::Encoded(3) => {
                let clen = self.len() as usize;
                let ulen = self.len() as usize;
                let c = self.bytes(clen).to_vec();
                lzf_decompress(&c, ulen)
            }
            Len::Encoded(e) => panic!("bad string encoding {e}"),
        }
    }
}

/// A decoded DUMP payload of a module value.
struct Payload {
    module_id: u64,
    values: Values,
    /// Offset of the 2-byte RDB version (= length of the module part).
    footer_at: usize,
    rdb_version: u16,
}

fn decode_payload(p: &[u8]) -> Payload {
    assert!(p.len() > 10, "payload too short");
    let body = &p[..p.len() - 8];
    let crc = u64::from_le_bytes(p[p.len() - 8..].try_into().unwrap());
    assert_eq!(crc64(body), crc, "payload CRC64");
    let mut r = Rdb { data: p, pos: 0 };
    assert_eq!(r.byte(), 7, "RDB_TYPE_MODULE_2");
    let module_id = r.len();
    let mut values = Values::default();
    loop {
        match r.len() {
            0 => break,
            2 => values.values.push(RdbValue::Unsigned(r.len())),
            4 => values.values.push(RdbValue::Double(f64::from_le_bytes(
                r.bytes(8).try_into().unwrap(),
            ))),
            5 => values.values.push(RdbValue::Bytes(r.string())),
            op => panic!("unexpected module opcode {op}"),
        }
    }
    let footer_at = r.pos;
    assert_eq!(
        footer_at,
        p.len() - 10,
        "module value must end right before the footer"
    );
    let rdb_version = u16::from_le_bytes(r.bytes(2).try_into().unwrap());
    Payload {
        module_id,
        values,
        footer_at,
        rdb_version,
    }
}

// ------------------------------------------------------------------------------------------
// Pure core checks.

fn check_vector_core(name: &str) {
    let g = golden();
    let gv = &g[name];
    let commands: Vec<String> = common::json_strs(&gv["commands"]);
    let (chain, replies) = replay(&commands);

    // Replies of the recorded commands.
    let want_replies = common::json_strs(&gv["replies"]);
    assert_eq!(replies, want_replies, "{name}: replies");

    // Hash pairs.
    for (item, pair) in gv["hash64"].as_object().unwrap() {
        let h = HashPair::hash64(item.as_bytes());
        assert_eq!(
            (format!("{:016x}", h.a), format!("{:016x}", h.b)),
            (
                pair[0].as_str().unwrap().to_string(),
                pair[1].as_str().unwrap().to_string()
            ),
            "{name}: hash64 of {item:?}"
        );
        assert_eq!(
            chain.hash(item.as_bytes()),
            h,
            "{name}: chain hash of {item:?}"
        );
        assert!(chain.contains(item.as_bytes()), "{name}: {item:?} present");
    }

    // Header bytes, and the header decodes back to the same shape.
    let header = encode_header(&chain);
    assert_eq!(
        hex(&header),
        gv["header_hex"].as_str().unwrap(),
        "{name}: header"
    );
    let decoded = decode_header(&header, u64::MAX).expect("header decodes");
    assert_eq!(decoded.size, chain.size);
    assert_eq!(decoded.options, chain.options);
    assert_eq!(decoded.growth, chain.growth);
    assert_eq!(decoded.layers.len(), chain.layers.len());
    for (d, l) in decoded.layers.iter().zip(&chain.layers) {
        assert_eq!(d.params(), l.params(), "{name}: decoded layer params");
        assert_eq!(d.size, l.size, "{name}: decoded layer size");
        assert!(d.data.iter().all(|b| *b == 0));
    }

    // Every SCANDUMP step, byte for byte.
    let walk = core_walk(&chain);
    let recorded = gv["scandump"].as_array().unwrap();
    assert_eq!(
        walk.len(),
        recorded.len(),
        "{name}: number of SCANDUMP steps"
    );
    for (i, (step, rec)) in walk.iter().zip(recorded).enumerate() {
        let label = format!("{name} scandump step {i}");
        assert_eq!(
            step.0,
            rec["request_iter"].as_i64().unwrap(),
            "{label}: request iter"
        );
        assert_eq!(
            step.1,
            rec["reply_iter"].as_i64().unwrap(),
            "{label}: reply iter"
        );
        check_chunk(&label, rec, &step.2);
    }

    // LOADCHUNK of the recorded data rebuilds exactly the same chain.
    let mut restored = decode_header(&recorded_chunk(&recorded[0]), u64::MAX).unwrap();
    for rec in &recorded[1..] {
        let next = rec["reply_iter"].as_i64().unwrap();
        if next == 0 {
            break;
        }
        apply_chunk(&mut restored, next, &recorded_chunk(rec)).unwrap();
    }
    assert_eq!(
        restored, chain,
        "{name}: chain rebuilt from the recorded dump"
    );

    // BF.DEBUG lines, BF.INFO Size and the per-layer parameters.
    let want_debug = common::json_strs(&gv["debug"]);
    assert_eq!(debug_lines(&chain), want_debug, "{name}: BF.DEBUG");
    assert_eq!(
        chain.mem_usage(),
        gv["info_size"].as_u64().unwrap(),
        "{name}: info_size"
    );
    let links = gv["links"].as_array().unwrap();
    assert_eq!(chain.layers.len(), links.len(), "{name}: layer count");
    for (l, want) in chain.layers.iter().zip(links) {
        assert_eq!(l.params().entries, want["entries"].as_u64().unwrap());
        assert_eq!(l.params().error, want["error"].as_f64().unwrap());
        assert_eq!(l.params().bpe, want["bpe"].as_f64().unwrap());
        assert_eq!(
            u64::from(l.params().hashes),
            want["hashes"].as_u64().unwrap()
        );
        assert_eq!(l.params().bits, want["bits"].as_u64().unwrap());
        assert_eq!(l.params().bytes, want["bytes"].as_u64().unwrap());
        assert_eq!(l.data.len() as u64, want["bytes"].as_u64().unwrap());
        assert_eq!(l.size, want["size"].as_u64().unwrap());
    }

    // Bit positions of `hello` (GV1).
    if let Some(bits) = gv.get("hello_bit_positions").and_then(|b| b.as_array()) {
        let want: Vec<u64> = bits.iter().map(|b| b.as_u64().unwrap()).collect();
        let l = &chain.layers[0];
        let h = HashPair::hash64(b"hello");
        let got: Vec<u64> = (0..u64::from(l.params().hashes))
            .map(|i| h.position(i, l.params().modulus()))
            .collect();
        assert_eq!(got, want, "{name}: bit positions of hello");
        for x in got {
            assert_ne!(l.data[(x / 8) as usize] & (1 << (x % 8)), 0, "bit {x} set");
        }
    }

    // The RDB value inside the recorded DUMP payload is exactly what `save` writes, and `load`
    // reads it back to the same chain.
    let payload = unhex(gv["dump_payload_hex"].as_str().unwrap());
    let p = decode_payload(&payload);
    assert_eq!(p.module_id, MODULE_ID, "{name}: module type id");
    assert_eq!(p.module_id & 1023, 4, "{name}: encoding version");
    assert_eq!(p.rdb_version, 10, "{name}: recorded on Redis 7.0 (RDB 10)");
    let mut saved = Values::default();
    save(&chain, &mut saved);
    assert_eq!(p.values, saved, "{name}: RDB values");
    let mut values = p.values;
    assert_eq!(load(&mut values, 4).unwrap(), chain, "{name}: RDB load");
}

#[test]
fn crc64_and_lzf_helpers() {
    // Redis' crc64 check value (src/crc64.c).
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    // Literal run then a back reference of 7+2 bytes at distance 1: "a" + 9 × "a"... .
    assert_eq!(
        lzf_decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 10),
        b"aaaaaaaaaa"
    );
    assert_eq!(format_g(0.005), "0.005");
    assert_eq!(format_g(6.25e-05), "6.25e-05");
    assert_eq!(format_g(0.0005), "0.0005");
    assert_eq!(format_g(0.000625), "0.000625");
    assert_eq!(format_g(0.05), "0.05");
    assert_eq!(format_g(1.0 / 3.0), "0.333333");
    assert_eq!(format_g(1234567.0), "1.23457e+06");
}

#[test]
fn tokenizer() {
    assert_eq!(
        tokenize("BF.ADD gv4 \"\""),
        vec![b"BF.ADD".to_vec(), b"gv4".to_vec(), b"".to_vec()]
    );
    assert_eq!(tokenize("  a  b "), vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn golden_meta() {
    let g = golden();
    assert_eq!(g["_meta"]["all_match_model"], Json::Bool(true));
    for name in VECTORS {
        assert_eq!(g[name]["model_matches_server"], Json::Bool(true), "{name}");
    }
}

#[test]
fn gv1_core() {
    check_vector_core("gv1");
}

#[test]
fn gv2_core() {
    check_vector_core("gv2");
}

#[test]
fn gv3_core() {
    check_vector_core("gv3");
}

#[test]
fn gv4_core() {
    check_vector_core("gv4");
}

// ------------------------------------------------------------------------------------------
// The same over the wire.

fn q(con: &mut redis::Connection, args: &[&[u8]]) -> redis::Value {
    let mut c = redis::cmd(s(args[0]));
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query::<redis::Value>(con)
        .unwrap_or_else(|e| panic!("{:?} failed: {e}", String::from_utf8_lossy(args[0])))
}

/// Re-encodes a RESP2 reply exactly as it came on the wire (the client keeps the RESP2 type of
/// every element: `+OK`, other simple strings, integers, bulk strings, nil, arrays).
fn resp2(v: &redis::Value) -> Vec<u8> {
    match v {
        redis::Value::Okay => b"+OK\r\n".to_vec(),
        redis::Value::SimpleString(t) => format!("+{t}\r\n").into_bytes(),
        redis::Value::Int(i) => format!(":{i}\r\n").into_bytes(),
        redis::Value::Nil => b"$-1\r\n".to_vec(),
        redis::Value::BulkString(b) => {
            let mut out = format!("${}\r\n", b.len()).into_bytes();
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
            out
        }
        redis::Value::Array(items) => {
            let mut out = format!("*{}\r\n", items.len()).into_bytes();
            for i in items {
                out.extend(resp2(i));
            }
            out
        }
        other => panic!("not a RESP2 reply: {other:?}"),
    }
}

fn scandump(con: &mut redis::Connection, key: &[u8], iter: i64) -> (i64, Vec<u8>) {
    common::cmd("BF.SCANDUMP")
        .arg(key)
        .arg(iter)
        .query::<(i64, Vec<u8>)>(con)
        .expect("BF.SCANDUMP")
}

#[test]
fn golden_vectors_over_the_wire() {
    let server = common::Server::start();
    let mut con = server.conn();
    let g = golden();
    for name in VECTORS {
        let gv = &g[name];
        let key = name.as_bytes();

        // Recorded commands, replies byte for byte.
        for (cmd, want) in gv["commands"]
            .as_array()
            .unwrap()
            .iter()
            .zip(gv["replies"].as_array().unwrap())
        {
            let args = tokenize(cmd.as_str().unwrap());
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let got = resp2(&q(&mut con, &refs));
            assert_eq!(
                String::from_utf8_lossy(&got),
                want.as_str().unwrap(),
                "{name}: reply to {}",
                cmd.as_str().unwrap()
            );
        }

        // SCANDUMP steps as recorded.
        let check_scandump = |con: &mut redis::Connection, key: &[u8], what: &str| {
            for (i, rec) in gv["scandump"].as_array().unwrap().iter().enumerate() {
                let (next, data) = scandump(con, key, rec["request_iter"].as_i64().unwrap());
                let label = format!("{name} {what} scandump step {i}");
                assert_eq!(
                    next,
                    rec["reply_iter"].as_i64().unwrap(),
                    "{label}: next iter"
                );
                check_chunk(&label, rec, &data);
            }
        };
        check_scandump(&mut con, key, "server");

        // BF.DEBUG, BF.INFO SIZE, BF.CARD.
        let debug: Vec<String> = common::cmd("BF.DEBUG").arg(key).query(&mut con).unwrap();
        let want_debug: Vec<String> = common::json_strs(&gv["debug"]);
        assert_eq!(debug, want_debug, "{name}: BF.DEBUG");
        let size: Vec<u64> = common::cmd("BF.INFO")
            .arg(key)
            .arg("SIZE")
            .query(&mut con)
            .unwrap();
        assert_eq!(
            size,
            vec![gv["info_size"].as_u64().unwrap()],
            "{name}: BF.INFO SIZE"
        );
        let links = gv["links"].as_array().unwrap();
        let items: u64 = links.iter().map(|l| l["size"].as_u64().unwrap()).sum();
        let card: u64 = common::cmd("BF.CARD").arg(key).query(&mut con).unwrap();
        assert_eq!(card, items, "{name}: BF.CARD");

        // DUMP payload: the module part always, the whole payload when the RDB version matches.
        let want = unhex(gv["dump_payload_hex"].as_str().unwrap());
        let got: Vec<u8> = common::cmd("DUMP").arg(key).query(&mut con).unwrap();
        assert!(got.len() > 10, "{name}: DUMP payload too short");
        let p = decode_payload(&got);
        assert_eq!(p.module_id, MODULE_ID, "{name}: module id in DUMP");
        assert_eq!(
            hex(&got[..got.len() - 10]),
            hex(&want[..want.len() - 10]),
            "{name}: DUMP payload (module part)"
        );
        assert_eq!(p.footer_at, got.len() - 10);
        if got[got.len() - 10..got.len() - 8] == want[want.len() - 10..want.len() - 8] {
            assert_eq!(hex(&got), hex(&want), "{name}: full DUMP payload");
        } else {
            println!(
                "{name}: server RDB version {} differs from the recorded 10; compared the module part only",
                p.rdb_version
            );
        }

        // RedisBloom's own payload restores into an identical filter.
        let restored = format!("restored-{name}");
        let _: () = common::cmd("RESTORE")
            .arg(&restored)
            .arg(0)
            .arg(&want)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{name}: RESTORE of the recorded payload: {e}"));
        check_scandump(&mut con, restored.as_bytes(), "restored");
        let info_a = q(&mut con, &[b"BF.INFO", key]);
        let info_b = q(&mut con, &[b"BF.INFO", restored.as_bytes()]);
        assert_eq!(info_a, info_b, "{name}: BF.INFO of the restored copy");
        for item in gv["hash64"].as_object().unwrap().keys() {
            let e: i64 = common::cmd("BF.EXISTS")
                .arg(&restored)
                .arg(item.as_bytes())
                .query(&mut con)
                .unwrap();
            assert_eq!(e, 1, "{name}: {item:?} in the restored copy");
        }
    }
}
