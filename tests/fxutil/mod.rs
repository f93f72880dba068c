//! Helpers shared by `tests/bloom_fixtures.rs`, `tests/bloom_legacy.rs`, `tests/bloom_malformed.rs`,
//! `tests/hostile.rs` and `tests/bloom_cases.rs` (its RESP client):
//! a raw pipelining RESP2/RESP3 client, a launcher for redis-server on a prepared directory,
//! Redis' CRC64, an RDB module-value / DUMP-payload builder, C's `%g`, and an independent
//! model of RedisBloom's filter written from `docs/format.md` (`docs/format.md` ("Hashing") hashing,
//! `docs/format.md` ("Layer sizing") sizing, `docs/format.md` ("The chain") chain, `docs/format.md` ("SCANDUMP header") header, `docs/format.md` ("RDB value") RDB value). Nothing here calls the module's code
//! except the two hash functions (`murmur64a`, `murmur2_32`), which are pinned against the
//! spec's check values by [`check_hash_functions`].
#![allow(dead_code)]

pub use super::common::crc64;
use crate::common;
use redis_bf::bloom::hash::{murmur2_32, murmur64a};
pub use redis_bf::module::bloom::commands::info::format_g;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------------------ bytes

/// Lower-case hex of `data`.
pub fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string.
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// sha256 of `data`, lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// Builds an argument vector from byte-like parts.
pub fn args<const N: usize>(parts: [&[u8]; N]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// Readable form of raw bytes for assertion messages (truncated).
pub fn show(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(&raw[..raw.len().min(300)]).into_owned();
    if raw.len() > 300 {
        format!("{s}…({} bytes)", raw.len())
    } else {
        s
    }
}

// ------------------------------------------------------------------------------ RESP

/// A parsed RESP2/RESP3 value.
#[derive(Debug, Clone, PartialEq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Resp>),
    Map(Vec<(Resp, Resp)>),
    Bool(bool),
    Other(String),
}

impl Resp {
    pub fn int(&self) -> i64 {
        match self {
            Resp::Int(i) => *i,
            other => panic!("expected an integer, got {other:?}"),
        }
    }
    pub fn bulk(&self) -> &[u8] {
        match self {
            Resp::Bulk(b) => b,
            other => panic!("expected a bulk string, got {other:?}"),
        }
    }
    pub fn array(&self) -> &[Resp] {
        match self {
            Resp::Array(a) => a,
            other => panic!("expected an array, got {other:?}"),
        }
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Error(_))
    }
}

/// One reply: its exact bytes and its parsed value.
#[derive(Debug, Clone)]
pub struct Reply {
    pub raw: Vec<u8>,
    pub val: Resp,
}

/// Parses the complete value at `pos`; None when more bytes are needed.
fn parse(buf: &[u8], pos: usize) -> Option<(Resp, usize)> {
    let line_end = pos + buf.get(pos..)?.windows(2).position(|w| w == b"\r\n")?;
    let head = buf[pos];
    let body = std::str::from_utf8(&buf[pos + 1..line_end]).expect("utf-8 RESP header");
    let after = line_end + 2;
    let num = || body.parse::<i64>().expect("RESP number");
    Some(match head {
        b'+' => (Resp::Simple(body.to_string()), after),
        b'-' => (Resp::Error(body.to_string()), after),
        b':' => (Resp::Int(num()), after),
        b'_' => (Resp::Nil, after),
        b'#' => (Resp::Bool(body == "t"), after),
        b',' | b'(' => (Resp::Other(body.to_string()), after),
        b'$' | b'=' | b'!' => {
            let n = num();
            if n < 0 {
                (Resp::Nil, after)
            } else {
                let end = after + n as usize;
                if buf.len() < end + 2 {
                    return None;
                }
                (Resp::Bulk(buf[after..end].to_vec()), end + 2)
            }
        }
        b'*' | b'~' | b'>' => {
            let n = num();
            if n < 0 {
                return Some((Resp::Nil, after));
            }
            let mut p = after;
            let mut items = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (v, next) = parse(buf, p)?;
                items.push(v);
                p = next;
            }
            (Resp::Array(items), p)
        }
        b'%' | b'|' => {
            let n = num();
            let mut p = after;
            let mut pairs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (k, next) = parse(buf, p)?;
                let (v, next) = parse(buf, next)?;
                pairs.push((k, v));
                p = next;
            }
            (Resp::Map(pairs), p)
        }
        other => panic!("unexpected RESP type byte {other:#x}"),
    })
}

/// Encodes one command as a RESP array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A raw RESP connection that keeps reply bytes exactly as the server sent them.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

impl Conn {
    /// A RESP2 connection.
    pub fn new(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// A RESP3 connection (HELLO 3 sent and its reply discarded).
    pub fn resp3(port: u16) -> Conn {
        let mut c = Conn::new(port);
        let r = c.cmd(&[&b"HELLO"[..], b"3"]);
        assert!(matches!(r.val, Resp::Map(_)), "HELLO 3: {}", show(&r.raw));
        c
    }

    fn read_reply(&mut self) -> Reply {
        loop {
            if let Some((val, end)) = parse(&self.buf, self.pos) {
                let raw = self.buf[self.pos..end].to_vec();
                self.pos = end;
                if self.pos == self.buf.len() {
                    self.buf.clear();
                    self.pos = 0;
                }
                return Reply { raw, val };
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let mut tmp = vec![0u8; 1 << 20];
            let n = self.stream.read(&mut tmp).expect("read reply");
            assert!(n > 0, "connection closed by the server");
            self.buf.extend_from_slice(&tmp[..n]);
        }
    }

    /// Sends one command and returns its reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        self.stream.write_all(&encode_command(args)).expect("send");
        self.read_reply()
    }

    /// Sends every command, then reads every reply (one round trip for the batch).
    pub fn pipe<A: AsRef<[u8]>>(&mut self, cmds: &[Vec<A>]) -> Vec<Reply> {
        let mut out = Vec::new();
        for c in cmds {
            out.extend_from_slice(&encode_command(c));
        }
        self.stream.write_all(&out).expect("send pipeline");
        (0..cmds.len()).map(|_| self.read_reply()).collect()
    }

    /// PING must answer +PONG.
    pub fn assert_ping(&mut self) {
        let r = self.cmd(&[b"PING"]);
        assert_eq!(r.raw, b"+PONG\r\n", "PING");
    }

    /// EXISTS of one key (0 or 1).
    pub fn exists(&mut self, key: &[u8]) -> i64 {
        self.cmd(&[&b"EXISTS"[..], key]).val.int()
    }
}

// ------------------------------------------------------------------------------ servers

/// A redis-server with the module loaded, running on a directory the test prepared (e.g. with
/// a copy of `dump.rdb` or `appendonlydir/`). Killed on drop; the directory is removed with
/// its TempDir.
pub struct DirServer {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Option<Child>,
}

impl DirServer {
    /// An empty temporary directory for a server.
    pub fn tempdir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("redis-bf-fx")
            .tempdir()
            .unwrap()
    }

    /// Starts redis-server on `dir` with the module and `extra` arguments (`--name value`
    /// pairs), and waits until it answers PING (i.e. loading is over).
    pub fn start(dir: tempfile::TempDir, extra: &[&str]) -> DirServer {
        DirServer::start_on(&common::server_binary(), dir, extra)
    }

    /// [`DirServer::start`] with the server binary `bin`.
    pub fn start_on(bin: &str, mut dir: tempfile::TempDir, extra: &[&str]) -> DirServer {
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = common::free_port();
            let log = dir.path().join("server.log");
            let mut cmd = common::server_command(bin, port, dir.path(), Some(&log));
            cmd.args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().expect("cannot start redis-server");
            let mut s = DirServer {
                port,
                dir,
                child: Some(child),
            };
            if s.wait_ready() {
                return s;
            }
            last_log = s.log();
            s.stop();
            dir = s.take_dir();
        }
        panic!("redis-server did not start; log:\n{last_log}");
    }

    fn take_dir(mut self) -> tempfile::TempDir {
        self.stop();
        let placeholder = DirServer::tempdir();
        std::mem::replace(&mut self.dir, placeholder)
    }

    fn wait_ready(&mut self) -> bool {
        // Make sure the server on this port is ours (not one another test started on the same
        // port while ours failed to bind).
        crate::common::wait_pong(&mut self.child, self.port, Duration::from_secs(60))
            && self.is_alive()
            && self.serves_our_dir()
    }

    fn serves_our_dir(&self) -> bool {
        let mut c = Conn::new(self.port);
        let r = c.cmd(&[&b"CONFIG"[..], b"GET", b"dir"]);
        let ours = std::fs::canonicalize(self.dir.path()).unwrap_or_default();
        match &r.val {
            Resp::Array(a) if a.len() == 2 => {
                let Resp::Bulk(d) = &a[1] else { return false };
                let theirs =
                    std::fs::canonicalize(String::from_utf8_lossy(d).as_ref()).unwrap_or_default();
                theirs == ours
            }
            _ => false,
        }
    }

    /// True while the process runs.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// A RESP2 connection.
    pub fn conn(&self) -> Conn {
        Conn::new(self.port)
    }

    /// A RESP3 connection.
    pub fn conn3(&self) -> Conn {
        Conn::resp3(self.port)
    }

    /// The server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Path inside the server's directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn stop(&mut self) {
        crate::common::stop_child(&mut self.child);
    }
}

impl Drop for DirServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies a directory tree (files are made writable: the copy is the server's to change).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::write(&dst, std::fs::read(e.path()).unwrap()).unwrap();
        }
    }
}

/// Waits until no AOF rewrite is running or scheduled.
pub fn wait_aof_rewrite_idle(c: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = c.cmd(&[&b"INFO"[..], b"persistence"]);
        let text = String::from_utf8_lossy(info.val.bulk()).into_owned();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        if field("aof_rewrite_in_progress") == "0" && field("aof_rewrite_scheduled") == "0" {
            assert_eq!(field("aof_last_bgrewrite_status"), "ok", "{text}");
            return;
        }
        assert!(Instant::now() < deadline, "AOF rewrite did not finish");
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// The base file named by an AOF manifest (`file <name> seq <n> type b`).
pub fn manifest_base(manifest: &str) -> String {
    manifest
        .lines()
        .find(|l| l.trim_end().ends_with("type b"))
        .and_then(|l| l.split_whitespace().nth(1))
        .expect("manifest names a base file")
        .to_string()
}

/// Runs BGREWRITEAOF on a server started with `--appendonly yes --appenddirname appendonlydir`
/// and returns the new base file's bytes.
pub fn rewrite_aof(server: &DirServer, c: &mut Conn) -> Vec<u8> {
    let manifest_path = server.path("appendonlydir/appendonly.aof.manifest");
    wait_aof_rewrite_idle(c);
    let before = std::fs::read_to_string(&manifest_path).unwrap_or_default();
    let r = c.cmd(&[b"BGREWRITEAOF"]);
    assert!(!r.val.is_error(), "BGREWRITEAOF: {}", show(&r.raw));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        wait_aof_rewrite_idle(c);
        let now = std::fs::read_to_string(&manifest_path).unwrap_or_default();
        if now != before && !now.is_empty() {
            let base = manifest_base(&now);
            return std::fs::read(server.path(&format!("appendonlydir/{base}"))).unwrap();
        }
        assert!(Instant::now() < deadline, "manifest did not change");
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Parses a plain (no RDB preamble) AOF file into commands.
pub fn parse_aof(data: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut cmds = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        match parse(data, pos) {
            Some((Resp::Array(items), next)) => {
                cmds.push(items.iter().map(|i| i.bulk().to_vec()).collect());
                pos = next;
            }
            other => panic!("AOF at byte {pos} is not a command: {other:?}"),
        }
    }
    cmds
}

// ------------------------------------------------------------------------------ CRC64

/// Appends Redis' DUMP footer to an RDB object: 2-byte RDB version then CRC64 (little-endian)
/// of everything before the CRC.
pub fn dump_payload(object: &[u8], rdb_version: [u8; 2]) -> Vec<u8> {
    let mut p = object.to_vec();
    p.extend_from_slice(&rdb_version);
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// Replaces the CRC of a DUMP payload whose body (everything before the last 10 bytes) was
/// edited: `body` + version + fresh CRC.
pub fn refooter(body: &[u8], rdb_version: [u8; 2]) -> Vec<u8> {
    dump_payload(body, rdb_version)
}

/// Reads the RDB version the server writes, from the DUMP of a fresh string key, and checks
/// [`crc64`] against that real payload's CRC.
pub fn server_rdb_version(c: &mut Conn) -> [u8; 2] {
    let key = b"__fxutil_rdbver";
    assert_eq!(c.cmd(&[&b"SET"[..], key, b"value"]).raw, b"+OK\r\n");
    let d = c.cmd(&[&b"DUMP"[..], key]).val.bulk().to_vec();
    c.cmd(&[&b"DEL"[..], key]);
    let n = d.len();
    assert!(n > 10);
    let crc = u64::from_le_bytes(d[n - 8..].try_into().unwrap());
    assert_eq!(
        crc64(&d[..n - 8]),
        crc,
        "our CRC64 disagrees with the server's on {}",
        hex(&d)
    );
    [d[n - 10], d[n - 9]]
}

// ------------------------------------------------------------------------------ RDB value

/// The module type id of `MBbloom--` with encoding version 4, as stored in RDB / DUMP.
pub const MODULE_ID_V4: u64 = 0x3016_e5a2_89be_f804;

/// The module type id with another encoding version in its low 10 bits.
pub fn module_id(encver: u64) -> u64 {
    (MODULE_ID_V4 & !0x3ff) | encver
}

/// RDB length encoding (6-bit, 14-bit, 32-bit or 64-bit form, big-endian).
pub fn rdb_len(v: u64) -> Vec<u8> {
    if v < 1 << 6 {
        vec![v as u8]
    } else if v < 1 << 14 {
        vec![0x40 | (v >> 8) as u8, v as u8]
    } else if v <= u64::from(u32::MAX) {
        let mut o = vec![0x80];
        o.extend_from_slice(&(v as u32).to_be_bytes());
        o
    } else {
        let mut o = vec![0x81];
        o.extend_from_slice(&v.to_be_bytes());
        o
    }
}

/// Builder of an RDB_TYPE_MODULE_2 object (type byte 7, module id, opcode-tagged values).
#[derive(Clone, Debug)]
pub struct ModuleValue {
    pub bytes: Vec<u8>,
}

impl ModuleValue {
    /// Type 7 + 64-bit length form (0x81) + the 8-byte big-endian module id.
    pub fn new(encver: u64) -> ModuleValue {
        ModuleValue::with_id(module_id(encver))
    }
    pub fn with_id(id: u64) -> ModuleValue {
        let mut bytes = vec![7u8, 0x81];
        bytes.extend_from_slice(&id.to_be_bytes());
        ModuleValue { bytes }
    }
    /// Opcode 2 + RDB length.
    pub fn u(&mut self, v: u64) -> &mut Self {
        self.bytes.push(2);
        self.bytes.extend(rdb_len(v));
        self
    }
    /// Opcode 4 + 8-byte little-endian double.
    pub fn d(&mut self, v: f64) -> &mut Self {
        self.bytes.push(4);
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Opcode 5 + uncompressed RDB string.
    pub fn s(&mut self, v: &[u8]) -> &mut Self {
        self.bytes.push(5);
        self.bytes.extend(rdb_len(v.len() as u64));
        self.bytes.extend_from_slice(v);
        self
    }
    /// Opcode 5 + a string header announcing `len` bytes followed by `data` (may be shorter).
    pub fn s_declared(&mut self, len: u64, data: &[u8]) -> &mut Self {
        self.bytes.push(5);
        self.bytes.extend(rdb_len(len));
        self.bytes.extend_from_slice(data);
        self
    }
    /// Opcode 0 (EOF).
    pub fn eof(&mut self) -> &mut Self {
        self.bytes.push(0);
        self
    }
}

// ------------------------------------------------------------------------------ %g

// ------------------------------------------------------------------------------ model

/// ln 2 and (ln 2)² exactly as RedisBloom's source spells them (`docs/format.md` ("Layer sizing")).
#[allow(clippy::approx_constant)]
pub const LN2: f64 = 0.693147180559945;
pub const LN2_SQUARED: f64 = 0.480453013918201;
pub const NOROUND: u32 = 1;
pub const FORCE64: u32 = 4;
pub const NO_SCALING: u32 = 8;

/// The hash functions must give the spec's check values (`docs/format.md` ("Hashing", "Legacy 32-bit hash")) before the model
/// relies on them.
pub fn check_hash_functions() {
    // (input, MurmurHash64A of it with the seed, then with that hash as the seed)
    for (input, h1, h2) in [
        (&b"hello"[..], 0x5ba5b8a59803e699, 0xa7d451d588a0c2a4),
        (b"", 0x1ab11ea5a7b2c56e, 0xbbddcb5ab56dd547),
    ] {
        assert_eq!(murmur64a(input, 0xc6a4a7935bd1e995), h1);
        assert_eq!(murmur64a(input, h1), h2);
    }
    // (input, MurmurHash2 of it with the seed, then with that hash as the seed)
    for (input, h1, h2) in [
        (&b"hello"[..], 0x7f1ddbbd, 0xed999d2d),
        (b"", 0x106e08d9, 0x456d9087),
    ] {
        assert_eq!(murmur2_32(input, 0x9747b28c), h1);
        assert_eq!(murmur2_32(input, h1), h2);
    }
}

/// (a, b) of an item: MurmurHash64A pair when FORCE64 is set, else the MurmurHash2 pair
/// zero-extended (`docs/format.md` ("Hashing", "Legacy 32-bit hash")).
pub fn hash_pair(item: &[u8], options: u32) -> (u64, u64) {
    if options & FORCE64 != 0 {
        let a = murmur64a(item, 0xc6a4a7935bd1e995);
        (a, murmur64a(item, a))
    } else {
        let a = murmur2_32(item, 0x9747b28c);
        (u64::from(a), u64::from(murmur2_32(item, a)))
    }
}

/// One layer of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct MLayer {
    pub entries: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    pub bits: u64,
    pub bytes: u64,
    pub n2: u8,
    pub size: u64,
    pub data: Vec<u8>,
}

impl MLayer {
    /// Sizes a layer per `docs/format.md` ("Exact-size layers") (NOROUND) or `docs/format.md` ("Power-of-two layers") (power of two), zeroed bit array.
    pub fn sized(capacity: u64, error: f64, options: u32) -> MLayer {
        assert!(capacity >= 1 && error > 0.0 && error < 1.0);
        let bpe = (error.ln() / LN2_SQUARED).abs();
        let hashes = (LN2 * bpe).ceil() as u32;
        let product = capacity as f64 * bpe;
        let (entries, n2, raw_bits) = if options & NOROUND != 0 {
            (capacity, 0u8, ((product as u64).max(1)))
        } else {
            // logb: the unbiased binary exponent of the (normal, positive) f64 product.
            let exponent = ((product.to_bits() >> 52) & 0x7ff) as i64 - 1023;
            let n2 = exponent + 1;
            assert!((1..=63).contains(&n2));
            let pow = 1u64 << n2;
            let extra = (((pow as f64 - product) as u64) as f64 / bpe) as u64;
            (capacity + extra, n2 as u8, pow)
        };
        let bytes = raw_bits.div_ceil(64) * 8;
        MLayer {
            entries,
            error,
            bpe,
            hashes,
            bits: bytes * 8,
            bytes,
            n2,
            size: 0,
            data: vec![0; bytes as usize],
        }
    }

    /// Modulus of positions: 2^n2 or bits.
    pub fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits
        }
    }

    /// Bit positions of a hash pair in this layer (`docs/format.md` ("Bit positions")).
    pub fn positions(&self, (a, b): (u64, u64)) -> Vec<u64> {
        let m = self.modulus();
        (0..u64::from(self.hashes))
            .map(|i| a.wrapping_add(i.wrapping_mul(b)) % m)
            .collect()
    }

    pub fn contains(&self, h: (u64, u64)) -> bool {
        self.positions(h)
            .iter()
            .all(|&x| self.data[(x / 8) as usize] & (1 << (x % 8)) != 0)
    }

    pub fn set(&mut self, h: (u64, u64)) {
        for x in self.positions(h) {
            self.data[(x / 8) as usize] |= 1 << (x % 8);
        }
    }

    /// The BF.DEBUG line of this layer (`docs/commands.md` ("BF.DEBUG")).
    pub fn debug_line(&self, options: u32) -> String {
        format!(
            "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
            self.bytes,
            self.bits,
            self.hashes,
            if options & FORCE64 != 0 { 64 } else { 32 },
            self.entries,
            self.size,
            format_g(self.error)
        )
    }
}

/// What adding one item to the model did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MAdd {
    Added,
    Exists,
    Full,
}

/// A chain of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct MChain {
    pub size: u64,
    pub options: u32,
    pub growth: u32,
    pub layers: Vec<MLayer>,
}

impl MChain {
    pub fn contains(&self, item: &[u8]) -> bool {
        let h = hash_pair(item, self.options);
        self.layers.iter().rev().any(|l| l.contains(h))
    }

    /// `docs/format.md` ("The chain"): exists → nothing; newest full → refuse (non-scaling) or append a layer of
    /// entries × growth at half the error; then set the bits and count.
    pub fn add(&mut self, item: &[u8]) -> MAdd {
        let h = hash_pair(item, self.options);
        if self.layers.iter().rev().any(|l| l.contains(h)) {
            return MAdd::Exists;
        }
        let last = self.layers.last().unwrap();
        if last.size >= last.entries {
            if self.options & NO_SCALING != 0 {
                return MAdd::Full;
            }
            let next = MLayer::sized(
                last.entries * u64::from(self.growth),
                last.error * 0.5,
                self.options,
            );
            self.layers.push(next);
        }
        let last = self.layers.last_mut().unwrap();
        last.set(h);
        last.size += 1;
        self.size += 1;
        MAdd::Added
    }

    /// The SCANDUMP header (`docs/format.md` ("SCANDUMP header")).
    pub fn header(&self) -> Vec<u8> {
        header_bytes(
            self.size,
            self.layers.len() as u32,
            self.options,
            self.growth,
            &self.layers,
        )
    }

    /// The SCANDUMP walk after the header: (iter, next_iter, chunk) per layer, then the end.
    pub fn walk(&self) -> Vec<(i64, i64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut it = 1i64;
        for l in &self.layers {
            let next = it + l.data.len() as i64;
            out.push((it, next, l.data.clone()));
            it = next;
        }
        out.push((it, 0, Vec::new()));
        out
    }

    /// BF.DEBUG lines (`docs/commands.md` ("BF.DEBUG")).
    pub fn debug_lines(&self) -> Vec<String> {
        let mut v = vec![format!("size:{}", self.size)];
        v.extend(self.layers.iter().map(|l| l.debug_line(self.options)));
        v
    }

    /// Raw RESP2 BF.DEBUG reply.
    pub fn debug_reply(&self) -> Vec<u8> {
        let lines = self.debug_lines();
        let mut o = format!("*{}\r\n", lines.len()).into_bytes();
        for l in lines {
            o.extend_from_slice(format!("${}\r\n{l}\r\n", l.len()).as_bytes());
        }
        o
    }

    /// Raw RESP2 BF.INFO reply (`docs/commands.md` ("BF.INFO"), memory per `docs/format.md` ("Memory accounting")).
    pub fn info_reply(&self) -> Vec<u8> {
        let cap: u64 = self.layers.iter().map(|l| l.entries).sum();
        let mem: u64 = 32 + self.layers.iter().map(|l| 64 + l.bytes).sum::<u64>();
        let exp = if self.options & NO_SCALING != 0 {
            "$-1\r\n".to_string()
        } else {
            format!(":{}\r\n", self.growth)
        };
        format!(
            "*10\r\n+Capacity\r\n:{cap}\r\n+Size\r\n:{mem}\r\n+Number of filters\r\n:{}\r\n\
             +Number of items inserted\r\n:{}\r\n+Expansion rate\r\n{exp}",
            self.layers.len(),
            self.size
        )
        .into_bytes()
    }

    /// The encoding-version-4 RDB module value (`docs/format.md` ("RDB value")), strings uncompressed.
    pub fn rdb_v4(&self) -> ModuleValue {
        let mut v = ModuleValue::new(4);
        v.u(self.size)
            .u(self.layers.len() as u64)
            .u(u64::from(self.options))
            .u(u64::from(self.growth));
        for l in &self.layers {
            v.u(l.entries)
                .d(l.error)
                .u(u64::from(l.hashes))
                .d(l.bpe)
                .u(l.bits)
                .u(u64::from(l.n2))
                .s(&l.data)
                .u(l.size);
        }
        v.eof();
        v
    }
}

/// Asserts the server's SCANDUMP walk of `key` equals the model's header and chunks.
pub fn assert_scandump_eq(c: &mut Conn, key: &[u8], m: &MChain, what: &str) {
    let r = c.cmd(&[&b"BF.SCANDUMP"[..], key, b"0"]);
    let a = r.val.array();
    assert_eq!(a[0].int(), 1, "{what}: SCANDUMP 0 iterator");
    assert_eq!(hex(a[1].bulk()), hex(&m.header()), "{what}: header");
    for (it, next, data) in m.walk() {
        let r = c.cmd(&[&b"BF.SCANDUMP"[..], key, it.to_string().as_bytes()]);
        let a = r.val.array();
        assert_eq!(a[0].int(), next, "{what}: SCANDUMP {it} next iterator");
        if a[1].bulk() != data.as_slice() {
            let diff: Vec<usize> = (0..data.len())
                .filter(|&i| a[1].bulk().get(i) != data.get(i))
                .take(20)
                .collect();
            panic!(
                "{what}: SCANDUMP {it}: chunk differs from the model (len {} vs {}), first differing bytes {diff:?}",
                a[1].bulk().len(),
                data.len()
            );
        }
    }
}

/// LOADCHUNK commands that recreate `m` under `key` (header, then one chunk per layer).
pub fn loadchunk_commands(key: &[u8], m: &MChain) -> Vec<Vec<Vec<u8>>> {
    let mut v = vec![args([b"BF.LOADCHUNK", key, b"1", &m.header()])];
    for (_, next, data) in m.walk() {
        if !data.is_empty() {
            v.push(args([
                b"BF.LOADCHUNK",
                key,
                next.to_string().as_bytes(),
                &data,
            ]));
        }
    }
    v
}

/// The model of golden vector GV2: `BF.RESERVE 0.1 4 EXPANSION 3` + a..l: layers of 8 and 16 bytes.
pub fn gv2_model() -> MChain {
    let mut m = MChain {
        size: 0,
        options: 5,
        growth: 3,
        layers: vec![MLayer::sized(4, 0.05, 5)],
    };
    for x in b'a'..=b'l' {
        assert_eq!(m.add(&[x]), MAdd::Added);
    }
    assert_eq!(
        hex(&m.header()),
        "0c000000000000000200000005000000030000000800000000000000400000000000000004000000000000009a999999\
         9999a93f4af7d49edef01840050000000400000000000000001000000000000000800000000000000008000000000000\
         009a9999999999993f0bd81f7830b61e40060000000c0000000000000000"
    );
    m
}

// ------------------------------------------------------------------------------ headers

/// A SCANDUMP header's fields, with any values (also invalid ones): `nfilters` may differ
/// from `layers.len()`; the layers' `data` is not part of it (left empty by [`parse_header`]).
#[derive(Clone, Debug)]
pub struct Header {
    pub size: u64,
    pub nfilters: u32,
    pub options: u32,
    pub growth: u32,
    pub layers: Vec<MLayer>,
}

/// Reads a well-formed SCANDUMP header (panics on a short one).
pub fn parse_header(h: &[u8]) -> Header {
    let u64_at = |p: usize| u64::from_le_bytes(h[p..p + 8].try_into().unwrap());
    let u32_at = |p: usize| u32::from_le_bytes(h[p..p + 4].try_into().unwrap());
    let nfilters = u32_at(8);
    let layers = (0..nfilters as usize)
        .map(|i| {
            let b = 20 + 53 * i;
            MLayer {
                bytes: u64_at(b),
                bits: u64_at(b + 8),
                size: u64_at(b + 16),
                error: f64::from_bits(u64_at(b + 24)),
                bpe: f64::from_bits(u64_at(b + 32)),
                hashes: u32_at(b + 40),
                entries: u64_at(b + 44),
                n2: h[b + 52],
                data: Vec::new(),
            }
        })
        .collect();
    Header {
        size: u64_at(0),
        nfilters,
        options: u32_at(12),
        growth: u32_at(16),
        layers,
    }
}

/// Writes a SCANDUMP header from its fields, as they are.
pub fn write_header(h: &Header) -> Vec<u8> {
    header_bytes(h.size, h.nfilters, h.options, h.growth, &h.layers)
}

/// The SCANDUMP header bytes: size, filter count, options, growth, then each layer's
/// 53-byte record (bytes, bits, size, error, bpe, hashes, entries, n2), little-endian.
pub fn header_bytes(
    size: u64,
    nfilters: u32,
    options: u32,
    growth: u32,
    layers: &[MLayer],
) -> Vec<u8> {
    let mut o = Vec::new();
    o.extend_from_slice(&size.to_le_bytes());
    o.extend_from_slice(&nfilters.to_le_bytes());
    o.extend_from_slice(&options.to_le_bytes());
    o.extend_from_slice(&growth.to_le_bytes());
    for l in layers {
        o.extend_from_slice(&l.bytes.to_le_bytes());
        o.extend_from_slice(&l.bits.to_le_bytes());
        o.extend_from_slice(&l.size.to_le_bytes());
        o.extend_from_slice(&l.error.to_le_bytes());
        o.extend_from_slice(&l.bpe.to_le_bytes());
        o.extend_from_slice(&l.hashes.to_le_bytes());
        o.extend_from_slice(&l.entries.to_le_bytes());
        o.push(l.n2);
    }
    o
}
