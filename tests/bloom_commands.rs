//! Every BF.* command's replies and errors, byte-exact on the wire, in RESP2 and RESP3.
//!
//! Expected values come from `docs/commands.md` (commands, error texts, the RedisBloom quirks
//! kept and the differences: allocation failures are errors, argument handling),
//! `docs/format.md` ("SCANDUMP") and `tests/data/golden-vectors.json`. Layer sizes, `BF.INFO Size`
//! and `BF.DEBUG` lines follow the sizing formulas of `docs/format.md` ("Layer sizing", "The chain", "Memory accounting"); the per-item results were
//! computed with an independent model of the hash (`docs/format.md` ("Hashing")) checked against the golden vectors.
//!
//! Each test collects every mismatch and reports them all at the end (see [`Ck`]), so one run
//! lists every wrong reply instead of stopping at the first.

mod common;

use common::{complete_len, raw_command, show_args, Args, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

// ------------------------------------------------------------------------------------------
// Expected-reply builders (RESP wire text)
// ------------------------------------------------------------------------------------------

use common::errors_by_line::{self as by_line, redis8};
use common::wire::{EMPTY_FINAL, F, FULL, NIL2, NIL3, NOT_FOUND, OK, T, WRONGTYPE};

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn err(text: &str) -> String {
    format!("-{text}\r\n")
}

fn arity(cmd: &str) -> String {
    err(&format!(
        "ERR wrong number of arguments for '{cmd}' command"
    ))
}

fn arr(items: &[&str]) -> String {
    let mut out = format!("*{}\r\n", items.len());
    for i in items {
        out.push_str(i);
    }
    out
}

fn ints(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|n| int(*n)).collect();
    let refs: Vec<&str> = items.iter().map(|s| s.as_str()).collect();
    arr(&refs)
}

fn bools(v: &[bool]) -> String {
    let items: Vec<&str> = v.iter().map(|b| if *b { T } else { F }).collect();
    arr(&items)
}

/// `<command> <key> <items…>` as one command's arguments.
fn with_items<'a>(command: &'a str, key: &'a str, items: &'a [impl AsRef<str>]) -> Vec<&'a str> {
    let mut args = vec![command, key];
    args.extend(items.iter().map(AsRef::as_ref));
    args
}

/// `n` items named `<prefix>0` … `<prefix><n-1>`.
fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Array of bulk strings (BF.DEBUG).
fn bulks(v: &[&str]) -> String {
    let items: Vec<String> = v.iter().map(|s| bulk(s)).collect();
    let refs: Vec<&str> = items.iter().map(|s| s.as_str()).collect();
    arr(&refs)
}

const INFO_NAMES: [&str; 5] = [
    "Capacity",
    "Size",
    "Number of filters",
    "Number of items inserted",
    "Expansion rate",
];

/// Full BF.INFO reply: RESP2 flat array of 5 (simple string, int) pairs; RESP3 map.
fn info(resp3: bool, cap: i64, size: i64, filters: i64, items: i64, exp: Option<i64>) -> String {
    let vals = [
        int(cap),
        int(size),
        int(filters),
        int(items),
        match exp {
            Some(e) => int(e),
            None => (if resp3 { NIL3 } else { NIL2 }).to_string(),
        },
    ];
    let mut out = if resp3 {
        "%5\r\n".to_string()
    } else {
        "*10\r\n".to_string()
    };
    for (n, v) in INFO_NAMES.iter().zip(vals.iter()) {
        out.push_str(&format!("+{n}\r\n{v}"));
    }
    out
}

/// Single-field BF.INFO reply: RESP2 array of one, RESP3 one-entry map keyed by the long name.
fn info1(resp3: bool, name: &str, val: Option<i64>) -> String {
    let v = match val {
        Some(n) => int(n),
        None => (if resp3 { NIL3 } else { NIL2 }).to_string(),
    };
    if resp3 {
        format!("%1\r\n+{name}\r\n{v}")
    } else {
        format!("*1\r\n{v}")
    }
}

/// `[iter, data]` SCANDUMP reply as bytes.
fn dump_reply(iter: i64, data: &[u8]) -> Vec<u8> {
    let mut out = format!("*2\r\n:{iter}\r\n${}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0);
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn show(b: &[u8]) -> String {
    let s = b.escape_ascii().to_string();
    if s.len() > 600 {
        format!("{}…({} bytes)", &s[..600], b.len())
    } else {
        s
    }
}

// ------------------------------------------------------------------------------------------
// Checker: byte-exact comparisons that collect every failure
// ------------------------------------------------------------------------------------------

/// Sends commands with [`raw_command`] (a fresh connection each, RESP3 via HELLO 3) and
/// compares the raw reply bytes. Mismatches are collected; dropping the checker panics with
/// the full list.
struct Ck {
    port: u16,
    fails: Vec<String>,
}

impl Ck {
    /// A fresh server (default settings) and a checker on it.
    fn start() -> (Server, Ck) {
        let s = Server::start();
        let c = Ck::new(&s);
        (s, c)
    }

    fn new(s: &Server) -> Ck {
        Ck {
            port: s.port,
            fails: Vec::new(),
        }
    }

    fn raw(&self, resp3: bool, args: &[&[u8]]) -> Vec<u8> {
        raw_command(self.port, resp3, args)
    }

    /// The raw reply to a command (see [`Args`] for the forms a command may take).
    fn q(&self, resp3: bool, cmd: impl Args) -> Vec<u8> {
        let args = cmd.to_args();
        let v: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        self.raw(resp3, &v)
    }

    fn check_bytes(&mut self, resp3: bool, cmd: impl Args, want: &[u8]) {
        let args = cmd.to_args();
        let got = self.q(resp3, &args);
        if got != want {
            self.fails.push(format!(
                "[{}] {}\n      expected: {}\n      got:      {}",
                if resp3 { "RESP3" } else { "RESP2" },
                show_args(&args),
                show(want),
                show(&got)
            ));
        }
    }

    fn check(&mut self, resp3: bool, cmd: impl Args, want: &str) {
        self.check_bytes(resp3, cmd, want.as_bytes());
    }

    /// RESP2 exact.
    fn is(&mut self, cmd: impl Args, want: &str) {
        self.check(false, cmd, want);
    }

    /// RESP3 exact.
    fn is3(&mut self, cmd: impl Args, want: &str) {
        self.check(true, cmd, want);
    }

    /// Same bytes expected in both protocols (use only for commands that change nothing).
    fn both(&mut self, cmd: impl Args, want: &str) {
        let args = cmd.to_args();
        self.check(false, &args, want);
        self.check(true, &args, want);
    }

    /// An error reply (any text), in RESP2.
    fn is_err(&mut self, cmd: impl Args) {
        let args = cmd.to_args();
        let got = self.q(false, &args);
        if !got.starts_with(b"-") {
            self.fails.push(format!(
                "[RESP2] {}\n      expected: an error reply\n      got:      {}",
                show_args(&args),
                show(&got)
            ));
        }
    }

    /// The last line of `BF.DEBUG key` (RESP2) ends with `tail`.
    fn check_debug_ends(&mut self, key: &str, tail: &str) {
        let dbg = self.q(false, ["BF.DEBUG", key]);
        if !dbg.ends_with(format!("{tail}\r\n").as_bytes()) {
            self.fail(format!(
                "BF.DEBUG {key}: expected its last line to end with {tail:?}, got {}",
                show(&dbg)
            ));
        }
    }

    /// The key does not exist (EXISTS = 0).
    fn absent(&mut self, key: &str) {
        self.is(["EXISTS", key], ":0\r\n");
    }

    fn fail(&mut self, msg: String) {
        self.fails.push(msg);
    }
}

impl Drop for Ck {
    fn drop(&mut self) {
        common::report_fails("", &self.fails);
    }
}

/// A persistent raw connection, for MULTI/EXEC where the commands must share a socket.
struct RawConn {
    s: TcpStream,
}

impl RawConn {
    fn new(port: u16, resp3: bool) -> RawConn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = RawConn { s };
        if resp3 {
            let hello = c.send(&[b"HELLO", b"3"]);
            assert!(hello.starts_with(b"%"), "HELLO 3 failed: {}", show(&hello));
        }
        c
    }

    fn send(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&out).unwrap();
        let mut buf = Vec::new();
        let mut tmp = [0u8; 65536];
        loop {
            if let Some(n) = complete_len(&buf, 0) {
                assert_eq!(n, buf.len(), "unexpected extra bytes after the reply");
                return buf;
            }
            let n = self.s.read(&mut tmp).expect("read reply");
            assert!(n > 0, "connection closed");
            buf.extend_from_slice(&tmp[..n]);
        }
    }

    fn sends(&mut self, args: &[&str]) -> Vec<u8> {
        let v: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&v)
    }
}

/// Splits a `[int, bulk]` SCANDUMP reply into (iter, data).
fn parse_dump(reply: &[u8]) -> Option<(i64, Vec<u8>)> {
    let rest = reply.strip_prefix(b"*2\r\n:")?;
    let e = rest.windows(2).position(|w| w == b"\r\n")?;
    let iter: i64 = std::str::from_utf8(&rest[..e]).ok()?.parse().ok()?;
    let rest = rest[e + 2..].strip_prefix(b"$")?;
    let e = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..e]).ok()?.parse().ok()?;
    let data = rest.get(e + 2..e + 2 + len)?.to_vec();
    (rest.get(e + 2 + len..)? == b"\r\n").then_some((iter, data))
}

/// Full SCANDUMP walk; returns every (iter, data) chunk before the final `[0, ""]`.
fn scandump_all(port: u16, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let r = raw_command(
            port,
            false,
            &[b"BF.SCANDUMP", key.as_bytes(), it.to_string().as_bytes()],
        );
        let (next, data) =
            parse_dump(&r).unwrap_or_else(|| panic!("bad SCANDUMP reply {}", show(&r)));
        if next == 0 {
            assert_eq!(r, EMPTY_FINAL.as_bytes(), "final SCANDUMP reply");
            return out;
        }
        out.push((next, data));
        it = next;
        assert!(out.len() < 10_000, "SCANDUMP never ends");
    }
}

// Golden vectors (`tests/data/golden-vectors.json`).
const GV1_HEADER: &str =
    "01000000000000000100000005000000020000006805000000000000402b0000000000000100000000000000\
7b14ae47e17a743fe9862fb2350e264008000000e80300000000000000";
const GV2_HEADER: &str = "0c000000000000000200000005000000030000000800000000000000400000000000000004000000000000009a999999\
9999a93f4af7d49edef01840050000000400000000000000001000000000000000800000000000000008000000000000\
009a9999999999993f0bd81f7830b61e40060000000c0000000000000000";
const GV2_L1: &str = "3045a08c50922120";
const GV2_L2: &str = "85098043064d0830709842d0c219a5ac";
const GV3_HEADER: &str =
    "0300000000000000010000000d000000020000000800000000000000400000000000000003000000\
000000009a9999999999a93f4af7d49edef01840050000000a0000000000000000";
const GV4_HEADER: &str = "01000000000000000100000005000000020000009000000000000000800400000000000001000000000000007b14ae47\
e17a743fe9862fb2350e264008000000640000000000000000";

fn gv1_chunk() -> Vec<u8> {
    let mut v = vec![0u8; 1384];
    for (i, b) in [
        (238, 0x02),
        (343, 0x20),
        (354, 0x20),
        (460, 0x02),
        (808, 0x20),
        (925, 0x02),
        (1273, 0x20),
        (1379, 0x02),
    ] {
        v[i] = b;
    }
    v
}

const ABC_L: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];

// ------------------------------------------------------------------------------------------
// BF.RESERVE
// ------------------------------------------------------------------------------------------

#[test]
fn reserve_replies_ok_and_creates_the_described_filter() {
    let (_s, mut c) = Ck::start();
    // Made from either protocol, each describes itself alike in both. The first layer of a
    // scaling filter has half the requested error rate; NONSCALING: error not halved,
    // expansion nil.
    let scaling = "bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:0 ratio:0.005";
    let nonscaling = "bytes:1200 bits:9600 hashes:7 hashwidth:64 capacity:1000 size:0 ratio:0.01";
    for (k, resp3, options, size, expansion, layer) in [
        ("r2", false, "", 1480, Some(2), scaling),
        ("r3", true, "", 1480, Some(2), scaling),
        ("ns", false, "NONSCALING", 1296, None, nonscaling),
    ] {
        c.check(resp3, format!("BF.RESERVE {k} 0.01 1000 {options}"), OK);
        c.is(["BF.INFO", k], &info(false, 1000, size, 1, 0, expansion));
        c.is3(["BF.INFO", k], &info(true, 1000, size, 1, 0, expansion));
        c.both(["BF.DEBUG", k], &bulks(&["size:0", layer]));
    }
    // EXPANSION n is stored.
    c.is("BF.RESERVE e4 0.01 1000 EXPANSION 4", OK);
    c.is("BF.INFO e4 EXPANSION", &info1(false, "", Some(4)));
    c.is3(
        "BF.INFO e4 EXPANSION",
        &info1(true, "Expansion rate", Some(4)),
    );
    // Case-insensitive keywords and command name.
    for (cmd, want) in [
        ("bf.reserve lc 0.01 100 expansion 3", OK),
        ("BF.INFO lc EXPANSION", info1(false, "", Some(3)).as_str()),
        ("Bf.Reserve lc2 0.01 100 NonScaling", OK),
        ("BF.INFO lc2 EXPANSION", info1(false, "", None).as_str()),
    ] {
        c.is(cmd, want);
    }
    // Double forms accepted by strtod: ".5", exponent, hex float (2^-7 -> first layer 2^-8).
    c.is("BF.RESERVE d1 .5 100", OK);
    c.is("BF.RESERVE d2 1e-3 100", OK);
    c.both(
        "BF.DEBUG d2",
        &bulks(&[
            "size:0",
            "bytes:200 bits:1600 hashes:11 hashwidth:64 capacity:100 size:0 ratio:0.0005",
        ]),
    );
    c.is("BF.RESERVE d3 0x1p-7 100", OK);
    c.is("BF.INFO d3 CAPACITY", &ints(&[100]));
    c.check_debug_ends("d3", " ratio:0.00390625");
}

#[test]
fn reserve_arity_errors() {
    let (_s, mut c) = Ck::start();
    let a = arity("bf.reserve");
    c.both("BF.RESERVE", &a);
    c.both("BF.RESERVE k", &a);
    c.both("BF.RESERVE k 0.01", &a);
    // The registered lower-case name whatever the case used by the client.
    c.both("bF.rEsErVe k 0.01", &a);
    // argc 8 > 7.
    c.both("BF.RESERVE k 0.01 100 EXPANSION 2 NONSCALING x", &a);
    c.absent("k");
}

#[test]
fn reserve_error_rate_validation() {
    let (_s, mut c) = Ck::start();
    let bad = err("ERR bad error rate");
    for e in [
        "abc", "", " 0.01", "0.01 ", "0.01x", "nan", "1e999", "1e-400", "1,5",
    ] {
        c.both(["BF.RESERVE", "k", e, "100"], &bad);
    }
    let range = by_line::RESERVE_ERROR_RANGE.wire();
    for e in ["0", "1", "2", "-0.01", "1.0", "inf", "-inf", "10.1"] {
        c.both(["BF.RESERVE", "k", e, "100"], &range);
    }
    // Error rate is checked before the capacity (parse and range).
    for (cmd, want) in [
        ("BF.RESERVE k abc abc", &bad),
        ("BF.RESERVE k 2 abc", &range),
        ("BF.RESERVE k 0 0", &range),
        ("BF.RESERVE k 10.1 1000 EXPANSION 4", &range),
    ] {
        c.both(cmd, want);
    }
    c.is("DBSIZE", ":0\r\n");
}

#[test]
fn reserve_capacity_validation() {
    let (_s, mut c) = Ck::start();
    let bad = err("ERR bad capacity");
    for cap in [
        "abc",
        "",
        "1.5",
        "0100",
        "+100",
        "1e3",
        " 100",
        "100 ",
        "9223372036854775808",
        "18446744073709551616",
    ] {
        c.both(["BF.RESERVE", "k", "0.01", cap], &bad);
    }
    let range = by_line::RESERVE_CAPACITY_RANGE.wire();
    for cap in ["0", "-1", "-9223372036854775808"] {
        c.both(["BF.RESERVE", "k", "0.01", cap], &range);
    }
    // Capacity is checked before EXPANSION / NONSCALING.
    c.both("BF.RESERVE k 0.01 abc EXPANSION 0", &bad);
    c.both("BF.RESERVE k 0.01 0 EXPANSION abc", &range);
    c.both("BF.RESERVE k 0.01 0 EXPANSION 2 NONSCALING", &range);
    c.is("DBSIZE", ":0\r\n");
}

#[test]
fn reserve_expansion_and_nonscaling_validation() {
    let (_s, mut c) = Ck::start();
    let no_exp = err("ERR no expansion");
    let bad_exp = err("ERR bad expansion");
    let exp_range = by_line::RESERVE_EXPANSION_RANGE.wire();
    let ns_exp = err("Nonscaling filters cannot expand"); // no ERR prefix
    c.both("BF.RESERVE k 0.01 100 EXPANSION", &no_exp);
    c.both("BF.RESERVE k 0.01 100 expansion", &no_exp);
    c.both("BF.RESERVE k 0.01 100 NONSCALING EXPANSION", &no_exp);
    for v in ["abc", "1.5", "0100", "+2", ""] {
        c.both(["BF.RESERVE", "k", "0.01", "100", "EXPANSION", v], &bad_exp);
    }
    for v in ["-2", "-1"] {
        c.both(
            ["BF.RESERVE", "k", "0.01", "100", "EXPANSION", v],
            &exp_range,
        );
    }
    if !redis8() {
        // RedisBloom 2.8 refuses EXPANSION 0 (RedisBloom 8's non-scaling filter: below).
        c.both("BF.RESERVE k 0.01 100 EXPANSION 0", &exp_range);
        c.both("BF.RESERVE k 0.01 100 NONSCALING EXPANSION 0", &ns_exp);
    }
    c.both("BF.RESERVE k 0.01 100 NONSCALING EXPANSION 2", &ns_exp);
    c.both("BF.RESERVE k 0.01 100 EXPANSION 2 NONSCALING", &ns_exp);
    c.both("BF.RESERVE k 0.01 100 expansion 3 nonscaling", &ns_exp);
    c.both("BF.RESERVE k 0.01 100 NONSCALING EXPANSION -1", &ns_exp);
    // 2.8 finds the NONSCALING conflict before it parses the value; 8 parses it first.
    c.both(
        "BF.RESERVE k 0.01 100 EXPANSION abc NONSCALING",
        if redis8() { &bad_exp } else { &ns_exp },
    );
    c.is("DBSIZE", ":0\r\n");
    if redis8() {
        // RedisBloom 8: EXPANSION 0 is a non-scaling filter whose header stores growth 0.
        for (key, options) in [
            ("z0", "EXPANSION 0"),
            ("z1", "NONSCALING EXPANSION 0"),
            ("z2", "EXPANSION 0 NONSCALING"),
        ] {
            c.is(format!("BF.RESERVE {key} 0.01 100 {options}"), OK);
            c.is(format!("BF.INFO {key} EXPANSION"), &info1(false, "", None));
            c.is(
                format!("BF.DEBUG {key}"),
                &bulks(&[
                    "size:0",
                    "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:0 ratio:0.01",
                ]),
            );
            // The header follows "*2\r\n:1\r\n$73\r\n" (13 bytes); options at 12, growth at 16.
            let raw = c.q(false, format!("BF.SCANDUMP {key} 0"));
            let header = &raw[13..13 + 73];
            assert_eq!(
                &header[12..20],
                &[13, 0, 0, 0, 0, 0, 0, 0],
                "{key}: options, growth"
            );
            c.is(format!("DEL {key}"), ":1\r\n");
        }
    }
    // Limits of the stored u32 (D6: >= 2^32 is an error, not a wrap-around).
    c.is("BF.RESERVE big 0.01 100 EXPANSION 4294967295", OK);
    c.is("BF.INFO big EXPANSION", &ints(&[4294967295]));
    c.is3(
        "BF.INFO big EXPANSION",
        &info1(true, "Expansion rate", Some(4294967295)),
    );
    for v in ["4294967296", "4294967298", "9223372036854775807"] {
        c.both(
            ["BF.RESERVE", "wrap", "0.01", "100", "EXPANSION", v],
            &by_line::RESERVE_EXPANSION_TOO_BIG.wire(),
        );
    }
    c.absent("wrap");
    c.is("BF.RESERVE one 0.01 100 EXPANSION 1", OK);
    c.is("BF.INFO one EXPANSION", &ints(&[1]));
}

#[test]
fn reserve_keywords_only_after_capacity_and_unknown_args_rejected() {
    // `docs/commands.md` ("Argument handling"): NONSCALING / EXPANSION are looked for only after the capacity, and
    // unknown trailing arguments are errors that create nothing.
    let (_s, mut c) = Ck::start();
    c.is("BF.RESERVE nonscaling 0.01 100", OK);
    c.is("BF.INFO nonscaling EXPANSION", &ints(&[2]));
    c.both(
        "BF.DEBUG nonscaling",
        &bulks(&[
            "size:0",
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005",
        ]),
    );
    for (cmd, want) in [
        ("BF.RESERVE NONSCALING 0.01 100", OK),
        ("BF.INFO NONSCALING EXPANSION", ints(&[2]).as_str()),
        ("BF.RESERVE expansion 0.01 100", OK),
        ("BF.INFO expansion EXPANSION", ints(&[2]).as_str()),
        ("BF.RESERVE EXPANSION 0.01 100 EXPANSION 5", OK),
        ("BF.INFO EXPANSION EXPANSION", ints(&[5]).as_str()),
    ] {
        c.is(cmd, want);
    }
    for args in [
        &["BF.RESERVE", "u1", "0.01", "100", "foo"][..],
        &["BF.RESERVE", "u1", "0.01", "100", "NONSCALING", "foo"][..],
        &["BF.RESERVE", "u1", "0.01", "100", "foo", "NONSCALING"][..],
        &["BF.RESERVE", "u1", "0.01", "100", "EXPANSION", "3", "foo"][..],
        &["BF.RESERVE", "u1", "0.01", "100", ""][..],
        &["BF.RESERVE", "u1", "0.01", "100", "NONSCALINGX"][..],
        &["BF.RESERVE", "u1", "0.01", "100", "EXP", "2"][..],
    ] {
        c.is_err(args);
    }
    c.absent("u1");
    c.is("DBSIZE", ":4\r\n");
}

#[test]
fn reserve_existing_key_and_wrong_type() {
    let (_s, mut c) = Ck::start();
    c.is("BF.RESERVE dup 0.01 100", OK);
    c.both("BF.RESERVE dup 0.01 100", &err("ERR item exists"));
    c.both(
        "BF.RESERVE dup 0.02 500 NONSCALING",
        &err("ERR item exists"),
    );
    // Argument validation comes before the key lookup.
    c.both("BF.RESERVE dup 2 100", &by_line::RESERVE_ERROR_RANGE.wire());
    c.both("BF.RESERVE dup 0.01 x", &err("ERR bad capacity"));
    // The existing filter is untouched.
    c.is("BF.INFO dup", &info(false, 100, 240, 1, 0, Some(2)));
    c.is("SET str v", OK);
    c.both("BF.RESERVE str 0.01 100", WRONGTYPE);
    c.both("BF.RESERVE str abc 100", &err("ERR bad error rate"));
    c.is("RPUSH lst x", ":1\r\n");
    c.both("BF.RESERVE lst 0.01 100", WRONGTYPE);
    c.is("GET str", &bulk("v"));
}

#[test]
fn reserve_huge_capacity_is_an_error_not_a_crash() {
    // `docs/commands.md` ("Memory and failures"): RedisBloom 2.8 kills Redis 7.0 here; we answer an error and keep serving.
    let (mut s, mut c) = Ck::start();
    c.is("SET guard alive", OK);
    c.is(
        "BF.RESERVE k 0.01 1000000000000000000",
        &err("ERR Insufficient memory to create filter"),
    );
    c.is("PING", "+PONG\r\n");
    c.is_err("BF.RESERVE k2 0.01 100000000000000");
    c.is_err("BF.RESERVE k3 0.01 9223372036854775807");
    c.is_err("BF.RESERVE k4 0.000000000000000000000000000001 10000000000");
    c.is_err("BF.INSERT k5 CAPACITY 100000000000000 ITEMS a");
    c.is(
        "BF.RESERVE k6 0.01 18446744073709551616",
        &err("ERR bad capacity"),
    );
    c.is("PING", "+PONG\r\n");
    c.is("EXISTS k k2 k3 k4 k5 k6", ":0\r\n");
    c.is("GET guard", &bulk("alive"));
    // Still fully working afterwards.
    c.is("BF.ADD after x", ":1\r\n");
    drop(c);
    assert!(s.is_alive(), "redis-server died; log:\n{}", s.log());
}

// ------------------------------------------------------------------------------------------
// BF.ADD / BF.MADD
// ------------------------------------------------------------------------------------------

#[test]
fn add_replies_and_auto_create_defaults() {
    let (_s, mut c) = Ck::start();
    c.is("BF.ADD a2 x", ":1\r\n");
    c.is("BF.ADD a2 x", ":0\r\n");
    c.is("BF.ADD a2 y", ":1\r\n");
    c.is3("BF.ADD a3 x", T);
    c.is3("BF.ADD a3 x", F);
    c.is3("bf.add a3 y", T);
    // Auto-created: capacity 100, error 0.01 (first layer 0.005), expansion 2.
    for k in ["a2", "a3"] {
        c.is(["BF.INFO", k], &info(false, 100, 240, 1, 2, Some(2)));
        c.is3(["BF.INFO", k], &info(true, 100, 240, 1, 2, Some(2)));
        c.both(
            ["BF.DEBUG", k],
            &bulks(&[
                "size:2",
                "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:2 ratio:0.005",
            ]),
        );
    }
    c.both("TYPE a2", "+MBbloom--\r\n");
    // Binary-safe items: the empty item and NUL bytes.
    c.check_bytes(false, r#"BF.ADD bin """#, b":1\r\n");
    c.check_bytes(false, r#"BF.ADD bin """#, b":0\r\n");
    c.check_bytes(false, r#"BF.ADD bin "a\x00b""#, b":1\r\n");
    c.check_bytes(false, r#"BF.EXISTS bin "a\x00c""#, b":0\r\n");
    c.check_bytes(false, "BF.EXISTS bin a", b":0\r\n");
    // GV4: the empty item in an auto-created filter.
    c.check_bytes(
        false,
        "BF.SCANDUMP bin 0",
        &dump_reply(1, &{
            let mut h = hex(GV4_HEADER);
            h[0] = 2; // two items (the empty one and a\0b)
            h[20 + 16] = 2; // layer size
            h
        }),
    );
}

#[test]
fn add_errors() {
    let (_s, mut c) = Ck::start();
    for (cmd, want) in [
        ("BF.ADD", arity("bf.add").as_str()),
        ("BF.ADD k", arity("bf.add").as_str()),
        ("BF.ADD k a b", arity("bf.add").as_str()),
        ("bf.ADD k a b", arity("bf.add").as_str()),
    ] {
        c.both(cmd, want);
    }
    c.absent("k");
    c.is("SET str v", OK);
    c.both("BF.ADD str a", WRONGTYPE);
    c.is("GET str", &bulk("v"));
    // Full NONSCALING filter: new items are rejected, known items answer 0.
    c.is("BF.RESERVE full 0.01 2 NONSCALING", OK);
    c.is("BF.ADD full a", ":1\r\n");
    c.is3("BF.ADD full b", T);
    c.is("BF.ADD full c", FULL);
    c.is3("BF.ADD full d", FULL);
    c.is("BF.ADD full a", ":0\r\n");
    c.is3("BF.ADD full b", F);
    c.is("BF.INFO full", &info(false, 2, 104, 1, 2, None));
    c.is("BF.MEXISTS full a b c d", &ints(&[1, 1, 0, 0]));
}

#[test]
fn madd_replies_and_stops_at_first_full_error() {
    let (_s, mut c) = Ck::start();
    c.is("BF.MADD m2 a b a", &ints(&[1, 1, 0]));
    c.is3("BF.MADD m3 a b a", &bools(&[true, true, false]));
    c.is("BF.MADD m2 c", &ints(&[1]));
    c.is3("BF.MADD m3 a", &bools(&[false]));
    c.is("BF.INFO m2", &info(false, 100, 240, 1, 3, Some(2)));
    c.is("BF.INFO m3", &info(false, 100, 240, 1, 2, Some(2)));
    // Stop after the first "full" error; the error is the last element, inline.
    for (cmd, want) in [
        ("BF.RESERVE full 0.01 2 NONSCALING", OK),
        (
            "BF.MADD full a b c d",
            arr(&[":1\r\n", ":1\r\n", FULL]).as_str(),
        ),
        ("BF.MEXISTS full a b c d", ints(&[1, 1, 0, 0]).as_str()),
        ("BF.CARD full", ":2\r\n"),
        ("BF.MADD full a b", ints(&[0, 0]).as_str()),
        ("BF.MADD full a c b", arr(&[":0\r\n", FULL]).as_str()),
    ] {
        c.is(cmd, want);
    }
    c.is3("BF.MADD full b d a", &arr(&[F, FULL]));
    c.is("BF.RESERVE full3 0.01 2 NONSCALING", OK);
    c.is3("BF.MADD full3 a b c d", &arr(&[T, T, FULL]));
    c.is("BF.CARD full3", ":2\r\n");
    // Errors.
    c.both("BF.MADD", &arity("bf.madd"));
    c.both("BF.MADD k", &arity("bf.madd"));
    c.absent("k");
    c.is("SET str v", OK);
    c.both("BF.MADD str a b", WRONGTYPE);
}

#[test]
fn scaling_adds_layers_sized_by_expansion() {
    // `docs/format.md` ("The chain") example: BF.RESERVE 0.01 10 then 100 distinct adds -> 4 layers 10/20/40/80.
    let (_s, mut c) = Ck::start();
    c.is("BF.RESERVE sc 0.01 10", OK);
    let items = names("item", 100);
    c.is(with_items("BF.MADD", "sc", &items), &ints(&[1; 100]));
    c.is("BF.INFO sc", &info(false, 150, 568, 4, 100, Some(2)));
    c.both(
        "BF.DEBUG sc",
        &bulks(&[
            "size:100",
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
            "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
            "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
            "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:30 ratio:0.000625",
        ]),
    );
    c.is(with_items("BF.MEXISTS", "sc", &items), &ints(&[1; 100]));
    // %g formatting of small ratios, expansion 1 (every layer has the first capacity).
    c.is("BF.RESERVE g 0.00025 1 EXPANSION 1", OK);
    c.is("BF.MADD g a b", &ints(&[1, 1]));
    c.both(
        "BF.DEBUG g",
        &bulks(&[
            "size:2",
            "bytes:8 bits:64 hashes:13 hashwidth:64 capacity:1 size:1 ratio:0.000125",
            "bytes:8 bits:64 hashes:14 hashwidth:64 capacity:1 size:1 ratio:6.25e-05",
        ]),
    );
    c.is("BF.INFO g", &info(false, 2, 176, 2, 2, Some(1)));
}

#[test]
fn auto_create_uses_module_load_arguments() {
    // `docs/commands.md` ("Configs"): INITIAL_SIZE and ERROR_RATE load arguments set the auto-create defaults.
    let s = Server::start_with(&["INITIAL_SIZE", "500", "ERROR_RATE", "0.05"], &[]);
    let mut c = Ck::new(&s);
    c.is("BF.ADD k x", ":1\r\n");
    c.is("BF.INFO k CAPACITY", &ints(&[500]));
    c.check_debug_ends("k", " capacity:500 size:1 ratio:0.025");
    c.is("BF.INSERT i ITEMS x", &ints(&[1]));
    c.is("BF.INFO i CAPACITY", &ints(&[500]));
    // Explicit parameters still win.
    c.is("BF.INSERT j CAPACITY 7 ITEMS x", &ints(&[1]));
    c.is("BF.INFO j CAPACITY", &ints(&[7]));
}

// ------------------------------------------------------------------------------------------
// BF.INSERT
// ------------------------------------------------------------------------------------------

#[test]
fn insert_options_any_order_and_case() {
    let (_s, mut c) = Ck::start();
    let dbg_1000_0001 = |items: i64| {
        bulks(&[
            &format!("size:{items}"),
            &format!(
                "bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:{items} ratio:0.0005"
            ),
        ])
    };
    c.is(
        "BF.INSERT o1 CAPACITY 1000 ERROR 0.001 EXPANSION 4 ITEMS a b",
        &ints(&[1, 1]),
    );
    c.both("BF.DEBUG o1", &dbg_1000_0001(2));
    c.is("BF.INFO o1", &info(false, 1000, 2080, 1, 2, Some(4)));
    c.is(
        "BF.INSERT o2 ERROR 0.001 EXPANSION 4 CAPACITY 1000 ITEMS a b",
        &ints(&[1, 1]),
    );
    c.both("BF.DEBUG o2", &dbg_1000_0001(2));
    c.is("BF.INFO o2 EXPANSION", &ints(&[4]));
    c.is(
        "bf.insert o3 expansion 4 error 1e-3 capacity 1000 items a",
        &ints(&[1]),
    );
    c.both("BF.DEBUG o3", &dbg_1000_0001(1));
    c.is(
        "BF.INSERT o4 Capacity 1000 Error 0.001 Items a",
        &ints(&[1]),
    );
    c.both("BF.DEBUG o4", &dbg_1000_0001(1));
    c.is("BF.INFO o4 EXPANSION", &ints(&[2]));
    // Defaults: 100 / 0.01 / expansion 2.
    c.is("BF.INSERT d ITEMS x", &ints(&[1]));
    c.is("BF.INFO d", &info(false, 100, 240, 1, 1, Some(2)));
    // RESP3: booleans, and an array even for one item.
    c.is3("BF.INSERT r3 ITEMS x y x", &bools(&[true, true, false]));
    c.is3("BF.INSERT r3 ITEMS x", &bools(&[false]));
    // NONSCALING (error not halved) and NONSCALING together with EXPANSION (accepted; nil).
    c.is("BF.INSERT n1 NONSCALING CAPACITY 3 ITEMS a", &ints(&[1]));
    c.both(
        "BF.DEBUG n1",
        &bulks(&[
            "size:1",
            "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:3 size:1 ratio:0.01",
        ]),
    );
    c.is("BF.INFO n1 EXPANSION", &info1(false, "", None));
    c.is("BF.INSERT n2 EXPANSION 3 nonscaling ITEMS a", &ints(&[1]));
    c.is("BF.INFO n2 EXPANSION", &info1(false, "", None));
    c.is3("BF.INFO n2 EXPANSION", &info1(true, "Expansion rate", None));
    // Existing key: creation parameters are ignored (but still range-checked).
    c.is(
        "BF.INSERT o1 CAPACITY 5 ERROR 0.5 EXPANSION 9 NONSCALING ITEMS z",
        &ints(&[1]),
    );
    c.is("BF.INFO o1", &info(false, 1000, 2080, 1, 3, Some(4)));
    c.is(
        "BF.INSERT o1 ERROR 2 ITEMS w",
        &by_line::INSERT_ERROR_RANGE.wire(),
    );
    c.is("BF.CARD o1", ":3\r\n");
    // NOCREATE on an existing key works; on a missing key it is a top-level error.
    c.is("BF.INSERT o1 NOCREATE ITEMS c a", &ints(&[1, 0]));
    c.both("BF.INSERT nk NOCREATE ITEMS a", NOT_FOUND);
    c.both("BF.INSERT nk nocreate items a", NOT_FOUND);
    c.both(
        "BF.INSERT nk CAPACITY 10 NOCREATE ERROR 0.1 ITEMS a",
        NOT_FOUND,
    );
    c.absent("nk");
}

#[test]
fn insert_items_after_items_keyword_are_items() {
    let (_s, mut c) = Ck::start();
    c.is(
        "BF.INSERT o5 ITEMS NOCREATE ITEMS CAPACITY",
        &ints(&[1, 1, 1]),
    );
    c.is(
        "BF.MEXISTS o5 NOCREATE ITEMS CAPACITY nocreate",
        &ints(&[1, 1, 1, 0]),
    );
    c.is("BF.INFO o5", &info(false, 100, 240, 1, 3, Some(2)));
    c.is(
        "BF.INSERT o6 CAPACITY 50 ITEMS ERROR 2 EXPANSION 0 NONSCALING",
        &ints(&[1, 1, 1, 1, 1]),
    );
    c.is("BF.INFO o6", &info(false, 50, 168, 1, 5, Some(2)));
    c.is("BF.INSERT o7 ITEMS ITEMS", &ints(&[1]));
    c.is("BF.EXISTS o7 ITEMS", ":1\r\n");
}

#[test]
fn insert_stops_at_first_full_error() {
    let (_s, mut c) = Ck::start();
    c.is(
        "BF.INSERT f CAPACITY 3 NONSCALING ITEMS a b c d e",
        &arr(&[":1\r\n", ":1\r\n", ":1\r\n", FULL]),
    );
    c.is(
        "BF.INSERT f ITEMS a b c d d",
        &arr(&[":0\r\n", ":0\r\n", ":0\r\n", FULL]),
    );
    c.is3("BF.INSERT f ITEMS c e a", &arr(&[F, FULL]));
    c.is("BF.MEXISTS f a b c d e", &ints(&[1, 1, 1, 0, 0]));
    c.is("BF.INFO f", &info(false, 3, 104, 1, 3, None));
    c.is3(
        "BF.INSERT f3 CAPACITY 3 NONSCALING ITEMS a b c d e",
        &arr(&[T, T, T, FULL]),
    );
}

#[test]
fn insert_expansion_0_is_nonscaling() {
    // RedisBloom 8 (Redis 8): BF.INSERT EXPANSION 0 creates a non-scaling filter with growth
    // 0; RedisBloom 2.8 refuses it (insert_errors).
    if !redis8() {
        println!("Redis 7 / Valkey: EXPANSION 0 is refused there (insert_errors)");
        return;
    }
    let (_s, mut c) = Ck::start();
    for (key, options) in [("i0", "EXPANSION 0"), ("i1", "EXPANSION 0 NONSCALING")] {
        c.is(
            format!("BF.INSERT {key} CAPACITY 2 {options} ITEMS a b c"),
            &format!("*3\r\n:1\r\n:1\r\n{FULL}"),
        );
        c.is(format!("BF.INFO {key} EXPANSION"), &info1(false, "", None));
        let raw = c.q(false, format!("BF.SCANDUMP {key} 0"));
        assert_eq!(&raw[13 + 12..13 + 20], &[13, 0, 0, 0, 0, 0, 0, 0], "{key}");
    }
    // Error rates above 0.25 are stored as 0.25 (BF.DEBUG's ratio is the first layer's).
    c.is("BF.INSERT e1 ERROR 0.9 ITEMS a", &ints(&[1]));
    c.is(
        "BF.DEBUG e1",
        &bulks(&[
            "size:1",
            "bytes:56 bits:448 hashes:4 hashwidth:64 capacity:100 size:1 ratio:0.125",
        ]),
    );
    c.is("BF.RESERVE e2 0.26 100", OK);
    c.is(
        "BF.DEBUG e2",
        &bulks(&[
            "size:0",
            "bytes:56 bits:448 hashes:4 hashwidth:64 capacity:100 size:0 ratio:0.125",
        ]),
    );
}

#[test]
fn insert_errors() {
    let (_s, mut c) = Ck::start();
    let a = arity("bf.insert");
    // Arity and structure: ITEMS missing or empty, an option without its value.
    for args in [
        &["BF.INSERT"][..],
        &["BF.INSERT", "k"][..],
        &["BF.INSERT", "k", "ITEMS"][..],
        &["BF.INSERT", "k", "CAPACITY", "10"][..],
        &["BF.INSERT", "k", "CAPACITY", "10", "ITEMS"][..],
        &["BF.INSERT", "k", "NOCREATE", "NONSCALING"][..],
        &["BF.INSERT", "k", "NONSCALING", "ERROR"][..],
        &["BF.INSERT", "k", "NONSCALING", "CAPACITY"][..],
        &["BF.INSERT", "k", "NONSCALING", "EXPANSION"][..],
        &["BF.INSERT", "k", "ERROR", "0.1", "CAPACITY", "10", "ITEMS"][..],
    ] {
        c.both(args, &a);
    }
    // Value parse failures: no ERR prefix.
    for e in ["abc", "", "nan", "0.1x", "1e999"] {
        c.both(
            ["BF.INSERT", "k", "ERROR", e, "ITEMS", "a"],
            &err("Bad error rate"),
        );
    }
    for cap in ["abc", "1.5", "0100", "+5", "1e3", ""] {
        c.both(
            ["BF.INSERT", "k", "CAPACITY", cap, "ITEMS", "a"],
            &err("Bad capacity"),
        );
    }
    for x in ["abc", "1.5", "+2", ""] {
        c.both(
            ["BF.INSERT", "k", "EXPANSION", x, "ITEMS", "a"],
            &err("Bad expansion"),
        );
    }
    c.is_err("BF.INSERT k EXPANSION 4294967296 ITEMS a");
    // Range failures: RedisBloom 2.8 checks them after parsing ("Bad argument received"),
    // RedisBloom 8 as it reads each option (its parse error).
    let (error_range, capacity_range, expansion_range) = (
        by_line::INSERT_ERROR_RANGE.wire(),
        by_line::INSERT_CAPACITY_RANGE.wire(),
        by_line::INSERT_EXPANSION_RANGE.wire(),
    );
    for (line, want) in [
        ("BF.INSERT k ERROR 0 ITEMS a", &error_range),
        ("BF.INSERT k ERROR 1 ITEMS a", &error_range),
        ("BF.INSERT k ERROR -0.5 ITEMS a", &error_range),
        ("BF.INSERT k ERROR inf ITEMS a", &error_range),
        ("BF.INSERT k CAPACITY 0 ITEMS a", &capacity_range),
        ("BF.INSERT k CAPACITY -5 ITEMS a", &capacity_range),
        ("BF.INSERT k EXPANSION -1 ITEMS a", &expansion_range),
        ("BF.INSERT k NOCREATE CAPACITY 0 ITEMS a", &capacity_range),
    ] {
        c.both(line, want);
    }
    if !redis8() {
        // RedisBloom 2.8 refuses EXPANSION 0; RedisBloom 8 makes a non-scaling filter
        // (insert_expansion_0_is_nonscaling).
        c.both(
            ["BF.INSERT", "k", "EXPANSION", "0", "ITEMS", "a"],
            &expansion_range,
        );
    }
    // Unknown tokens; `docs/commands.md` ("Argument handling"): keywords are whole words, so first-letter forms are unknown.
    let unknown = err("Unknown argument received");
    for args in [
        &["BF.INSERT", "k", "BOGUS", "1", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "e", "3", "i", "x"][..],
        &[
            "BF.INSERT",
            "k",
            "erxx",
            "0.2",
            "c",
            "5",
            "nx",
            "ix",
            "x",
            "y",
        ][..],
        &["BF.INSERT", "k", "CAP", "10", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "ERR", "0.1", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "EXPANSIONS", "2", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "NOCREATEX", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "NONSCALINGX", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "ITEM", "a"][..],
        &["BF.INSERT", "k", "ITEMSX", "a"][..],
        &["BF.INSERT", "k", "NX", "ITEMS", "a"][..],
    ] {
        c.both(args, &unknown);
    }
    c.is("DBSIZE", ":0\r\n");
    // Wrong type, with and without NOCREATE.
    c.is("SET str v", OK);
    c.both("BF.INSERT str ITEMS a", WRONGTYPE);
    c.both("BF.INSERT str NOCREATE ITEMS a", WRONGTYPE);
    c.is("GET str", &bulk("v"));
}

// ------------------------------------------------------------------------------------------
// BF.EXISTS / BF.MEXISTS / BF.CARD
// ------------------------------------------------------------------------------------------

#[test]
fn exists_and_mexists() {
    let (_s, mut c) = Ck::start();
    c.is("BF.MADD k a b", &ints(&[1, 1]));
    c.is("BF.EXISTS k a", ":1\r\n");
    c.is("BF.EXISTS k zz", ":0\r\n");
    c.is3("BF.EXISTS k a", T);
    c.is3("BF.EXISTS k zz", F);
    c.is("BF.MEXISTS k a zz b", &ints(&[1, 0, 1]));
    c.is3("BF.MEXISTS k a zz b", &bools(&[true, false, true]));
    c.is("BF.MEXISTS k b", &ints(&[1]));
    // Missing key and wrong type answer 0, never an error.
    c.is("BF.EXISTS nokey a", ":0\r\n");
    c.is3("BF.EXISTS nokey a", F);
    c.is("BF.MEXISTS nokey a b", &ints(&[0, 0]));
    c.is3("BF.MEXISTS nokey a b", &bools(&[false, false]));
    c.absent("nokey");
    c.is("SET str a", OK);
    c.is("BF.EXISTS str a", ":0\r\n");
    c.is3("BF.EXISTS str a", F);
    c.is("BF.MEXISTS str a b", &ints(&[0, 0]));
    c.is("HSET h a 1", ":1\r\n");
    c.is("BF.EXISTS h a", ":0\r\n");
    c.is3("BF.MEXISTS h a", &bools(&[false]));
    // Arity.
    for (cmd, want) in [
        ("BF.EXISTS", arity("bf.exists").as_str()),
        ("BF.EXISTS k", arity("bf.exists").as_str()),
        ("BF.EXISTS k a b", arity("bf.exists").as_str()),
        ("BF.MEXISTS", arity("bf.mexists").as_str()),
        ("BF.MEXISTS k", arity("bf.mexists").as_str()),
    ] {
        c.both(cmd, want);
    }
    // Nothing above changed the filter.
    c.is("BF.CARD k", ":2\r\n");
}

#[test]
fn card() {
    let (_s, mut c) = Ck::start();
    c.is("SET str v", OK);
    let a = arity("bf.card");
    for (line, want) in [
        ("BF.CARD nokey", ":0\r\n"),
        ("BF.CARD str", WRONGTYPE),
        ("BF.CARD", a.as_str()),
        ("BF.CARD k x", a.as_str()),
    ] {
        c.both(line, want);
    }
    c.absent("nokey");
    c.is("BF.RESERVE k 0.01 100", OK);
    c.both("BF.CARD k", ":0\r\n");
    c.is("BF.MADD k a b c a", &ints(&[1, 1, 1, 0]));
    c.both("BF.CARD k", ":3\r\n");
}

// ------------------------------------------------------------------------------------------
// BF.INFO / BF.DEBUG
// ------------------------------------------------------------------------------------------

#[test]
fn info_full_and_single_field() {
    let (_s, mut c) = Ck::start();
    c.is("BF.RESERVE i 0.001 100", OK);
    c.is("BF.ADD i one", ":1\r\n");
    c.is(
        "BF.INFO i",
        "*10\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n+Number of filters\r\n:1\r\n\
         +Number of items inserted\r\n:1\r\n+Expansion rate\r\n:2\r\n",
    );
    c.is3(
        "BF.INFO i",
        "%5\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n+Number of filters\r\n:1\r\n\
         +Number of items inserted\r\n:1\r\n+Expansion rate\r\n:2\r\n",
    );
    let fields: [(&str, &str, i64); 5] = [
        ("CAPACITY", "Capacity", 100),
        ("SIZE", "Size", 296),
        ("FILTERS", "Number of filters", 1),
        ("ITEMS", "Number of items inserted", 1),
        ("EXPANSION", "Expansion rate", 2),
    ];
    for (tok, name, v) in fields {
        c.is(["BF.INFO", "i", tok], &info1(false, name, Some(v)));
        c.is3(["BF.INFO", "i", tok], &info1(true, name, Some(v)));
        let lower = tok.to_lowercase();
        c.is(["BF.INFO", "i", &lower], &info1(false, name, Some(v)));
        c.is3(["BF.INFO", "i", &lower], &info1(true, name, Some(v)));
    }
    c.is("BF.INFO i Capacity", "*1\r\n:100\r\n");
    // NONSCALING: nil expansion in both forms.
    c.is("BF.RESERVE ns 0.01 3 NONSCALING", OK);
    c.is(
        "BF.INFO ns",
        "*10\r\n+Capacity\r\n:3\r\n+Size\r\n:104\r\n+Number of filters\r\n:1\r\n\
         +Number of items inserted\r\n:0\r\n+Expansion rate\r\n$-1\r\n",
    );
    c.is3(
        "BF.INFO ns",
        "%5\r\n+Capacity\r\n:3\r\n+Size\r\n:104\r\n+Number of filters\r\n:1\r\n\
         +Number of items inserted\r\n:0\r\n+Expansion rate\r\n_\r\n",
    );
    c.is("BF.INFO ns EXPANSION", "*1\r\n$-1\r\n");
    c.is3("BF.INFO ns EXPANSION", "%1\r\n+Expansion rate\r\n_\r\n");
    // Errors.
    let invalid = err("Invalid information value");
    for f in ["bogus", "", "CAP", "CAPACITYX", "Number of filters"] {
        c.both(["BF.INFO", "i", f], &invalid);
    }
    c.both("BF.INFO nokey", NOT_FOUND);
    c.both("BF.INFO nokey CAPACITY", NOT_FOUND);
    c.both("BF.INFO nokey bogus", NOT_FOUND);
    c.is("SET str v", OK);
    for (cmd, want) in [
        ("BF.INFO str", WRONGTYPE),
        ("BF.INFO str CAPACITY", WRONGTYPE),
        ("BF.INFO str bogus", WRONGTYPE),
        ("BF.INFO", arity("bf.info").as_str()),
        ("BF.INFO i CAPACITY SIZE", arity("bf.info").as_str()),
    ] {
        c.both(cmd, want);
    }
}

#[test]
fn debug_output() {
    let (_s, mut c) = Ck::start();
    // GV1.
    c.is("BF.RESERVE gv1 0.01 1000", OK);
    c.is("BF.ADD gv1 hello", ":1\r\n");
    let gv1 = "*2\r\n$6\r\nsize:1\r\n$76\r\n\
               bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:1 ratio:0.005\r\n";
    c.is("BF.DEBUG gv1", gv1);
    c.is3("BF.DEBUG gv1", gv1);
    // GV2 and GV3.
    c.is("BF.RESERVE gv2 0.1 4 EXPANSION 3", OK);
    c.is(with_items("BF.MADD", "gv2", &ABC_L), &ints(&[1; 12]));
    c.both(
        "BF.DEBUG gv2",
        &bulks(&[
            "size:12",
            "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:4 size:4 ratio:0.05",
            "bytes:16 bits:128 hashes:6 hashwidth:64 capacity:12 size:8 ratio:0.025",
        ]),
    );
    c.is("BF.INFO gv2", &info(false, 16, 184, 2, 12, Some(3)));
    c.is("BF.RESERVE gv3 0.05 10 NONSCALING", OK);
    c.is("BF.MADD gv3 foo bar baz", &ints(&[1, 1, 1]));
    c.both(
        "BF.DEBUG gv3",
        &bulks(&[
            "size:3",
            "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:10 size:3 ratio:0.05",
        ]),
    );
    c.is("BF.INFO gv3 SIZE", &ints(&[104]));
    // Errors.
    c.both("BF.DEBUG nokey", NOT_FOUND);
    c.is("SET str v", OK);
    c.both("BF.DEBUG str", WRONGTYPE);
    c.both("BF.DEBUG", &arity("bf.debug"));
    c.both("BF.DEBUG gv1 x", &arity("bf.debug"));
}

// ------------------------------------------------------------------------------------------
// BF.SCANDUMP / BF.LOADCHUNK
// ------------------------------------------------------------------------------------------

#[test]
fn scandump_golden_vectors() {
    let (_s, mut c) = Ck::start();
    // GV1
    c.is("BF.RESERVE gv1 0.01 1000", OK);
    c.is("BF.ADD gv1 hello", ":1\r\n");
    for resp3 in [false, true] {
        c.check_bytes(resp3, "BF.SCANDUMP gv1 0", &dump_reply(1, &hex(GV1_HEADER)));
        c.check_bytes(resp3, "BF.SCANDUMP gv1 1", &dump_reply(1385, &gv1_chunk()));
        c.check(resp3, "BF.SCANDUMP gv1 1385", EMPTY_FINAL);
    }
    // GV2 (two layers, expansion 3), including arbitrary iterators.
    c.is("BF.RESERVE gv2 0.1 4 EXPANSION 3", OK);
    c.is(with_items("BF.MADD", "gv2", &ABC_L), &ints(&[1; 12]));
    let l1 = hex(GV2_L1);
    let l2 = hex(GV2_L2);
    for resp3 in [false, true] {
        c.check_bytes(resp3, "BF.SCANDUMP gv2 0", &dump_reply(1, &hex(GV2_HEADER)));
        c.check_bytes(resp3, "BF.SCANDUMP gv2 1", &dump_reply(9, &l1));
        c.check_bytes(resp3, "BF.SCANDUMP gv2 9", &dump_reply(25, &l2));
        c.check(resp3, "BF.SCANDUMP gv2 25", EMPTY_FINAL);
    }
    c.check_bytes(false, "BF.SCANDUMP gv2 5", &dump_reply(9, &l1[4..]));
    c.check_bytes(false, "BF.SCANDUMP gv2 8", &dump_reply(9, &l1[7..]));
    c.check_bytes(false, "BF.SCANDUMP gv2 12", &dump_reply(25, &l2[3..]));
    c.check_bytes(false, "BF.SCANDUMP gv2 24", &dump_reply(25, &l2[15..]));
    for it in [
        "26",
        "1000000",
        "-1",
        "-9223372036854775808",
        "9223372036854775807",
    ] {
        c.both(["BF.SCANDUMP", "gv2", it], EMPTY_FINAL);
    }
    // GV3 (NONSCALING: options 13, growth 2 kept).
    c.is("BF.RESERVE gv3 0.05 10 NONSCALING", OK);
    c.is("BF.MADD gv3 foo bar baz", &ints(&[1, 1, 1]));
    c.check_bytes(false, "BF.SCANDUMP gv3 0", &dump_reply(1, &hex(GV3_HEADER)));
    c.check_bytes(
        false,
        "BF.SCANDUMP gv3 1",
        &dump_reply(9, &hex("08a02a0018111900")),
    );
    c.is("BF.SCANDUMP gv3 9", EMPTY_FINAL);
    // GV4: auto-created filter with the empty item.
    c.check_bytes(false, r#"BF.ADD gv4 """#, b":1\r\n");
    c.check_bytes(false, "BF.SCANDUMP gv4 0", &dump_reply(1, &hex(GV4_HEADER)));
    let r = c.raw(false, &[b"BF.SCANDUMP", b"gv4", b"1"]);
    match parse_dump(&r) {
        Some((145, data)) if data.len() == 144 => {
            let ones: u32 = data.iter().map(|b| b.count_ones()).sum();
            if ones != 8 {
                c.fail(format!("GV4 chunk: expected 8 bits set, got {ones}"));
            }
        }
        _ => c.fail(format!(
            "GV4 SCANDUMP 1: expected [145, 144 bytes], got {}",
            show(&r)
        )),
    }
    c.is("BF.SCANDUMP gv4 145", EMPTY_FINAL);
}

#[test]
fn scandump_errors() {
    let (_s, mut c) = Ck::start();
    c.both("BF.SCANDUMP nokey 0", NOT_FOUND);
    // The key is checked before the iterator.
    c.both("BF.SCANDUMP nokey abc", NOT_FOUND);
    c.is("SET str v", OK);
    c.both("BF.SCANDUMP str 0", WRONGTYPE);
    c.both("BF.SCANDUMP str abc", WRONGTYPE);
    c.is("BF.ADD k x", ":1\r\n");
    let numeric = err("Second argument must be numeric"); // no ERR prefix
    for it in ["abc", "1.5", "", "0x10", " 1", "99999999999999999999"] {
        c.both(["BF.SCANDUMP", "k", it], &numeric);
    }
    c.both("BF.SCANDUMP", &arity("bf.scandump"));
    c.both("BF.SCANDUMP k", &arity("bf.scandump"));
    c.both("BF.SCANDUMP k 0 1", &arity("bf.scandump"));
}

/// GV1 header with one field patched (little-endian).
fn patched_gv1(offset: usize, bytes: &[u8]) -> Vec<u8> {
    let mut h = hex(GV1_HEADER);
    h[offset..offset + bytes.len()].copy_from_slice(bytes);
    h
}

#[test]
fn loadchunk_header_validation() {
    let (_s, mut c) = Ck::start();
    let bad = "-ERR received bad data\r\n".as_bytes().to_vec();
    let mut headers: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"garbage".to_vec()),
        ("empty", Vec::new()),
        ("16 zero bytes", vec![0u8; 16]),
        ("20 zero bytes (nfilters 0)", vec![0u8; 20]),
        ("one byte short", hex(GV1_HEADER)[..72].to_vec()),
        ("one byte long", {
            let mut h = hex(GV1_HEADER);
            h.push(0);
            h
        }),
        (
            "nfilters 2 with one layer",
            patched_gv1(8, &2u32.to_le_bytes()),
        ),
        ("nfilters 0", patched_gv1(8, &0u32.to_le_bytes())),
        ("bits != bytes*8", patched_gv1(28, &11071u64.to_le_bytes())),
        ("bits 0 bytes 0", {
            let mut h = patched_gv1(20, &0u64.to_le_bytes());
            h[28..36].copy_from_slice(&0u64.to_le_bytes());
            h
        }),
        ("hashes 9", patched_gv1(60, &9u32.to_le_bytes())),
        ("hashes 0", patched_gv1(60, &0u32.to_le_bytes())),
        ("error 0", patched_gv1(44, &0f64.to_le_bytes())),
        ("error 1", patched_gv1(44, &1f64.to_le_bytes())),
        ("error -0.5", patched_gv1(44, &(-0.5f64).to_le_bytes())),
        ("options 16|5", patched_gv1(12, &21u32.to_le_bytes())),
        ("options 32|5", patched_gv1(12, &37u32.to_le_bytes())),
        (
            "chain size 2 != layer sizes 1",
            patched_gv1(0, &2u64.to_le_bytes()),
        ),
        (
            "layer size 0 != chain size 1",
            patched_gv1(36, &0u64.to_le_bytes()),
        ),
        ("n2 64", patched_gv1(72, &[64])),
        ("n2 20 with bits < 2^20", patched_gv1(72, &[20])),
    ];
    // An absurd allocation (2^60 bytes) must be refused without killing the server (`docs/commands.md` "Memory limits").
    let mut huge = patched_gv1(20, &(1u64 << 60).to_le_bytes());
    huge[28..36].copy_from_slice(&(1u64 << 63).to_le_bytes());
    for (what, data) in headers.drain(..) {
        let got = c.raw(false, &[b"BF.LOADCHUNK", b"h", b"1", &data]);
        if got != bad {
            c.fail(format!(
                "BF.LOADCHUNK h 1 <{what}>\n      expected: {}\n      got:      {}",
                show(&bad),
                show(&got)
            ));
        }
    }
    c.absent("h");
    c.check_bytes(false, args![b"BF.LOADCHUNK", b"h", b"1", &huge], &bad);
    c.is("PING", "+PONG\r\n");
    c.absent("h");
    // Headers RedisBloom 2.8 and 8 answer `ERR received bad data` as too big to allocate: the
    // header of `BF.RESERVE x 0.01 100` announcing 2^57 bytes (2^60 bits), and the header of
    // `BF.RESERVE bf 0.01 5` + 50 items with two bytes raised (bytes 27 and 35).
    let too_big = [
        hex(
            "00000000000000000100000005000000020000000000000000000002000000000000001000000000\
             000000007b14ae47e17a743fe9862fb2350e264008000000640000000000000000",
        ),
        hex(
            "2f00000000000000040000000500000002000000080000000000000340000000000000180500000000\
             0000007b14ae47e17a743fe9862fb2350e264008000000050000000000000000100000000000000080\
             000000000000000a000000000000007b14ae47e17a643f4af7d49edef02840090000000a0000000000\
             0000002800000000000000400100000000000014000000000000007b14ae47e17a543faa677a8b87d3\
             2b400a000000140000000000000000500000000000000080020000000000000c000000000000007b14\
             ae47e17a443f0bd81f7830b62e400b000000280000000000000000",
        ),
    ];
    for data in &too_big {
        let got = c.raw(false, &[b"BF.LOADCHUNK", b"h", b"1", data]);
        if got != bad {
            let (want, got) = (show(&bad), show(&got));
            c.fail(format!(
                "BF.LOADCHUNK of a header too big: expected {want}, got {got}"
            ));
        }
        c.absent("h");
    }
    c.is("PING", "+PONG\r\n");
    // Order: arity, then iterator, then key.
    c.both("BF.LOADCHUNK h 1", &arity("bf.loadchunk"));
    c.both("BF.LOADCHUNK h 1 x y", &arity("bf.loadchunk"));
    c.both("BF.LOADCHUNK", &arity("bf.loadchunk"));
    let numeric = err("ERR Second argument must be numeric");
    for it in ["abc", "1.5", "", "+1"] {
        c.both(["BF.LOADCHUNK", "h", it, "x"], &numeric);
    }
    c.is("SET str v", OK);
    c.both("BF.LOADCHUNK str abc x", &numeric);
    c.check_bytes(
        false,
        args![b"BF.LOADCHUNK", b"str", b"1", &hex(GV1_HEADER)],
        WRONGTYPE.as_bytes(),
    );
    c.both("BF.LOADCHUNK str 9 abc", WRONGTYPE);
    c.is("GET str", &bulk("v"));
    // Missing key with iter != 1: not found.
    for it in ["0", "2", "-1", "1385"] {
        c.both(["BF.LOADCHUNK", "h", it, "abc"], NOT_FOUND);
    }
    c.absent("h");
    // A valid header creates the key with all bits clear; the chunk then restores them.
    c.check_bytes(
        false,
        args![b"BF.LOADCHUNK", b"h", b"1", &hex(GV1_HEADER)],
        b"+OK\r\n",
    );
    c.is("BF.INFO h", &info(false, 1000, 1480, 1, 1, Some(2)));
    c.is("BF.EXISTS h hello", ":0\r\n");
    c.check_bytes(
        true,
        args![b"BF.LOADCHUNK", b"h", b"1385", &gv1_chunk()],
        b"+OK\r\n",
    );
    c.is("BF.EXISTS h hello", ":1\r\n");
    c.is("BF.CARD h", ":1\r\n");
    c.is(
        "BF.DEBUG h",
        "*2\r\n$6\r\nsize:1\r\n$76\r\n\
         bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:1 ratio:0.005\r\n",
    );
    // Entries, growth and bpe are not validated; growth 0 is accepted (GV3 with growth 0).
    let mut g0 = hex(GV3_HEADER);
    g0[16..20].copy_from_slice(&0u32.to_le_bytes());
    c.check_bytes(false, args![b"BF.LOADCHUNK", b"g0", b"1", &g0], b"+OK\r\n");
    c.is("BF.INFO g0 ITEMS", &ints(&[3]));
}

#[test]
fn loadchunk_data_chunk_validation() {
    let (_s, mut c) = Ck::start();
    // GV2: layer 1 = dump bytes 1..=8, layer 2 = 9..=24.
    c.is("BF.RESERVE gv2 0.1 4 EXPANSION 3", OK);
    c.is(with_items("BF.MADD", "gv2", &ABC_L), &ints(&[1; 12]));
    let bad = err("ERR received bad data");
    let no_link = err("ERR invalid offset - no link found");
    let too_big = err("ERR invalid chunk - Too big for current filter");
    let l1 = hex(GV2_L1);
    let l2 = hex(GV2_L2);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("0", b"".to_vec(), &bad),
        ("0", b"abc".to_vec(), &bad),
        ("-5", b"a".to_vec(), &bad),
        ("-9223372036854775808", b"1".to_vec(), &bad),
        ("2", b"abc".to_vec(), &bad),
        // iter 1 on an existing key is a data chunk: a 126-byte header is "bad data".
        ("1", hex(GV2_HEADER), &bad),
        ("25", b"".to_vec(), &no_link),
        ("26", b"x".to_vec(), &no_link),
        ("99999", b"abcd".to_vec(), &no_link),
        ("922337203685477588", b"1".to_vec(), &no_link),
        ("10", vec![0u8; 9], &too_big),
        ("17", vec![0u8; 9], &too_big),
        ("26", vec![0u8; 17], &too_big),
    ];
    for (it, data, want) in &cases {
        c.check_bytes(
            false,
            args![b"BF.LOADCHUNK", b"gv2", it.as_bytes(), data],
            want.as_bytes(),
        );
    }
    // Accepted writes (same bytes back, so the filter is unchanged), and empty no-op chunks.
    let oks: Vec<(&str, Vec<u8>)> = vec![
        ("9", l1.clone()),
        ("25", l2.clone()),
        ("25", l2[15..].to_vec()),
        ("5", l1[..4].to_vec()),
        ("1", Vec::new()),
        ("24", Vec::new()),
    ];
    for (it, data) in &oks {
        c.check_bytes(
            false,
            args![b"BF.LOADCHUNK", b"gv2", it.as_bytes(), data],
            b"+OK\r\n",
        );
    }
    c.check_bytes(true, args![b"BF.LOADCHUNK", b"gv2", b"9", &l1], b"+OK\r\n");
    c.check_bytes(false, "BF.SCANDUMP gv2 0", &dump_reply(1, &hex(GV2_HEADER)));
    c.check_bytes(false, "BF.SCANDUMP gv2 1", &dump_reply(9, &l1));
    c.check_bytes(false, "BF.SCANDUMP gv2 9", &dump_reply(25, &l2));
    // A chunk write changes bits but never the counters.
    c.check_bytes(
        false,
        args![b"BF.LOADCHUNK", b"gv2", b"9", &[0u8; 8]],
        b"+OK\r\n",
    );
    c.check_bytes(false, "BF.SCANDUMP gv2 1", &dump_reply(9, &[0u8; 8]));
    c.is("BF.CARD gv2", ":12\r\n");
    c.is("BF.INFO gv2", &info(false, 16, 184, 2, 12, Some(3)));
    c.is("PING", "+PONG\r\n");
}

#[test]
fn scandump_loadchunk_round_trip() {
    let (s, mut c) = Ck::start();
    c.is("BF.RESERVE src 0.01 10 EXPANSION 3", OK);
    let items = names("n", 60);
    let added = c.q(false, with_items("BF.MADD", "src", &items));
    c.check_bytes(false, r#"BF.ADD src "\x00\xff\x00binary""#, b":1\r\n");
    let chunks = scandump_all(s.port, "src");
    if chunks.len() < 3 {
        c.fail(format!(
            "expected header + 2 or more layers, got {} chunks",
            chunks.len()
        ));
    }
    for (i, (it, data)) in chunks.iter().enumerate() {
        let resp3 = i % 2 == 1;
        c.check_bytes(
            resp3,
            args![b"BF.LOADCHUNK", b"dst", it.to_string().as_bytes(), data],
            b"+OK\r\n",
        );
    }
    let again = scandump_all(s.port, "dst");
    if again != chunks {
        c.fail("SCANDUMP of the restored key differs from the source".into());
    }
    let info_src = c.q(false, "BF.INFO src");
    c.is("BF.INFO dst", std::str::from_utf8(&info_src).unwrap());
    let dbg_src = c.q(false, "BF.DEBUG src");
    c.is("BF.DEBUG dst", std::str::from_utf8(&dbg_src).unwrap());
    c.is(with_items("BF.MEXISTS", "dst", &items), &ints(&[1; 60]));
    c.check_bytes(false, r#"BF.EXISTS dst "\x00\xff\x00binary""#, b":1\r\n");
    // The MADD reply counted each item as new (no false positive for these names).
    if added != ints(&[1; 60]).as_bytes() {
        c.fail(format!(
            "BF.MADD src n0..n59: expected 60 x :1, got {}",
            show(&added)
        ));
    }
    c.is("BF.CARD dst", ":61\r\n");
    // The restored filter keeps scaling with its expansion.
    c.is("BF.INFO dst EXPANSION", &ints(&[3]));
}

// ------------------------------------------------------------------------------------------
// MULTI/EXEC, Lua, and what a client library sees
// ------------------------------------------------------------------------------------------

#[test]
fn commands_inside_multi_exec() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut c = RawConn::new(s.port, resp3);
        let k = if resp3 { "t3" } else { "t2" };
        let st = if resp3 { "s3" } else { "s2" };
        assert_eq!(c.sends(&["SET", st, "v"]), b"+OK\r\n");
        assert_eq!(c.sends(&["MULTI"]), b"+OK\r\n");
        let queued: Vec<Vec<u8>> = vec![
            c.sends(&["BF.RESERVE", k, "0.01", "100"]),
            c.sends(&["BF.ADD", k, "a"]),
            c.sends(&["BF.EXISTS", k, "a"]),
            c.sends(&["BF.MADD", k, "a", "b"]),
            c.sends(&["BF.INFO", k, "ITEMS"]),
            c.sends(&["BF.ADD", st, "x"]),
            c.sends(&["BF.RESERVE", k, "0.01", "100"]),
            c.sends(&["BF.CARD", k]),
        ];
        for q in &queued {
            assert_eq!(q, b"+QUEUED\r\n", "resp3={resp3}: {}", show(q));
        }
        let got = c.sends(&["EXEC"]);
        let want = if resp3 {
            arr(&[
                OK,
                T,
                T,
                &bools(&[false, true]),
                &info1(true, "Number of items inserted", Some(2)),
                WRONGTYPE,
                "-ERR item exists\r\n",
                ":2\r\n",
            ])
        } else {
            arr(&[
                OK,
                ":1\r\n",
                ":1\r\n",
                &ints(&[0, 1]),
                &ints(&[2]),
                WRONGTYPE,
                "-ERR item exists\r\n",
                ":2\r\n",
            ])
        };
        assert_eq!(
            show(&got),
            show(want.as_bytes()),
            "EXEC reply (resp3={resp3})"
        );
    }
}

#[test]
fn commands_inside_lua_scripts() {
    let (_s, mut c) = Ck::start();
    let ev = |script: &'static str, keys: &[&'static str], argv: &[&'static str]| {
        let mut v = vec!["EVAL", script];
        v.push(["0", "1", "2"][keys.len()]);
        v.extend_from_slice(keys);
        v.extend_from_slice(argv);
        v
    };
    c.is(
        ev(
            "return redis.call('BF.RESERVE',KEYS[1],'0.01','100')",
            &["lk"],
            &[],
        ),
        OK,
    );
    let add = ev(
        "return redis.call('BF.ADD',KEYS[1],ARGV[1])",
        &["lk"],
        &["a"],
    );
    c.is(&add, ":1\r\n");
    c.is(&add, ":0\r\n");
    c.is(
        ev("return redis.call('BF.MADD',KEYS[1],'a','b')", &["lk"], &[]),
        &ints(&[0, 1]),
    );
    c.is(
        ev(
            "return redis.call('BF.MEXISTS',KEYS[1],'a','zz','b')",
            &["lk"],
            &[],
        ),
        &ints(&[1, 0, 1]),
    );
    c.is(
        ev("return redis.call('BF.INFO',KEYS[1])", &["lk"], &[]),
        &info(false, 100, 240, 1, 2, Some(2)),
    );
    c.is(
        ev("return redis.call('BF.CARD',KEYS[1])", &["lk"], &[]),
        ":2\r\n",
    );
    // Error texts reach scripts unchanged (including the trailing space).
    c.is(
        ev(
            "return redis.pcall('BF.RESERVE',KEYS[1],'2','100')['err']",
            &["lk2"],
            &[],
        ),
        &bulk(by_line::RESERVE_ERROR_RANGE.text()),
    );
    c.is(
        ev(
            "return redis.pcall('BF.INSERT',KEYS[1],'CAPACITY','x','ITEMS','a')['err']",
            &["lk2"],
            &[],
        ),
        &bulk("Bad capacity"),
    );
    c.is(
        ev(
            "return redis.pcall('BF.INFO',KEYS[1])['err']",
            &["lk2"],
            &[],
        ),
        &bulk("ERR not found"),
    );
    c.absent("lk2");
    // The "full" error inside a MADD array becomes an error table element on Redis; Valkey
    // turns a reply array holding an error into that error (redis.pcall returns it as an
    // error table; redis.call raises it).
    if by_line::valkey() {
        c.is(
            ev(
                "redis.call('BF.RESERVE',KEYS[1],'0.01','2','NONSCALING') \
                 local r=redis.pcall('BF.MADD',KEYS[1],'a','b','c','d') \
                 return {redis.call('BF.CARD',KEYS[1]), r['err']}",
                &["lk3"],
                &[],
            ),
            &arr(&[":2\r\n", &bulk("ERR non scaling filter is full")]),
        );
    } else {
        c.is(
            ev(
                "redis.call('BF.RESERVE',KEYS[1],'0.01','2','NONSCALING') \
                 local r=redis.call('BF.MADD',KEYS[1],'a','b','c','d') \
                 return {#r, r[1], r[2], r[3]['err']}",
                &["lk3"],
                &[],
            ),
            &arr(&[
                ":3\r\n",
                ":1\r\n",
                ":1\r\n",
                &bulk("ERR non scaling filter is full"),
            ]),
        );
    }
    // RESP2 scripts see numbers; after redis.setresp(3) the module's booleans.
    c.is(
        ev(
            "return type(redis.call('BF.EXISTS',KEYS[1],'a'))",
            &["lk"],
            &[],
        ),
        &bulk("number"),
    );
    c.is(
        ev(
            "redis.setresp(3) local r=redis.call('BF.EXISTS',KEYS[1],'a') \
             if r==true then return 'TRUE' end return type(r)",
            &["lk"],
            &[],
        ),
        &bulk("TRUE"),
    );
    // RESP3 map in Lua: {map={[{ok='Capacity'}]=100}} (simple-string keys become status tables).
    c.is(
        ev(
            "redis.setresp(3) local r=redis.call('BF.INFO',KEYS[1],'CAPACITY') \
             local out={} for k,v in pairs(r['map']) do out[#out+1]=k['ok'] out[#out+1]=v end \
             return out",
            &["lk"],
            &[],
        ),
        &arr(&[&bulk("Capacity"), ":100\r\n"]),
    );
    // SCANDUMP / LOADCHUNK from a script.
    c.is(
        ev(
            "local it=0 local n=0 while true do local r=redis.call('BF.SCANDUMP',KEYS[1],it) \
             it=r[1] if it==0 then if r[2]~='' then return 'BAD_FINAL' end break end \
             redis.call('BF.LOADCHUNK',KEYS[2],it,r[2]) n=n+1 end return n",
            &["lk", "lkcopy"],
            &[],
        ),
        ":2\r\n",
    );
    c.is("BF.MEXISTS lkcopy a b", &ints(&[1, 1]));
    c.is("BF.INFO lkcopy", &info(false, 100, 240, 1, 2, Some(2)));
    // Wrong type through pcall.
    c.is("SET str v", OK);
    c.is(
        ev(
            "return redis.pcall('BF.ADD',KEYS[1],'x')['err']",
            &["str"],
            &[],
        ),
        &bulk("WRONGTYPE Operation against a key holding the wrong kind of value"),
    );
}

#[test]
fn redis_crate_client_view() {
    use redis::Value;
    let s = Server::start();
    let mut c2 = s.conn();
    let mut c3 = s.conn3();
    let v: Value = common::cmd("BF.ADD k a").query(&mut c2).unwrap();
    assert_eq!(v, Value::Int(1));
    let v: Value = common::cmd("BF.ADD k a").query(&mut c3).unwrap();
    assert_eq!(v, Value::Boolean(false));
    let v: Value = common::cmd("BF.EXISTS k a").query(&mut c3).unwrap();
    assert_eq!(v, Value::Boolean(true));
    let v: Value = common::cmd("BF.MEXISTS k a zz").query(&mut c3).unwrap();
    assert_eq!(
        v,
        Value::Array(vec![Value::Boolean(true), Value::Boolean(false)])
    );
    let b: bool = common::cmd("BF.EXISTS k a").query(&mut c3).unwrap();
    assert!(b);
    let n: i64 = common::cmd("BF.CARD k").query(&mut c2).unwrap();
    assert_eq!(n, 1);
    // BF.INFO as a map in RESP3, pairs in RESP2.
    let m: std::collections::HashMap<String, Option<i64>> =
        common::cmd("BF.INFO k").query(&mut c3).unwrap();
    let mut want = std::collections::HashMap::new();
    for (name, v) in INFO_NAMES.iter().zip([100, 240, 1, 1, 2]) {
        want.insert(name.to_string(), Some(v));
    }
    assert_eq!(m, want);
    let v: Value = common::cmd("BF.INFO k").query(&mut c2).unwrap();
    match v {
        Value::Array(items) => {
            assert_eq!(items.len(), 10);
            assert_eq!(items[0], Value::SimpleString("Capacity".into()));
            assert_eq!(items[1], Value::Int(100));
            assert_eq!(items[9], Value::Int(2));
        }
        other => panic!("BF.INFO RESP2: expected an array, got {other:?}"),
    }
    // Top-level errors surface with their text.
    let e = common::cmd("BF.INFO missing")
        .query::<Value>(&mut c2)
        .unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    // SCANDUMP final reply: [0, ""] with an empty bulk string, not nil.
    let v: Value = common::cmd("BF.SCANDUMP k 145").query(&mut c3).unwrap();
    assert_eq!(
        v,
        Value::Array(vec![Value::Int(0), Value::BulkString(vec![])])
    );
}
