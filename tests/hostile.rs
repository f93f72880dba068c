//! Hostile and absurd input never takes the server down, for Bloom filters (`MBbloom--`, BF.*)
//! and cuckoo filters (`MBbloomCF`, CF.*) alike: the fuzzes run once per [`Kind`].
//!
//! - `restore_of_mutated_dump_payloads`, `restore_of_mutated_cuckoo_dump_payloads`: 10 000
//!   RESTOREs each of mutated valid DUMP payloads (byte flips, truncations, insertions, huge
//!   lengths, and structure-aware mutations of the module value stream: field values, opcodes,
//!   string lengths, layer or sub-filter counts, encoding versions, and for cuckoo values
//!   consistent reshapes — bucket counts, bucket sizes 0–256, expansions 0–65 535 — with
//!   random fingerprints), each with the CRC64 fixed up so Redis hands it to the module. The
//!   seeds: Bloom filters of several shapes; cuckoo filters with one and several sub-filters,
//!   bucket sizes 1–4 and 255, expansions 0–4 (3 kept by a LOADCHUNK header), full, empty,
//!   with deletions. Each must answer an error or give a valid filter on which every command
//!   of its kind works and which survives DEBUG RELOAD and an AOF rewrite replayed by DEBUG
//!   LOADAOF on a second server, with the same DUMP (`Survival`); PING after every batch;
//!   `used_memory` back at its baseline after FLUSHALL.
//! - `loadchunk_of_mutated_headers_and_chunks`, `cf_loadchunk_of_mutated_headers_and_chunks`:
//!   the same for 10 000 BF.LOADCHUNK / CF.LOADCHUNK headers (random field values incl. huge
//!   sizes and counts, consistent resizes, layer / sub-filter counts up to 65 535, options)
//!   each followed by random chunks/iterators.
//! - `restored_filters_survive_an_aof_rewrite`: RESTOREd Bloom and cuckoo values whose
//!   headers LOADCHUNK treats specially survive a real AOF rewrite and restart, or are refused.
//! - `absurd_sizes_are_errors_not_crashes`: huge capacity, tiny error rates, an expansion that
//!   overflows on growth, 1000+ layers until the error rate underflows, `maxmemory` nearly
//!   reached (Redis' OOM error for deny-oom commands, BF.* and CF.*, refused growth that
//!   changes nothing), and `bf.max-filter-bytes`. `cf_absurd_sizes_are_errors_not_crashes`:
//!   CF.RESERVE / CF.INSERT capacities, bucket sizes, max iterations and expansions out of
//!   range, huge or past 64 bits are RedisBloom's errors and allocate nothing; a growth and a
//!   header past `bf.max-filter-bytes` are refused.
//! - `no_leak_after_10000_filters`: 10 000 filters of mixed sizes, half Bloom, half cuckoo,
//!   created (RESERVE, implicit adds, INSERT, LOADCHUNK, RESTORE, COPY; CF.DEL) and deleted:
//!   `used_memory` back within 1%, INFO bf back to zero; MEMORY USAGE = BF.INFO / CF.INFO
//!   Size + key overhead and Size = 32 + Σ(64 + bytes) / 40 + Σ(16 + table bytes).
//! - `random_commands_never_panic`: a property test (1000 cases; `BF_SOAK=1`: 20 000) driving
//!   every BF and CF command with random arity and random tokens (keywords, numbers, binary,
//!   real headers of both kinds) against a live server, RESP2 and RESP3; after each case PING
//!   answers, the process is alive and no reply is the module's caught-panic error.
//! - `ribbon_hostile_payloads_are_refused`: `bf-ribbon` (RF.*) RF.LOADCHUNK headers of every
//!   wrong length, version, rate, count and shape and chunks in the wrong places answer
//!   `ERR received bad data` and create nothing; 600 truncated or garbled RESTOREs of both
//!   states answer `ERR Bad data format` or give a key every RF command answers.
//!
//! Runs in ~60–90 s. Seeds are printed (`BF_HOSTILE_SEED=…` repeats a run).

mod common;
mod fxutil;
mod robust;

use common::errors::{
    BAD_DATA, BAD_FORMAT, CAUGHT_PANIC, COULD_NOT, FULL, NO_MEMORY, OOM, PROBLEM,
};
use common::{cmd, crc64, rdb_len, scandump, Rng, Server};
use fxutil::{parse_header, write_header, Header, MLayer};
use redis::{Connection, ConnectionLike, Value};
use redis_bf::bloom::cuckoo::dump as cuckoo_dump;
use redis_bf::bloom::cuckoo::Cuckoo;
use redis_bf::bloom::dump::encode_header;
use redis_bf::bloom::layer::{Layer, LayerParams};
use redis_bf::bloom::Chain;
use robust::{info_u64, raw, raw_pipe, value_error};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// `bf.max-filter-bytes` of the fuzzing servers (4 MiB): mutated sizes may allocate up to it.
const FUZZ_FILTER_LIMIT: &str = "4194304";

// ------------------------------------------------------------------------------------------
// CRC64 (Redis' crc64.c: Jones polynomial, reflected, init 0, no final xor).

/// A DUMP payload from a body (type byte + value) and the 2-byte RDB version: appends the
/// version and the CRC64 of everything before it, little-endian.
fn seal(body: &[u8], version: [u8; 2]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version);
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// Splits a payload into (body, version), checking its CRC.
fn unseal(p: &[u8]) -> (Vec<u8>, [u8; 2]) {
    let n = p.len();
    assert!(n > 10);
    assert_eq!(
        crc64(&p[..n - 8]).to_le_bytes(),
        p[n - 8..],
        "CRC64 of a real DUMP payload"
    );
    (p[..n - 10].to_vec(), [p[n - 10], p[n - 9]])
}

// ------------------------------------------------------------------------------------------
// The module value stream inside a DUMP payload (RDB_TYPE_MODULE_2): the module id, then
// (opcode, value) pairs — 2 unsigned (RDB length encoding), 4 double (8 raw bytes),
// 5 string (RDB string) — and opcode 0 (EOF).

fn read_len(b: &[u8], pos: &mut usize) -> Option<(u64, bool)> {
    let first = *b.get(*pos)?;
    *pos += 1;
    Some(match first >> 6 {
        0 => (u64::from(first & 0x3f), false),
        1 => {
            let second = *b.get(*pos)?;
            *pos += 1;
            ((u64::from(first & 0x3f) << 8) | u64::from(second), false)
        }
        2 if first == 0x80 => {
            let v = u32::from_be_bytes(b.get(*pos..*pos + 4)?.try_into().ok()?);
            *pos += 4;
            (u64::from(v), false)
        }
        2 if first == 0x81 => {
            let v = u64::from_be_bytes(b.get(*pos..*pos + 8)?.try_into().ok()?);
            *pos += 8;
            (v, false)
        }
        2 => return None,
        _ => (u64::from(first & 0x3f), true),
    })
}

#[derive(Clone, Debug)]
enum Body {
    Unsigned(u64),
    Double(u64),
    /// A plain string with the length its prefix claims (may differ from the data's).
    Str {
        data: Vec<u8>,
        claimed: u64,
    },
    /// An encoded (integer or LZF) string, kept as raw bytes after the opcode.
    Encoded(Vec<u8>),
    Eof,
}

#[derive(Clone, Debug)]
struct Field {
    opcode: u64,
    body: Body,
}

#[derive(Clone, Debug)]
struct ModuleValue {
    module_id: u64,
    fields: Vec<Field>,
    trailer: Vec<u8>,
}

fn parse_value(body: &[u8]) -> Option<ModuleValue> {
    if body.first() != Some(&7) {
        return None;
    }
    let mut pos = 1;
    let (module_id, _) = read_len(body, &mut pos)?;
    let mut fields = Vec::new();
    loop {
        let (opcode, _) = read_len(body, &mut pos)?;
        let b = match opcode {
            0 => Body::Eof,
            2 => Body::Unsigned(read_len(body, &mut pos)?.0),
            4 => {
                let v = u64::from_le_bytes(body.get(pos..pos + 8)?.try_into().ok()?);
                pos += 8;
                Body::Double(v)
            }
            5 => {
                let start = pos;
                let (len, encoded) = read_len(body, &mut pos)?;
                if encoded {
                    match len {
                        0 => pos += 1,
                        1 => pos += 2,
                        2 => pos += 4,
                        3 => {
                            let (clen, _) = read_len(body, &mut pos)?;
                            read_len(body, &mut pos)?;
                            pos += clen as usize;
                        }
                        _ => return None,
                    }
                    Body::Encoded(body.get(start..pos)?.to_vec())
                } else {
                    let data = body.get(pos..pos + len as usize)?.to_vec();
                    pos += len as usize;
                    Body::Str { data, claimed: len }
                }
            }
            _ => return None,
        };
        let eof = matches!(b, Body::Eof);
        fields.push(Field { opcode, body: b });
        if eof {
            break;
        }
    }
    Some(ModuleValue {
        module_id,
        fields,
        trailer: body[pos..].to_vec(),
    })
}

fn encode_value(v: &ModuleValue) -> Vec<u8> {
    let mut out = vec![7u8];
    rdb_len(&mut out, v.module_id);
    for f in &v.fields {
        rdb_len(&mut out, f.opcode);
        match &f.body {
            Body::Unsigned(u) => rdb_len(&mut out, *u),
            Body::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
            Body::Str { data, claimed } => {
                rdb_len(&mut out, *claimed);
                out.extend_from_slice(data);
            }
            Body::Encoded(raw) => out.extend_from_slice(raw),
            Body::Eof => {}
        }
    }
    out.extend_from_slice(&v.trailer);
    out
}

fn interesting_u64(rng: &mut Rng) -> u64 {
    const V: [u64; 16] = [
        0,
        1,
        2,
        5,
        8,
        13,
        16,
        63,
        64,
        255,
        1 << 31,
        u32::MAX as u64,
        1 << 32,
        1 << 53,
        1 << 63,
        u64::MAX,
    ];
    match rng.below(4) {
        0 => rng.next(),
        1 => rng.below(2048),
        _ => V[rng.below(V.len() as u64) as usize],
    }
}

fn interesting_f64(rng: &mut Rng) -> f64 {
    const V: [f64; 14] = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        0.5,
        0.999_999,
        1e-300,
        5e-324,
        -1.0,
        2.0,
        1e300,
        0.01,
    ];
    match rng.below(3) {
        0 => f64::from_bits(rng.next()),
        _ => V[rng.below(V.len() as u64) as usize],
    }
}

/// The `n`-th field of `v` whose body is of the kind `kind` accepts.
fn nth_field(v: &mut ModuleValue, kind: impl Fn(&Body) -> bool, n: usize) -> Option<&mut Field> {
    v.fields.iter_mut().filter(|f| kind(&f.body)).nth(n)
}

/// One structure-aware mutation of a module value of `kind`.
fn mutate_value(v: &mut ModuleValue, kind: Kind, rng: &mut Rng) {
    let n = v.fields.len();
    let i = rng.below(n as u64) as usize;
    let pick = rng.below(14);
    if kind == Kind::Cuckoo && matches!(pick, 9 | 12 | 13) {
        return mutate_cuckoo_value(v, pick, rng);
    }
    match pick {
        0 => {
            let pick = rng.below(8) as usize;
            if let Some(f) = nth_field(v, |b| matches!(b, Body::Unsigned(_)), pick) {
                f.body = Body::Unsigned(interesting_u64(rng));
            }
        }
        1 => {
            let pick = rng.below(4) as usize;
            if let Some(f) = nth_field(v, |b| matches!(b, Body::Double(_)), pick) {
                f.body = Body::Double(interesting_f64(rng).to_bits());
            }
        }
        2..=4 => {
            // A bit array: shorter, longer, or announcing more (or far more) than it has.
            let which = rng.below(4) as usize;
            let choice = rng.below(3);
            let extra = rng.below(64) as usize;
            let huge = [1u64 << 20, 1 << 32, 1 << 40, 1 << 62, u64::MAX][rng.below(5) as usize];
            if let Some(Field {
                body: Body::Str { data, claimed },
                ..
            }) = v
                .fields
                .iter_mut()
                .filter(|f| matches!(f.body, Body::Str { .. }))
                .nth(which)
            {
                match choice {
                    0 => {
                        let keep = (data.len() * extra / 64).min(data.len());
                        data.truncate(keep);
                        *claimed = keep as u64;
                    }
                    1 => {
                        data.extend(std::iter::repeat_n(0xa5, extra + 1));
                        *claimed = data.len() as u64;
                    }
                    _ => {
                        *claimed = if extra % 2 == 0 {
                            huge
                        } else {
                            *claimed + 1 + extra as u64
                        }
                    }
                }
            }
        }
        5 => v.fields[i].opcode = [0, 1, 2, 3, 4, 5, 6, 63, 1000][rng.below(9) as usize],
        6 => {
            v.fields.remove(i);
        }
        7 => {
            let f = v.fields[i].clone();
            v.fields.insert(i, f);
        }
        8 => v.module_id = (v.module_id & !1023) | [0, 1, 2, 3, 5, 6, 1023][rng.below(7) as usize],
        9 => {
            // The layer count: off by one, or huge.
            if let Some(Field {
                body: Body::Unsigned(u),
                ..
            }) = v.fields.get_mut(1)
            {
                *u = match rng.below(3) {
                    0 => u.wrapping_add(1),
                    1 => u.wrapping_sub(1),
                    _ => interesting_u64(rng),
                };
            }
        }
        10 => {
            if matches!(v.fields.last().map(|f| &f.body), Some(Body::Eof)) {
                v.fields.pop();
            }
        }
        11 => {
            let n = 1 + rng.below(8) as usize;
            v.trailer.extend(rng.bytes(n));
        }
        12 => {
            // A consistent resize of one layer: a different but valid bit array.
            let layer = rng.below(((n.saturating_sub(5)) / 8).max(1) as u64) as usize;
            let words = 1 + rng.below(64) as usize;
            let base = 4 + layer * 8;
            if let (
                Some(Field {
                    body: Body::Unsigned(bits),
                    ..
                }),
                true,
            ) = (v.fields.get_mut(base + 4), base + 6 < n)
            {
                *bits = (words * 64) as u64;
                let data = rng.bytes(words * 8);
                v.fields[base + 6].body = Body::Str {
                    claimed: data.len() as u64,
                    data,
                };
            }
        }
        _ => {
            // Options: any bits, also the ones LOADCHUNK refuses (RDB load does not check).
            if let Some(Field {
                body: Body::Unsigned(u),
                ..
            }) = v.fields.get_mut(2)
            {
                *u = interesting_u64(rng) & 0xffff_ffff;
            }
        }
    }
}

/// The cuckoo value's own mutations (encoding version 4: sub-filters, buckets, items,
/// deletes, bucket size, max iterations, expansion, then per sub-filter its buckets and its
/// table), in place of the Bloom value's: `pick` 9 the sub-filter count; 12 a consistent
/// reshape (first bucket count, bucket size, expansion and sub-filter count, mostly valid, the
/// tables rewritten to match with random fingerprints, about half the slots empty), so that
/// many mutations stay valid filters of other shapes; 13 a counter or a 16-bit field.
fn mutate_cuckoo_value(v: &mut ModuleValue, pick: u64, rng: &mut Rng) {
    if v.fields.len() < 7 {
        return;
    }
    let set = |v: &mut ModuleValue, i: usize, x: u64| {
        if let Body::Unsigned(u) = &mut v.fields[i].body {
            *u = x;
        }
    };
    match pick {
        9 => {
            if let Body::Unsigned(u) = &mut v.fields[0].body {
                *u = match rng.below(3) {
                    0 => u.wrapping_add(1),
                    1 => u.wrapping_sub(1),
                    _ => interesting_u64(rng),
                };
            }
        }
        12 => {
            let buckets = [1u64, 2, 4, 8, 64, 1024, 3, 6, 0][rng.below(9) as usize];
            let bucket_size = [1u64, 2, 3, 4, 255, 1, 2, 0, 256][rng.below(9) as usize];
            let expansion = [1u64, 2, 3, 4, 0, 1, 2, 5, 8, 65535][rng.below(10) as usize];
            let count = [1u64, 2, 3, 4, 7][rng.below(5) as usize];
            v.fields.truncate(7);
            let mut total = 0u64;
            for i in 0..count {
                let n = buckets.saturating_mul(expansion.saturating_pow(i as u32));
                let bytes = n.saturating_mul(bucket_size);
                total = total.saturating_add(bytes);
                if total > 1 << 20 {
                    break;
                }
                let data: Vec<u8> = rng
                    .bytes(bytes as usize)
                    .into_iter()
                    .map(|b| if b & 1 == 0 { 0 } else { b })
                    .collect();
                v.fields.push(Field {
                    opcode: 2,
                    body: Body::Unsigned(n),
                });
                v.fields.push(Field {
                    opcode: 5,
                    body: Body::Str {
                        claimed: data.len() as u64,
                        data,
                    },
                });
            }
            v.fields.push(Field {
                opcode: 0,
                body: Body::Eof,
            });
            for (at, x) in [(0, count), (1, buckets), (4, bucket_size), (6, expansion)] {
                set(v, at, x);
            }
        }
        _ => {
            const V: [u64; 10] = [0, 1, 2, 255, 256, 32768, 32769, 65535, 65536, u64::MAX];
            let x = if rng.chance(50) {
                V[rng.below(V.len() as u64) as usize]
            } else {
                interesting_u64(rng)
            };
            set(v, 2 + rng.below(5) as usize, x);
        }
    }
}

/// One raw-byte mutation of a body (the type byte is kept so Redis calls the module).
fn mutate_bytes(body: &mut Vec<u8>, rng: &mut Rng) {
    let n = body.len();
    let at = 1 + rng.below((n - 1) as u64) as usize;
    match rng.below(5) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let p = 1 + rng.below((n - 1) as u64) as usize;
                body[p] ^= 1 << rng.below(8);
            }
        }
        1 => body.truncate(at.max(2)),
        2 => {
            let n = 1 + rng.below(16) as usize;
            let extra = rng.bytes(n);
            body.splice(at..at, extra);
        }
        3 => {
            let mut huge = vec![0x81];
            huge.extend_from_slice(&interesting_u64(rng).to_be_bytes());
            let end = (at + huge.len()).min(n);
            body.splice(at..end, huge);
        }
        _ => {
            let len = rng.below((n - at) as u64 + 1) as usize;
            let copy = body[at..at + len].to_vec();
            body.splice(at..at, copy);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Shared checks.

/// Mutated payloads / headers per fuzz test: 10 000, or `BF_HOSTILE_CASES`.
fn cases() -> usize {
    std::env::var("BF_HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn err_of(v: &Value) -> Option<String> {
    value_error(v)
}

/// Asserts the server is alive and answers PING.
fn assert_alive(s: &mut Server, con: &mut Connection, when: &str) {
    let pong: String = cmd("PING")
        .query(con)
        .unwrap_or_else(|e| panic!("no PONG {when}: {e}; log:\n{}", tail(&s.log())));
    assert_eq!(pong, "PONG");
    assert!(s.is_alive(), "server died {when}");
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The filter kinds the fuzzes cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Bloom filters: type `MBbloom--`, the BF.* commands.
    Bloom,
    /// Cuckoo filters: type `MBbloomCF`, the CF.* commands.
    Cuckoo,
}

/// Two tests running one fuzz, `$run(kind)`: `$bloom` on Bloom filters, `$cuckoo` on cuckoo
/// filters.
macro_rules! per_kind {
    ($run:ident: $bloom:ident, $cuckoo:ident) => {
        #[test]
        fn $bloom() {
            $run(Kind::Bloom);
        }

        #[test]
        fn $cuckoo() {
            $run(Kind::Cuckoo);
        }
    };
}

/// What a reply to one of [`Kind::exercise`]'s commands must be.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// The kind's type name (TYPE).
    Type,
    Int,
    Array,
    Bulk,
    Ok,
    /// This exact error.
    Error(&'static str),
    /// The add of the probe item: an integer, or one of the kind's refusals (a full filter, a
    /// growth refused).
    Add,
    /// This integer when the probe's add succeeded; else an integer or a refusal.
    IfAdded(i64),
    /// An array (one element per item), or one of the kind's refusals for the whole command
    /// (`Maximum expansions reached`).
    Items,
    /// DUMP's payload, which must RESTORE again.
    Dump,
}

/// A cuckoo add on a filter that has `cf-max-expansions` sub-filters.
const CF_MAX: &str = "Maximum expansions reached";

/// `Filter is full`, `ERR Insufficient memory`, `Maximum expansions reached`: what a cuckoo
/// add may answer on a filter that cannot take the item.
const CF_REFUSALS: [&str; 3] = ["Filter is full", "ERR Insufficient memory", CF_MAX];

impl Kind {
    fn type_name(self) -> &'static str {
        match self {
            Kind::Bloom => "MBbloom--",
            Kind::Cuckoo => "MBbloomCF",
        }
    }

    /// The kind's command `name` (`SCANDUMP` → `BF.SCANDUMP` / `CF.SCANDUMP`).
    fn cmd(self, name: &str) -> String {
        match self {
            Kind::Bloom => format!("BF.{name}"),
            Kind::Cuckoo => format!("CF.{name}"),
        }
    }

    /// Errors an add may answer on a valid filter that cannot take the item.
    fn refusals(self) -> &'static [&'static str] {
        match self {
            Kind::Bloom => &[PROBLEM, FULL],
            Kind::Cuckoo => &CF_REFUSALS,
        }
    }

    /// The kind's lines of [`EXERCISE`]: the lines for every kind (`{F}` its family, BF or CF)
    /// and its own (`bloom:`, `cuckoo:`), as `(command line, reply)`.
    fn exercise(self) -> Vec<(String, Want)> {
        let (own, family) = match self {
            Kind::Bloom => ("bloom: ", "BF"),
            Kind::Cuckoo => ("cuckoo: ", "CF"),
        };
        common::step_lines(EXERCISE)
            .filter_map(|(line, want)| {
                let line = match line.split_once(": ") {
                    Some((_, rest)) if line.starts_with(own) => rest,
                    Some(_) => return None,
                    None => line,
                };
                Some((line.replace("{F}", family), Want::of(want)))
            })
            .collect()
    }
}

/// Every command on a key holding a valid filter, with the reply each must get ([`Want::of`]):
/// `{F}` the kind's family (BF, CF), `{k}` the key, `{p}` a probe item, `{e}` an empty item;
/// a line starting `bloom:` or `cuckoo:` is that kind's only.
const EXERCISE: &str = r#"
    TYPE {k}                                      -> type
    {F}.EXISTS {k} {p}                            -> int
    {F}.MEXISTS {k} a {p} {e}                     -> array
    cuckoo: CF.COUNT {k} {p}                      -> int
    {F}.ADD {k} {p}                               -> add
    {F}.EXISTS {k} {p}                            -> 1 if added
    cuckoo: CF.ADDNX {k} {p}                      -> 0 if added
    cuckoo: CF.INSERT {k} ITEMS a {e}             -> items
    cuckoo: CF.INSERTNX {k} NOCREATE ITEMS a b    -> items
    {F}.INFO {k}                                  -> array
    bloom: BF.CARD {k}                            -> int
    bloom: BF.DEBUG {k}                           -> array
    cuckoo: CF.DEBUG {k}                          -> bulk
    {F}.SCANDUMP {k} 0                            -> array
    {F}.SCANDUMP {k} 1                            -> array
    cuckoo: CF.RESERVE {k} 100                    -> (error) ERR item exists
    cuckoo: CF.DEL {k} {p}                        -> 1 if added
    cuckoo: CF.COMPACT {k}                        -> OK
    MEMORY USAGE {k}                              -> int
    DUMP {k}                                      -> dump
"#;

impl Want {
    /// The reply a line of [`Kind::exercise`] names: `type`, `int`, `array`, `bulk`, `OK`,
    /// `add`, `N if added`, `items`, `dump`, or `(error) TEXT`.
    fn of(text: &'static str) -> Want {
        match text {
            "type" => Want::Type,
            "int" => Want::Int,
            "array" => Want::Array,
            "bulk" => Want::Bulk,
            "OK" => Want::Ok,
            "add" => Want::Add,
            "items" => Want::Items,
            "dump" => Want::Dump,
            t => match (t.strip_prefix("(error) "), t.strip_suffix(" if added")) {
                (Some(e), _) => Want::Error(e),
                (_, Some(n)) => Want::IfAdded(n.parse().expect("N if added")),
                _ => panic!("unknown reply {t:?}"),
            },
        }
    }
}

/// Runs every command of `kind` on a key that holds a valid filter ([`Kind::exercise`]); all
/// must answer without a crash, an added item must then be found, and the filter's own DUMP
/// must RESTORE again. Returns the reason when something is wrong.
fn exercise_key(con: &mut Connection, kind: Kind, key: &[u8], n: u64) -> Result<(), String> {
    let probe = format!("probe:{n}").into_bytes();
    let steps = kind.exercise();
    let mut p = redis::pipe();
    for (line, _) in &steps {
        let mut words = line.split(' ');
        p.cmd(words.next().unwrap());
        for w in words {
            match w {
                "{k}" => p.arg(key),
                "{p}" => p.arg(&probe),
                "{e}" => p.arg(""),
                w => p.arg(w),
            };
        }
    }
    let r = raw_pipe(con, &p, steps.len());
    let refused = |v: &Value| err_of(v).is_some_and(|e| kind.refusals().contains(&e.as_str()));
    let mut added = false;
    let mut dump = None;
    for ((line, want), v) in steps.iter().zip(&r) {
        let ok = match *want {
            Want::Type => matches!(v, Value::SimpleString(t) if t == kind.type_name()),
            Want::Int => matches!(v, Value::Int(_)),
            Want::Array => matches!(v, Value::Array(_)),
            Want::Bulk => matches!(v, Value::BulkString(_)),
            Want::Ok => {
                matches!(v, Value::Okay) || matches!(v, Value::SimpleString(t) if t == "OK")
            }
            Want::Error(e) => err_of(v).as_deref() == Some(e),
            Want::Add => {
                added = matches!(v, Value::Int(_));
                added || refused(v)
            }
            Want::IfAdded(x) if added => *v == Value::Int(x),
            Want::IfAdded(_) => matches!(v, Value::Int(_)) || refused(v),
            Want::Items => matches!(v, Value::Array(_)) || refused(v),
            Want::Dump => {
                dump = match v {
                    Value::BulkString(d) => Some(d.clone()),
                    _ => None,
                };
                dump.is_some()
            }
        };
        if !ok {
            return Err(format!("{line}: {v:?}"));
        }
    }
    let copy = [key, b":again"].concat();
    let v = raw(
        con,
        cmd("RESTORE")
            .arg(&copy)
            .arg(0)
            .arg(dump.unwrap_or_default()),
    );
    if err_of(&v).is_some() {
        return Err(format!("RESTORE of the filter's own DUMP: {v:?}"));
    }
    let _: i64 = cmd("DEL").arg(&copy).query(con).unwrap();
    Ok(())
}

/// The whole SCANDUMP walk in three round trips: the header, then every chunk (its iterators
/// follow from the layer sizes: one chunk per layer, at most 16 MiB each) in one pipeline.
fn scandump_pipelined(con: &mut Connection, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let (one, header): (i64, Vec<u8>) = cmd("BF.SCANDUMP").arg(key).arg(0).query(con).unwrap();
    let mut iters = vec![1i64];
    for l in parse_header(&header).layers {
        let mut left = l.bytes as i64;
        while left > 0 {
            let n = left.min(16 << 20);
            iters.push(iters.last().unwrap() + n);
            left -= n;
        }
    }
    let mut p = redis::pipe();
    for it in &iters {
        p.cmd("BF.SCANDUMP").arg(key).arg(*it);
    }
    let replies = raw_pipe(con, &p, iters.len());
    let mut walk = vec![(one, header)];
    for r in replies {
        let Value::Array(a) = r else {
            panic!("SCANDUMP: {r:?}")
        };
        let (Value::Int(next), Value::BulkString(data)) = (&a[0], &a[1]) else {
            panic!("SCANDUMP: {a:?}")
        };
        if *next == 0 {
            break;
        }
        walk.push((*next, data.clone()));
    }
    walk
}

/// SCANDUMP → LOADCHUNK round trip of a filter (what the AOF rewrite does): the copy must be
/// accepted and dump identically. Returns the failure, if any.
fn dump_round_trip(con: &mut Connection, key: &[u8]) -> Option<String> {
    let walk = scandump_pipelined(con, key);
    let copy = [key, b":lc"].concat();
    let mut p = redis::pipe();
    for (iter, data) in &walk {
        p.cmd("BF.LOADCHUNK")
            .arg(&copy)
            .arg(*iter)
            .arg(data.as_slice());
    }
    let replies = raw_pipe(con, &p, walk.len());
    let mut failure = walk.iter().zip(&replies).find_map(|((iter, _), r)| {
        err_of(r).map(|e| format!("LOADCHUNK {iter} of its own SCANDUMP: {e}"))
    });
    if failure.is_none() && scandump_pipelined(con, &copy) != walk {
        failure = Some("the LOADCHUNKed copy dumps differently".into());
    }
    let _: i64 = cmd("DEL").arg(&copy).query(con).unwrap();
    failure
}

/// used_memory through a connection kept idle for the measurement, after emptying the server's
/// own bounded bookkeeping, which slow, big or failing commands fill: the slow log, the error
/// statistics and, on servers with a `COMMANDLOG` (Valkey 8.1+), its large-request and
/// large-reply logs. Those two keep the last 128 commands whose request or reply passed 1 MiB
/// (`commandlog-request-larger-than`, `commandlog-reply-larger-than`), with copies of up to 32
/// arguments of up to 128 bytes each; `SLOWLOG RESET` empties only the slow one. The fuzzes'
/// round trips of filters of 1–4 MiB (BF.SCANDUMP replies, BF.LOADCHUNK requests) fill both:
/// about 75 KB after the LOADCHUNK fuzz (50 KB of requests, 25 KB of replies), with the module
/// at zero filters and bytes, which the after-FLUSHALL reading would count as a leak.
fn used_memory(meter: &mut Connection) -> u64 {
    let _: () = cmd("SLOWLOG RESET").query(meter).unwrap();
    if has_commandlog(meter) {
        for log in ["large-request", "large-reply"] {
            let _: () = cmd("COMMANDLOG")
                .arg("RESET")
                .arg(log)
                .query(meter)
                .unwrap();
        }
    }
    let _: () = cmd("CONFIG RESETSTAT").query(meter).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    info_u64(meter, "memory", "used_memory")
}

/// True when the server has the `COMMANDLOG` command (Valkey 8.1+; `COMMAND INFO` answers nil
/// for an unknown command).
fn has_commandlog(con: &mut Connection) -> bool {
    let info: Vec<Value> = cmd("COMMAND INFO COMMANDLOG").query(con).unwrap();
    !matches!(info.as_slice(), [Value::Nil])
}

/// True when `after` is at most 1% or `slack` bytes above `before` (or below it).
fn near(before: u64, after: u64, slack: u64) -> bool {
    let diff = after.abs_diff(before);
    after <= before || diff * 100 <= before || diff <= slack
}

/// used_memory once the module's background frees are done (`INFO bf`
/// `bf_free_pending_bytes:0`) and the reading is [`near`] `baseline`, or the last reading
/// after about 5 s. What a loaded machine delays (the freeing thread, the server's own
/// bookkeeping settling) then cannot fail the check; a leak stays above the baseline.
fn settled_used_memory(meter: &mut Connection, baseline: u64, slack: u64) -> u64 {
    let mut m = used_memory(meter);
    for _ in 0..20 {
        let pending = info_u64(meter, "bf", "bf_free_pending_bytes");
        if pending == 0 && near(baseline, m, slack) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
        m = used_memory(meter);
    }
    m
}

/// Asserts `after` is at most 1% or `slack` bytes above `before`.
fn assert_near(before: u64, after: u64, slack: u64, what: &str) {
    let diff = after.abs_diff(before);
    println!(
        "{what}: used_memory before {before}, after {after}, difference {} bytes ({:.3}%)",
        after as i64 - before as i64,
        diff as f64 * 100.0 / before as f64
    );
    // A leak makes memory grow; ending below the baseline means the baseline still held
    // something transient (client buffers of the connections that sent big pipelines).
    assert!(
        near(before, after, slack),
        "{what}: used_memory {before} → {after}"
    );
}

/// Filters whose DUMP payloads and SCANDUMP walks seed the mutations.
fn make_seeds(con: &mut Connection) -> Vec<Vec<u8>> {
    let mut cmds: Vec<Vec<String>> = vec![
        "BF.RESERVE s0 0.01 1000",
        "BF.ADD s0 hello",
        "BF.RESERVE s1 0.1 4 EXPANSION 3",
        "BF.MADD s1 a b c d e f g h i j k l",
        "BF.RESERVE s2 0.05 10 NONSCALING",
        "BF.MADD s2 foo bar baz",
        "BF.ADD s3 x",
        "BF.RESERVE s4 0.01 10 EXPANSION 1",
        "BF.RESERVE s6 0.001 20000",
    ]
    .into_iter()
    .map(|c| c.split(' ').map(String::from).collect())
    .collect();
    for (key, prefix, n) in [("s4", "m", 120), ("s6", "n", 2000)] {
        let items = (0..n).map(|i| format!("{prefix}{i}"));
        cmds.push(
            ["BF.MADD", key]
                .map(String::from)
                .into_iter()
                .chain(items)
                .collect(),
        );
    }
    for c in &cmds {
        let v = raw(con, redis::cmd(&c[0]).arg(&c[1..]));
        assert!(err_of(&v).is_none(), "{c:?}: {v:?}");
    }
    // A legacy filter (32-bit hash, power-of-two layer), made with the core and LOADCHUNKed.
    let p = LayerParams::for_capacity(100, 0.01, 0).unwrap();
    let mut legacy = Chain {
        size: 0,
        options: 0,
        growth: 2,
        layers: Box::new([Layer::new(p).unwrap()]),
    };
    for i in 0..50u32 {
        legacy.add(&i.to_le_bytes(), u64::MAX).unwrap();
    }
    let _: () = cmd("BF.LOADCHUNK s5 1")
        .arg(encode_header(&legacy))
        .query(con)
        .unwrap();
    let _: () = cmd("BF.LOADCHUNK s5")
        .arg(1 + legacy.layers[0].data.len())
        .arg(&legacy.layers[0].data[..])
        .query(con)
        .unwrap();
    (0..7).map(|i| format!("s{i}").into_bytes()).collect()
}

/// Cuckoo filters whose DUMP payloads and SCANDUMP walks seed the mutations: one sub-filter
/// and grown ones, bucket sizes 1, 2, 3, 4 and 255, expansions 0 to 4 (3 stored as 4 by
/// CF.RESERVE, kept as 3 by a LOADCHUNK header), a full non-scaling one, an empty one, one
/// with deletions, an auto-created one.
fn make_cuckoo_seeds(con: &mut Connection) -> Vec<Vec<u8>> {
    let items = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    };
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for (reserve, n) in [
        ("CF.RESERVE c0 1000", 300),
        ("CF.RESERVE c1 8 BUCKETSIZE 1 EXPANSION 2", 60),
        (
            "CF.RESERVE c2 64 BUCKETSIZE 4 MAXITERATIONS 5 EXPANSION 4",
            400,
        ),
        ("CF.RESERVE c3 510 BUCKETSIZE 255 EXPANSION 3", 50),
        ("CF.RESERVE c4 16 MAXITERATIONS 1 EXPANSION 0", 40),
        ("CF.RESERVE c5 100", 0),
        ("CF.RESERVE c6 64 BUCKETSIZE 3 EXPANSION 1", 150),
    ] {
        cmds.push(reserve.split(' ').map(String::from).collect());
        let key = reserve.split(' ').nth(1).unwrap();
        if n > 0 {
            let insert = ["CF.INSERT", key, "ITEMS"].map(String::from).into_iter();
            cmds.push(insert.chain(items(key, n)).collect());
        }
    }
    // Deletions (and the compaction they trigger) in the grown c6.
    cmds.extend(
        items("c6", 40)
            .into_iter()
            .map(|i| vec!["CF.DEL".into(), "c6".into(), i]),
    );
    cmds.push(vec!["CF.ADD".into(), "c7".into(), "x".into()]);
    for c in &cmds {
        let v = raw(con, redis::cmd(&c[0]).arg(&c[1..]));
        assert!(err_of(&v).is_none(), "{c:?}: {v:?}");
    }
    // Expansion 3 as a header keeps it: c6's header with sub-filters of 2, 6, 18 and 54
    // buckets (of 3), filled by the core.
    let c6 = walk_of(con, Kind::Cuckoo, b"c6");
    let h = cuckoo_dump::Header {
        buckets: 2,
        filters: 4,
        expansion: 3,
        ..cuckoo_dump::parse_header(&c6[0].1).unwrap()
    };
    let limits = cuckoo_dump::HeaderLimits {
        max_expansion: u16::MAX,
    };
    let mut cf = cuckoo_dump::decode_header(&h, limits, u64::MAX).unwrap();
    for i in items("c8", 80) {
        cf.insert(i.as_bytes(), false, u64::MAX);
    }
    let mut walk = vec![(1, cuckoo_dump::encode_header(&cf).to_vec())];
    while let cuckoo_dump::Scan::Chunk(next, data) =
        cuckoo_dump::table_chunk(&cf, walk.last().unwrap().0)
    {
        walk.push((next, data.to_vec()));
    }
    for (pos, data) in &walk {
        let _: () = cmd("CF.LOADCHUNK c8")
            .arg(*pos)
            .arg(data)
            .query(con)
            .unwrap();
    }
    (0..9).map(|i| format!("c{i}").into_bytes()).collect()
}

// ------------------------------------------------------------------------------------------

/// Runs every command of `kind` on `key` (a filter that `what` made) with [`exercise_key`],
/// then deletes it; panics when the filter misbehaves.
fn exercise_then_delete(con: &mut Connection, kind: Kind, key: &[u8], case: usize, what: &str) {
    if let Err(e) = exercise_key(con, kind, key, case as u64) {
        panic!("{what} {:?} misbehaves: {e}", String::from_utf8_lossy(key));
    }
    let _: i64 = cmd("DEL").arg(key).query(con).unwrap();
}

/// The server still answers once the batch of cases up to `case` has been exercised.
fn assert_alive_after_batch(s: &mut Server, con: &mut Connection, case: usize) {
    assert_alive(
        s,
        con,
        &format!("after exercising batch ending at case {case}"),
    );
}

/// FLUSHALL on `con`, then `used_memory` read on `meter`.
fn flushed_used_memory(con: &mut Connection, meter: &mut Connection) -> u64 {
    let _: () = cmd("FLUSHALL").query(con).unwrap();
    used_memory(meter)
}

/// What a mutation run of `kind` starts from: the number of cases, its start time, the seeded
/// generator, a server refusing filters over `FUZZ_FILTER_LIMIT` bytes, a connection for memory
/// readings and one for the cases, and the keys of the seed filters made on it.
fn mutation_run(
    kind: Kind,
) -> (
    usize,
    Instant,
    Rng,
    Server,
    Connection,
    Connection,
    Vec<Vec<u8>>,
) {
    let t0 = Instant::now();
    let rng = Rng::new(robust::seed_from_env("BF_HOSTILE_SEED"));
    let s = Server::start_with(&["max-filter-bytes", FUZZ_FILTER_LIMIT], &[]);
    let meter = s.conn();
    let mut con = s.conn();
    let seed_keys = match kind {
        Kind::Bloom => make_seeds(&mut con),
        Kind::Cuckoo => make_cuckoo_seeds(&mut con),
    };
    (cases(), t0, rng, s, meter, con, seed_keys)
}

/// A server with an AOF without RDB preamble, on which the valid filters a fuzz batch made are
/// checked to survive persistence: their DUMP payloads are RESTOREd there, then DEBUG RELOAD
/// (RDB save and load) and BGREWRITEAOF + DEBUG LOADAOF (the AOF rewritten, each filter as
/// LOADCHUNK commands, and replayed, as `restored_filters_survive_an_aof_rewrite` does with a
/// restart) must each leave every key's DUMP as it was. A replay that fails stops the server
/// (Redis exits on a bad AOF), which the check reports.
struct Survival {
    s: Server,
    con: Connection,
    /// Filters checked so far.
    filters: usize,
}

impl Survival {
    fn start() -> Survival {
        let s = Server::start_with(&[], common::AOF_NO_PREAMBLE);
        let con = s.conn();
        Survival { s, con, filters: 0 }
    }

    fn dumps(&mut self, keys: &[&[u8]]) -> Vec<Value> {
        let mut p = redis::pipe();
        for k in keys {
            p.cmd("DUMP").arg(*k);
        }
        raw_pipe(&mut self.con, &p, keys.len())
    }

    /// Checks `filters` (key, DUMP payload); returns what went wrong.
    fn check(&mut self, filters: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
        if filters.is_empty() {
            return Ok(());
        }
        let mut p = redis::pipe();
        for (k, payload) in filters {
            p.cmd("RESTORE").arg(k).arg(0).arg(payload);
        }
        let restored = raw_pipe(&mut self.con, &p, filters.len());
        if let Some(((k, _), e)) = filters
            .iter()
            .zip(&restored)
            .find(|(_, r)| err_of(r).is_some())
        {
            return Err(format!(
                "RESTORE {:?} on a second server: {e:?}",
                String::from_utf8_lossy(k)
            ));
        }
        let keys: Vec<&[u8]> = filters.iter().map(|(k, _)| k.as_slice()).collect();
        let before = self.dumps(&keys);
        let log = |s: &Server| tail(&s.log());
        for step in ["DEBUG RELOAD", "AOF rewrite + DEBUG LOADAOF"] {
            let done: redis::RedisResult<()> = if step == "DEBUG RELOAD" {
                cmd("DEBUG RELOAD").query(&mut self.con)
            } else {
                let con = &mut self.con;
                let _: Value = cmd("BGREWRITEAOF").query(con).unwrap();
                robust::wait_until("the AOF rewrite", Duration::from_secs(60), || {
                    info_u64(con, "persistence", "aof_rewrite_in_progress") == 0
                        && info_u64(con, "persistence", "aof_rewrite_scheduled") == 0
                });
                let status = robust::info_field(con, "persistence", "aof_last_bgrewrite_status");
                assert_eq!(status, "ok", "AOF rewrite");
                cmd("DEBUG LOADAOF").query(con)
            };
            if let Err(e) = done {
                return Err(format!("{step}: {e}; log:\n{}", log(&self.s)));
            }
            let after = self.dumps(&keys);
            if let Some(i) = (0..keys.len()).find(|&i| after[i] != before[i]) {
                return Err(format!(
                    "{step} changed {:?}: DUMP {:?} became {:?}",
                    String::from_utf8_lossy(keys[i]),
                    before[i],
                    after[i]
                ));
            }
        }
        let _: () = cmd("FLUSHALL").query(&mut self.con).unwrap();
        self.filters += filters.len();
        Ok(())
    }
}

per_kind!(
    restore_fuzz: restore_of_mutated_dump_payloads,
    restore_of_mutated_cuckoo_dump_payloads
);

/// `restore_of_mutated_dump_payloads` for filters of `kind`: every mutated payload is refused
/// with `ERR Bad data format` (or Redis' checksum error) or gives a filter that answers every
/// command of its kind and survives DEBUG RELOAD and an AOF rewrite ([`Survival`]).
fn restore_fuzz(kind: Kind) {
    const BATCH: usize = 100;
    let (cases, t0, mut rng, mut s, mut meter, mut con, seed_keys) = mutation_run(kind);
    let mut survival = Survival::start();
    // Seeds: each filter's DUMP without and with LZF compression.
    let mut seeds: Vec<(Vec<u8>, [u8; 2], Option<ModuleValue>)> = Vec::new();
    for compression in ["no", "yes"] {
        let _: () = cmd("CONFIG SET rdbcompression")
            .arg(compression)
            .query(&mut con)
            .unwrap();
        for k in &seed_keys {
            let payload: Vec<u8> = cmd("DUMP").arg(k).query(&mut con).unwrap();
            let (body, version) = unseal(&payload);
            let parsed = parse_value(&body).expect("a DUMP payload parses");
            assert_eq!(encode_value(&parsed), body, "value stream round trip");
            // The unmutated payload restores.
            let v = raw(
                &mut con,
                cmd("RESTORE").arg(b"seedcheck").arg(0).arg(&payload),
            );
            assert!(err_of(&v).is_none(), "{v:?}");
            let _: i64 = cmd("DEL seedcheck").query(&mut con).unwrap();
            seeds.push((body, version, Some(parsed)));
        }
    }
    println!(
        "CRC64 (Jones, reflected) verified on {} real DUMP payloads",
        seeds.len()
    );
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();

    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut valid = 0;
    let mut round_trip_failures: Vec<String> = Vec::new();
    let mut round_trip_why: BTreeMap<String, usize> = BTreeMap::new();
    let mut baseline = 0;
    let mut case = 0;
    let warmup = BATCH;
    while case < cases + warmup {
        let mut p = redis::pipe();
        let mut keys = Vec::new();
        for _ in 0..BATCH {
            let (body, version, parsed) = &seeds[rng.below(seeds.len() as u64) as usize];
            let mut body = match parsed {
                Some(v) if rng.chance(60) => {
                    let mut v = v.clone();
                    for _ in 0..1 + rng.below(3) {
                        mutate_value(&mut v, kind, &mut rng);
                    }
                    encode_value(&v)
                }
                _ => body.clone(),
            };
            if rng.chance(45) {
                mutate_bytes(&mut body, &mut rng);
            }
            let mut payload = seal(&body, *version);
            if rng.chance(1) {
                let n = payload.len();
                payload[n - 1] ^= 0x40; // a wrong CRC must be refused by Redis itself
            }
            let key = format!("h:{case}").into_bytes();
            case += 1;
            p.cmd("RESTORE").arg(&key).arg(0).arg(&payload);
            keys.push((key, payload));
        }
        let replies = raw_pipe(&mut con, &p, keys.len());
        let mut survivors = Vec::new();
        assert_alive(
            &mut s,
            &mut con,
            &format!("after RESTORE batch ending at case {case}"),
        );
        for ((key, payload), r) in keys.iter().zip(&replies) {
            let outcome = match err_of(r) {
                None => {
                    valid += 1;
                    survivors.push((key.clone(), payload.clone()));
                    let round_trip = match kind {
                        Kind::Bloom => dump_round_trip(&mut con, key),
                        Kind::Cuckoo => None, // Survival has its AOF rewrite.
                    };
                    if let Some(e) = round_trip {
                        let h = parse_header(&scandump(&mut con, key)[0].1);
                        let sum = h.layers.iter().fold(0u64, |a, l| a.wrapping_add(l.size));
                        let why = if h.options > 15 {
                            format!("options {} (bits ≥ 16)", h.options)
                        } else if sum != h.size {
                            format!("chain size {} ≠ Σ layer sizes {sum}", h.size)
                        } else {
                            format!("{h:?}")
                        };
                        *round_trip_why
                            .entry(why.split(' ').next().unwrap_or("").to_string())
                            .or_default() += 1;
                        round_trip_failures.push(format!("{e}: {why}"));
                    }
                    exercise_then_delete(&mut con, kind, key, case, "restored filter");
                    "OK (valid filter, every command works)".to_string()
                }
                Some(e) => e,
            };
            *outcomes.entry(outcome).or_default() += 1;
        }
        assert_alive_after_batch(&mut s, &mut con, case);
        if let Err(e) = survival.check(&survivors) {
            *round_trip_why.entry("persistence".into()).or_default() += 1;
            round_trip_failures.push(e);
        }
        if case == warmup {
            // Warm-up done: allocator and server structures are in steady state.
            baseline = flushed_used_memory(&mut con, &mut meter);
            // (Failures found in the warm-up batch are kept: they are failures all the same.)
            outcomes.clear();
            valid = 0;
        }
    }
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();
    drop(con);
    let after = settled_used_memory(&mut meter, baseline, 64 * 1024);
    println!("{cases} mutated {kind:?} DUMP payloads RESTOREd, crashes 0, outcomes:");
    for (o, n) in &outcomes {
        println!("  {n:6}  {o}");
    }
    let allowed = [
        "ERR Bad data format",
        "ERR DUMP payload version or checksum are wrong",
        "OK (valid filter, every command works)",
    ];
    for o in outcomes.keys() {
        assert!(
            allowed.contains(&o.as_str()),
            "unexpected RESTORE outcome {o:?}"
        );
    }
    assert!(valid > 100, "some mutations stay valid filters ({valid})");
    println!(
        "{} valid filters RESTOREd on a second server survived DEBUG RELOAD and an AOF rewrite \
         + DEBUG LOADAOF with the same DUMP",
        survival.filters
    );
    println!(
        "restored filters whose SCANDUMP does not LOADCHUNK back or that did not survive a reload \
         (lost by an AOF rewrite): {} of {valid} (by cause {round_trip_why:?}){}",
        round_trip_failures.len(),
        round_trip_failures
            .first()
            .map(|e| format!("; first: {e}"))
            .unwrap_or_default()
    );
    assert_near(baseline, after, 64 * 1024, "RESTORE fuzz, after FLUSHALL");
    assert_no_panic(&s);
    assert!(
        round_trip_failures.is_empty(),
        "{} restored filters cannot be dumped and reloaded",
        round_trip_failures.len()
    );
    println!("{kind:?} RESTORE fuzz: {:?}", t0.elapsed());
}

fn assert_no_panic(s: &Server) {
    let log = s.log();
    assert!(
        !log.contains("panicked"),
        "panic in the log:\n{}",
        tail(&log)
    );
    assert!(
        !log.contains("STACK TRACE"),
        "crash report in the log:\n{}",
        tail(&log)
    );
}

/// A filter that RESTORE accepts must survive an AOF rewrite (which stores it as LOADCHUNK
/// commands) and a restart. Variants of a real DUMP payload: unchanged; chain size one more
/// than the sum of the layer sizes; an option bit ≥ 16 (RDB load does not check either,
/// LOADCHUNK refuses both, so RESTORE refuses them). Cuckoo values, which RESTORE all accepts:
/// a grown filter unchanged; with 0 items but its fingerprints (the rewrite writes the tables of
/// a filter without items, which SCANDUMP does not give); an expansion of 40 000 (above the
/// 32 768 a client's CF.LOADCHUNK takes on Redis 8, but the AOF's is not a client's); item and
/// deletion counters of 2^64 − 1.
#[test]
fn restored_filters_survive_an_aof_rewrite() {
    let mut s = Server::start_with(&[], common::AOF_NO_PREAMBLE);
    let mut con = s.conn();
    assert!(cmd_text(&mut con, "BF.RESERVE src 0.1 4 EXPANSION 3").is_ok());
    assert!(cmd_text(&mut con, "BF.MADD src a b c d e f g h i j k l").is_ok());
    let payload: Vec<u8> = cmd("DUMP src").query(&mut con).unwrap();
    let (body, version) = unseal(&payload);
    let value = parse_value(&body).expect("DUMP payload parses");
    let set = |v: &mut ModuleValue, i: usize, f: &dyn Fn(u64) -> u64| {
        if let Body::Unsigned(u) = &mut v.fields[i].body {
            *u = f(*u);
        }
    };
    // (what, value, whether RESTORE takes it)
    let mut variants = vec![("unchanged", value.clone(), true)];
    let mut v = value.clone();
    set(&mut v, 0, &|u| u + 1);
    variants.push(("chain size = Σ layer sizes + 1", v, false));
    let mut v = value.clone();
    set(&mut v, 2, &|u| u | 16);
    variants.push(("options | 16", v, false));
    for line in [
        "CF.RESERVE grown 8 BUCKETSIZE 2 EXPANSION 2",
        "CF.RESERVE one 1000 BUCKETSIZE 4",
    ] {
        assert!(cmd_text(&mut con, line).is_ok(), "{line}");
    }
    let items: Vec<String> = (0..60).map(|i| format!("cf{i}")).collect();
    for key in ["grown", "one"] {
        let r = raw(&mut con, cmd("CF.INSERT").arg(key).arg("ITEMS").arg(&items));
        assert!(err_of(&r).is_none(), "{r:?}");
    }
    let cuckoo = |con: &mut Connection, key: &str| {
        let payload: Vec<u8> = cmd("DUMP").arg(key).query(con).unwrap();
        parse_value(&unseal(&payload).0).expect("a cuckoo DUMP payload parses")
    };
    let (grown, one) = (cuckoo(&mut con, "grown"), cuckoo(&mut con, "one"));
    assert!(
        matches!(grown.fields[0].body, Body::Unsigned(n) if n > 1),
        "grown: {grown:?}"
    );
    variants.push(("cuckoo, grown, unchanged", grown.clone(), true));
    let mut v = grown;
    set(&mut v, 2, &|_| 0);
    variants.push(("cuckoo, 0 items but its fingerprints", v, true));
    let mut v = one.clone();
    set(&mut v, 6, &|_| 40_000);
    variants.push(("cuckoo, expansion 40000", v, true));
    let mut v = one;
    set(&mut v, 2, &|_| u64::MAX);
    set(&mut v, 3, &|_| u64::MAX);
    variants.push(("cuckoo, items and deletes 2^64 - 1", v, true));
    let mut before = Vec::new();
    for (i, (what, v, restores)) in variants.iter().enumerate() {
        let key = format!("odd:{i}");
        let r = raw(
            &mut con,
            cmd("RESTORE")
                .arg(&key)
                .arg(0)
                .arg(seal(&encode_value(v), version)),
        );
        // A value whose SCANDUMP header LOADCHUNK would refuse is refused by RESTORE too (else
        // the AOF rewrite, which writes that header, would lose it).
        if *restores {
            assert!(err_of(&r).is_none(), "RESTORE {what}: {r:?}");
        } else {
            assert_eq!(
                err_of(&r).as_deref(),
                Some("ERR Bad data format"),
                "RESTORE {what}: {r:?}"
            );
        }
        let dump = raw(&mut con, cmd("DUMP").arg(&key));
        before.push(dump);
    }
    let _: Value = cmd("BGREWRITEAOF").query(&mut con).unwrap();
    robust::wait_until("the AOF rewrite", Duration::from_secs(30), || {
        info_u64(&mut con, "persistence", "aof_rewrite_in_progress") == 0
            && info_u64(&mut con, "persistence", "aof_rewrite_scheduled") == 0
    });
    s.restart(&[]);
    let mut con = s.conn();
    let mut lost = Vec::new();
    for (i, (what, _, restores)) in variants.iter().enumerate() {
        let key = format!("odd:{i}");
        let exists: i64 = cmd("EXISTS").arg(&key).query(&mut con).unwrap();
        // The same DUMP (nil for the refused ones, which must not appear either).
        let same =
            exists == i64::from(*restores) && raw(&mut con, cmd("DUMP").arg(&key)) == before[i];
        println!("RESTOREd filter ({what}) after AOF rewrite + restart: exists {exists}, same dump {same}");
        if !same {
            lost.push(*what);
        }
    }
    assert!(lost.is_empty(), "filters lost by the AOF rewrite: {lost:?}");
}

// ------------------------------------------------------------------------------------------
// LOADCHUNK headers.

/// Error rate → (bpe, hashes) as the sizing rules compute them (with RedisBloom's truncated
/// constants, as the module has them).
fn shape_for(error: f64) -> (f64, u32) {
    use redis_bf::bloom::layer::{LN2, LN2_SQUARED};
    let bpe = (error.ln() / LN2_SQUARED).abs();
    (bpe, (LN2 * bpe).ceil() as u32)
}

fn mutate_header(h: &mut Header, rng: &mut Rng) {
    let li = rng.below(h.layers.len().max(1) as u64) as usize;
    let fix_size =
        |h: &mut Header| h.size = h.layers.iter().fold(0u64, |a, l| a.wrapping_add(l.size));
    match rng.below(12) {
        0 => h.size = interesting_u64(rng),
        1 => h.nfilters = interesting_u64(rng) as u32,
        2 => h.options = interesting_u64(rng) as u32 & if rng.chance(70) { 15 } else { u32::MAX },
        3 => h.growth = interesting_u64(rng) as u32,
        4 if !h.layers.is_empty() => {
            let l = &mut h.layers[li];
            match rng.below(8) {
                0 => l.bytes = interesting_u64(rng),
                1 => l.bits = interesting_u64(rng),
                2 => l.size = interesting_u64(rng),
                3 => l.error = interesting_f64(rng),
                4 => l.bpe = interesting_f64(rng),
                5 => l.hashes = interesting_u64(rng) as u32,
                6 => l.entries = interesting_u64(rng),
                _ => l.n2 = interesting_u64(rng) as u8,
            }
        }
        5 if !h.layers.is_empty() => {
            // Consistent resize, from tiny to absurd: huge `bytes` must be refused before
            // anything is allocated.
            let bytes = [
                8u64,
                16,
                1024,
                1 << 16,
                1 << 20,
                1 << 21,
                1 << 22,
                1 << 23,
                1 << 33,
                1 << 40,
                1 << 60,
                u64::MAX / 8,
            ][rng.below(12) as usize]
                / 8
                * 8;
            let l = &mut h.layers[li];
            l.bytes = bytes.max(8);
            l.bits = l.bytes.wrapping_mul(8);
            if rng.chance(50) {
                l.n2 = 0;
            }
        }
        6 if !h.layers.is_empty() => {
            // Another valid error rate (k up to ~1075 for the smallest doubles).
            let e = [0.5, 0.1, 1e-5, 1e-100, 1e-300, 5e-324, 0.999_999][rng.below(7) as usize];
            let (bpe, k) = shape_for(e);
            let l = &mut h.layers[li];
            l.error = e;
            l.bpe = bpe;
            l.hashes = k;
        }
        7 if !h.layers.is_empty() => {
            // One more (or one less) layer, counts kept consistent.
            if rng.chance(50) || h.layers.len() == 1 {
                let l = h.layers[li].clone();
                h.layers.push(l);
            } else {
                h.layers.remove(li);
            }
            h.nfilters = h.layers.len() as u32;
            fix_size(h);
        }
        8 if !h.layers.is_empty() => {
            // A full layer with an absurd capacity: the next growth overflows.
            let l = &mut h.layers[li];
            l.entries = [u64::MAX, 1 << 62, 1 << 40, 0][rng.below(4) as usize];
            l.size = l.entries;
            h.growth = [u32::MAX, 2, 1 << 20][rng.below(3) as usize];
            fix_size(h);
        }
        9 => {
            // Many layers announced with a matching length (bounded: 2000 layers = 106 KB).
            let n = [0usize, 1, 200, 2000][rng.below(4) as usize];
            if let Some(l) = h.layers.first().cloned() {
                h.layers = vec![l; n];
                h.nfilters = n as u32;
                fix_size(h);
            }
        }
        _ => {
            if !h.layers.is_empty() {
                h.layers[li].size = interesting_u64(rng);
            }
            if rng.chance(50) {
                fix_size(h);
            }
        }
    }
}

/// CF.LOADCHUNK's refusal of a header it cannot use, invalid or over the memory budget
/// (RedisBloom's text).
const CF_BAD_HEADER: &str = "Couldn't create filter!";

/// A Bloom LOADCHUNK header from a seed's, mutated ([`mutate_header`] on its fields, then
/// perhaps raw bytes); with the bytes of the layers it announces.
fn mutated_bloom_header(seed: &[u8], rng: &mut Rng) -> (Vec<u8>, u64) {
    let mut header = seed.to_vec();
    let mut shape = parse_header(&header);
    if rng.chance(85) {
        for _ in 0..1 + rng.below(3) {
            mutate_header(&mut shape, rng);
        }
        header = write_header(&shape);
    }
    if rng.chance(20) {
        mutate_bytes(&mut header, rng);
        if rng.chance(30) {
            header.remove(0);
        }
    }
    let total = shape
        .layers
        .iter()
        .fold(0u64, |a, l| a.saturating_add(l.bytes));
    (header, total)
}

/// The 38 bytes of a cuckoo SCANDUMP header with these fields (any values).
fn write_cuckoo_header(h: &cuckoo_dump::Header) -> Vec<u8> {
    let mut out = Vec::with_capacity(cuckoo_dump::HEADER_BYTES);
    for v in [h.items, h.buckets, h.deletes, h.filters] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [h.bucket_size, h.max_iterations, h.expansion] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Table bytes a cuckoo header announces (saturating; sub-filters counted as the module reads
/// them, in 16 bits).
fn cuckoo_header_bytes(h: &cuckoo_dump::Header) -> u64 {
    let mut total = 0u64;
    let mut buckets = h.buckets;
    for _ in 0..(h.filters as u16) {
        total = total.saturating_add(buckets.saturating_mul(u64::from(h.bucket_size)));
        buckets = buckets.saturating_mul(u64::from(h.expansion));
        if total == u64::MAX || buckets == 0 {
            break;
        }
    }
    total
}

/// One mutation of a cuckoo header's fields: any value of one field, a consistent small shape
/// (so that many stay valid filters of other shapes, up to 2^10 buckets, 8 sub-filters), or an
/// absurd consistent one (tables of 2^28 bytes and more, up to 65 535 sub-filters), which must
/// be refused before anything is allocated.
fn mutate_cuckoo_header(h: &mut cuckoo_dump::Header, rng: &mut Rng) {
    fn pick<T: Copy>(rng: &mut Rng, v: &[T]) -> T {
        v[rng.below(v.len() as u64) as usize]
    }
    match rng.below(9) {
        0 => h.items = interesting_u64(rng),
        1 => {
            h.buckets = match rng.below(3) {
                0 => 1 << rng.below(64),
                1 => interesting_u64(rng),
                _ => pick(rng, &[3, 6, 0, 1 << 56, (1 << 56) - 1, 1 << 55]),
            }
        }
        2 => h.deletes = interesting_u64(rng),
        3 => {
            h.filters = match rng.below(2) {
                0 => pick(rng, &[0, 1, 2, 3, 16, 2048, 65535, 65536, 65537, u64::MAX]),
                _ => interesting_u64(rng),
            }
        }
        4 => h.bucket_size = pick(rng, &[0, 1, 2, 3, 4, 255, 256, 65535]),
        5 => h.max_iterations = pick(rng, &[0, 1, 2, 20, 65535]),
        6 => h.expansion = pick(rng, &[0, 1, 2, 3, 4, 5, 32768, 32769, 65535]),
        7 => {
            h.buckets = 1 << rng.below(11);
            h.bucket_size = pick(rng, &[1, 2, 3, 4, 255]);
            h.expansion = pick(rng, &[0, 1, 2, 3, 4]);
            h.filters = if h.expansion == 0 {
                1
            } else {
                1 + rng.below(8)
            };
            h.max_iterations = 1 + rng.below(50) as u16;
        }
        _ => {
            h.buckets = 1 << (20 + rng.below(36));
            h.bucket_size = 255;
            h.filters = pick(rng, &[1, 2, 100, 65535]);
            h.expansion = pick(rng, &[1, 2, 32768]);
        }
    }
}

/// A cuckoo LOADCHUNK header from a seed's, mutated ([`mutate_cuckoo_header`], then perhaps
/// raw bytes); with the table bytes it announces.
fn mutated_cuckoo_header(seed: &[u8], rng: &mut Rng) -> (Vec<u8>, u64) {
    let mut h = cuckoo_dump::parse_header(seed).expect("a seed's header");
    if rng.chance(85) {
        for _ in 0..1 + rng.below(3) {
            mutate_cuckoo_header(&mut h, rng);
        }
    }
    let mut header = write_cuckoo_header(&h);
    if rng.chance(20) {
        mutate_bytes(&mut header, rng);
        if rng.chance(30) {
            header.remove(0);
        }
    }
    (header, cuckoo_header_bytes(&h))
}

per_kind!(
    loadchunk_fuzz: loadchunk_of_mutated_headers_and_chunks,
    cf_loadchunk_of_mutated_headers_and_chunks
);

/// The SCANDUMP walk of a key of `kind` (header, then every chunk); empty for a cuckoo filter
/// without items (CF.SCANDUMP answers `[0, nil]` at once).
fn walk_of(con: &mut Connection, kind: Kind, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    if kind == Kind::Bloom {
        return scandump(con, key);
    }
    let mut out = Vec::new();
    loop {
        let at = out.last().map_or(0, |(n, _)| *n);
        let (next, data): (i64, Option<Vec<u8>>) =
            cmd("CF.SCANDUMP").arg(key).arg(at).query(con).unwrap();
        match data {
            Some(d) if next != 0 => out.push((next, d)),
            _ => return out,
        }
    }
}

/// `loadchunk_of_mutated_headers_and_chunks` for filters of `kind`: each mutated header is
/// refused with the kind's error before anything is allocated, or creates a filter that, after
/// the chunks, answers every command and survives DEBUG RELOAD and an AOF rewrite
/// ([`Survival`]).
fn loadchunk_fuzz(kind: Kind) {
    const BATCH: usize = 100;
    let (cases, t0, mut rng, mut s, mut meter, mut con, seed_keys) = mutation_run(kind);
    let mut survival = Survival::start();
    let loadchunk = kind.cmd("LOADCHUNK");
    let seeds: Vec<Vec<(i64, Vec<u8>)>> = seed_keys
        .iter()
        .map(|k| walk_of(&mut con, kind, k))
        .filter(|w| !w.is_empty())
        .collect();
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();

    let mut header_outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut chunk_outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut baseline = 0;
    let mut case = 0;
    let mut chunks_sent = 0;
    let warmup = BATCH;
    while case < cases + warmup {
        let mut p = redis::pipe();
        let mut plan: Vec<(Vec<u8>, usize)> = Vec::new(); // key, chunk commands after the header
        let mut sent = 0;
        for _ in 0..BATCH {
            let seed = &seeds[rng.below(seeds.len() as u64) as usize];
            let (header, total) = match kind {
                Kind::Bloom => mutated_bloom_header(&seed[0].1, &mut rng),
                Kind::Cuckoo => mutated_cuckoo_header(&seed[0].1, &mut rng),
            };
            let key = format!("lc:{case}").into_bytes();
            case += 1;
            // Iterator 1 creates; sometimes a non-numeric or other iterator on the missing key.
            let iter: Vec<u8> = match rng.below(40) {
                0 => b"abc".to_vec(),
                1 => b"2".to_vec(),
                2 => b"-1".to_vec(),
                3 => b"01".to_vec(),
                _ => b"1".to_vec(),
            };
            p.cmd(&loadchunk).arg(&key).arg(iter).arg(&header);
            sent += 1;
            // Chunks: the seed's own ones, consistent random ones, or absurd iterators.
            let nchunks = rng.below(4) as usize;
            for _ in 0..nchunks {
                let (iter, data): (i64, Vec<u8>) = match rng.below(4) {
                    0 if seed.len() > 1 => {
                        seed[1 + rng.below(seed.len() as u64 - 1) as usize].clone()
                    }
                    1 if total > 0 && total < 1 << 30 => {
                        let start = rng.below(total);
                        let len = rng.below(65).min(total - start);
                        ((start + len + 1) as i64, rng.bytes(len as usize))
                    }
                    _ => {
                        let len = rng.below(70) as usize;
                        let iter = [
                            0,
                            -1,
                            i64::MIN,
                            i64::MAX,
                            len as i64,
                            total as i64 + 2,
                            rng.next() as i64,
                        ][rng.below(7) as usize];
                        (iter, rng.bytes(len))
                    }
                };
                p.cmd(&loadchunk).arg(&key).arg(iter).arg(data);
                sent += 1;
            }
            plan.push((key, nchunks));
        }
        let replies = raw_pipe(&mut con, &p, sent);
        chunks_sent += sent;
        assert_alive(
            &mut s,
            &mut con,
            &format!("after LOADCHUNK batch ending at case {case}"),
        );
        let mut at = 0;
        let mut survivors = Vec::new();
        for (key, nchunks) in &plan {
            let h = err_of(&replies[at]).unwrap_or_else(|| "OK".into());
            *header_outcomes.entry(h.clone()).or_default() += 1;
            for r in &replies[at + 1..at + 1 + nchunks] {
                *chunk_outcomes
                    .entry(err_of(r).unwrap_or_else(|| "OK".into()))
                    .or_default() += 1;
            }
            at += 1 + nchunks;
            if h == "OK" {
                let round_trip = match kind {
                    Kind::Bloom => dump_round_trip(&mut con, key),
                    Kind::Cuckoo => None, // Survival has its AOF rewrite.
                };
                if let Some(e) = round_trip {
                    panic!("LOADCHUNKed filter {:?}: {e}", String::from_utf8_lossy(key));
                }
                let dump: Vec<u8> = cmd("DUMP").arg(key).query(&mut con).unwrap();
                survivors.push((key.clone(), dump));
                exercise_then_delete(&mut con, kind, key, case, "LOADCHUNKed filter");
            }
        }
        assert_alive_after_batch(&mut s, &mut con, case);
        if let Err(e) = survival.check(&survivors) {
            panic!("a LOADCHUNKed filter did not survive a reload: {e}");
        }
        if case == warmup {
            baseline = flushed_used_memory(&mut con, &mut meter);
            header_outcomes.clear();
            chunk_outcomes.clear();
            chunks_sent = 0;
        }
    }
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();
    drop(con);
    let after = settled_used_memory(&mut meter, baseline, 64 * 1024);
    if std::env::var_os("BF_DEBUG_MEM").is_some() {
        let stats: Value = cmd("MEMORY STATS").query(&mut meter).unwrap();
        println!("MEMORY STATS {stats:?}");
        let bf: String = cmd("INFO bf").query(&mut meter).unwrap();
        println!("{bf}");
    }
    println!(
        "{cases} mutated {kind:?} headers ({chunks_sent} {loadchunk} commands with the chunks), \
         crashes 0; {} valid filters survived DEBUG RELOAD and an AOF rewrite + DEBUG LOADAOF",
        survival.filters
    );
    println!("header outcomes:");
    for (o, n) in &header_outcomes {
        println!("  {n:6}  {o}");
    }
    println!("chunk outcomes:");
    for (o, n) in &chunk_outcomes {
        println!("  {n:6}  {o}");
    }
    // A header too big for memory is refused as a bad one (as RedisBloom answers it): BAD_DATA,
    // `Couldn't create filter!`.
    let (refused, allowed): (&str, &[&str]) = match kind {
        Kind::Bloom => (
            BAD_DATA,
            &[
                "OK",
                BAD_DATA,
                "ERR invalid offset - no link found",
                "ERR invalid chunk - Too big for current filter",
                "ERR Second argument must be numeric",
                "ERR not found",
            ],
        ),
        Kind::Cuckoo => (
            CF_BAD_HEADER,
            &[
                "OK",
                CF_BAD_HEADER,
                "Invalid header",
                "Invalid position",
                "Couldn't load chunk!",
                "ERR not found",
                "ERR item exists", // a chunk sent with iterator 1 to an existing filter
            ],
        ),
    };
    for o in header_outcomes.keys().chain(chunk_outcomes.keys()) {
        assert!(
            allowed.contains(&o.as_str()),
            "unexpected {loadchunk} outcome {o:?}"
        );
    }
    assert!(header_outcomes.get("OK").copied().unwrap_or(0) > cases / 20);
    assert!(header_outcomes.get(refused).copied().unwrap_or(0) > cases / 20);
    // Valkey too: its 75 000-byte residue for some seeds (BF_HOSTILE_SEED=1796185768731657450)
    // was its COMMANDLOG, empty at the baseline and full at the end; `used_memory` empties it.
    assert_near(baseline, after, 64 * 1024, "LOADCHUNK fuzz, after FLUSHALL");
    assert_no_panic(&s);
    println!("{kind:?} LOADCHUNK fuzz: {:?}", t0.elapsed());
}

// ------------------------------------------------------------------------------------------

fn cmd_text(con: &mut Connection, line: &str) -> Result<Value, String> {
    let parts: Vec<&str> = line.split(' ').collect();
    let v = raw(con, redis::cmd(parts[0]).arg(&parts[1..]));
    match err_of(&v) {
        Some(e) => Err(e),
        None => Ok(v),
    }
}

fn info_of(con: &mut Connection, key: &str) -> Vec<Value> {
    info_of_kind(con, Kind::Bloom, key)
}

/// BF.INFO / CF.INFO of `key`, which must be a filter of `kind`.
fn info_of_kind(con: &mut Connection, kind: Kind, key: &str) -> Vec<Value> {
    let info = kind.cmd("INFO");
    match raw(con, cmd(info.as_str()).arg(key)) {
        Value::Array(a) => a,
        v => panic!("{info} {key}: {v:?}"),
    }
}

fn info_num(con: &mut Connection, key: &str, field: &str) -> i64 {
    let v: Vec<i64> = cmd("BF.INFO").arg(key).arg(field).query(con).unwrap();
    v[0]
}

#[test]
fn absurd_sizes_are_errors_not_crashes() {
    let t0 = Instant::now();
    let mut s = Server::start();
    let mut con = s.conn();

    // Huge capacity: an error, nothing created.
    for line in [
        "BF.RESERVE a 0.01 1000000000000000000",
        "BF.RESERVE a 0.01 9223372036854775807",
        "BF.RESERVE a 0.000001 100000000000000",
        "BF.INSERT a CAPACITY 1000000000000000000 ITEMS x",
    ] {
        let e = cmd_text(&mut con, line).unwrap_err();
        assert!(e == NO_MEMORY || e == COULD_NOT, "{line}: {e}");
        println!("{line} → {e}");
    }
    if common::errors_by_line::redis8() {
        // Redis 8: the config has RedisBloom 8's range (the load argument has not).
        let e = cmd("CONFIG SET bf.initial-size 1000000000000000000")
            .query::<()>(&mut con)
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be in the range [1, 1073741824]"), "{e}");
        let mut big = Server::start_with(&["INITIAL_SIZE", "1000000000000000000"], &[]);
        let mut big_con = big.conn();
        assert_eq!(cmd_text(&mut big_con, "BF.ADD a x").unwrap_err(), NO_MEMORY);
        assert_eq!(
            cmd_text(&mut big_con, "BF.MADD a x y").unwrap_err(),
            NO_MEMORY
        );
        assert_alive(&mut big, &mut big_con, "after a huge implicit capacity");
    } else {
        let _: () = cmd("CONFIG SET bf.initial-size 1000000000000000000")
            .query(&mut con)
            .unwrap();
        assert_eq!(cmd_text(&mut con, "BF.ADD a x").unwrap_err(), NO_MEMORY);
        assert_eq!(cmd_text(&mut con, "BF.MADD a x y").unwrap_err(), NO_MEMORY);
        let _: () = cmd("CONFIG SET bf.initial-size 100")
            .query(&mut con)
            .unwrap();
    }
    let exists: i64 = cmd("EXISTS a").query(&mut con).unwrap();
    assert_eq!(exists, 0, "nothing half-created");
    assert_alive(&mut s, &mut con, "after huge capacities");

    // Tiny error rates.
    assert!(cmd_text(&mut con, "BF.RESERVE t1 1e-300 1000").is_ok());
    let debug: Vec<String> = cmd("BF.DEBUG t1").query(&mut con).unwrap();
    let (_, k1) = shape_for(1e-300 * 0.5);
    assert!(debug[1].contains(&format!("hashes:{k1} ")), "{debug:?}");
    assert_eq!(cmd_text(&mut con, "BF.ADD t1 x").unwrap(), Value::Int(1));
    assert_eq!(cmd_text(&mut con, "BF.EXISTS t1 x").unwrap(), Value::Int(1));
    // The smallest double halves to 0 for a scaling filter's first layer: not a valid layer.
    assert_eq!(
        cmd_text(&mut con, "BF.RESERVE t2 5e-324 10").unwrap_err(),
        COULD_NOT
    );
    assert!(cmd_text(&mut con, "BF.RESERVE t3 5e-324 10 NONSCALING").is_ok());
    assert_eq!(cmd_text(&mut con, "BF.ADD t3 x").unwrap(), Value::Int(1));
    let t3 = scandump(&mut con, b"t3");
    robust::loadchunks(&mut con, b"t3copy", &t3);
    assert_eq!(
        cmd_text(&mut con, "BF.EXISTS t3copy x").unwrap(),
        Value::Int(1)
    );
    let debug: Vec<String> = cmd("BF.DEBUG t3").query(&mut con).unwrap();
    println!(
        "tiny error rates: 1e-300 → {k1} hashes; 5e-324 NONSCALING → {:?}",
        debug[1]
    );

    // Expansion that overflows on growth: a full layer of 2^62 entries, growth 2^32−1.
    let (bpe, k) = shape_for(0.01);
    let header = write_header(&Header {
        size: 1 << 62,
        nfilters: 1,
        options: 5,
        growth: u32::MAX,
        layers: vec![MLayer {
            bytes: 8,
            bits: 64,
            size: 1 << 62,
            error: 0.01,
            bpe,
            hashes: k,
            entries: 1 << 62,
            n2: 0,
            data: Vec::new(),
        }],
    });
    let _: () = cmd("BF.LOADCHUNK ov 1")
        .arg(&header)
        .query(&mut con)
        .unwrap();
    let before = (info_of(&mut con, "ov"), scandump(&mut con, b"ov"));
    // An item whose bits are not all set in the empty 64-bit layer.
    assert_eq!(
        cmd_text(&mut con, "BF.ADD ov newitem").unwrap_err(),
        PROBLEM
    );
    let v = raw(&mut con, &cmd("BF.MADD ov n1 n2"));
    assert_eq!(
        format!("{v:?}")
            .matches("problem inserting into filter")
            .count(),
        2,
        "{v:?}"
    );
    assert_eq!(
        (info_of(&mut con, "ov"), scandump(&mut con, b"ov")),
        before,
        "nothing changed"
    );
    // Real growth with EXPANSION 2^32−1: the second layer (~6.7 GB) is refused by the
    // per-filter limit, nothing changes.
    let _: () = cmd("CONFIG SET bf.max-filter-bytes")
        .arg(1 << 30)
        .query(&mut con)
        .unwrap();
    assert!(cmd_text(&mut con, "BF.RESERVE g 0.01 1 EXPANSION 4294967295").is_ok());
    assert_eq!(cmd_text(&mut con, "BF.ADD g first").unwrap(), Value::Int(1));
    let before = (info_of(&mut con, "g"), scandump(&mut con, b"g"));
    assert_eq!(cmd_text(&mut con, "BF.ADD g second").unwrap_err(), PROBLEM);
    assert_eq!((info_of(&mut con, "g"), scandump(&mut con, b"g")), before);
    let _: () = cmd("CONFIG SET bf.max-filter-bytes 0")
        .query(&mut con)
        .unwrap();
    println!("expansion overflow: 2^62 entries × (2^32−1) → {PROBLEM:?}, filter unchanged");

    // 1000+ layers: capacity 1, expansion 1, error halving until it underflows.
    assert!(cmd_text(&mut con, "BF.RESERVE L 0.5 1 EXPANSION 1").is_ok());
    let mut accepted: Vec<Vec<u8>> = Vec::new();
    let mut n = 0u64;
    let stop_error = 'outer: loop {
        let batch: Vec<Vec<u8>> = (0..64)
            .map(|_| {
                n += 1;
                format!("layer-item:{n}").into_bytes()
            })
            .collect();
        let v = raw(&mut con, cmd("BF.MADD L").arg(&batch));
        let Value::Array(r) = v else { panic!("{v:?}") };
        for (it, x) in batch.into_iter().zip(r) {
            match x {
                Value::Int(_) => accepted.push(it),
                e => break 'outer err_of(&e).unwrap(),
            }
        }
        assert!(n < 100_000, "the error rate never underflowed");
    };
    let layers = info_num(&mut con, "L", "FILTERS");
    let items = info_num(&mut con, "L", "ITEMS");
    let debug: Vec<String> = cmd("BF.DEBUG L").query(&mut con).unwrap();
    println!(
        "error-rate underflow: {layers} layers, {items} items, stopped with {stop_error:?} after {n} \
         adds; last layer {:?}",
        debug.last().unwrap()
    );
    assert_eq!(stop_error, PROBLEM);
    assert!(layers >= 1000, "{layers} layers");
    robust::assert_present(&mut con, "after growth", b"L", &accepted, 1000);
    // The 1000-layer filter survives DUMP/RESTORE, DEBUG RELOAD and SCANDUMP/LOADCHUNK.
    let dump: Vec<u8> = cmd("DUMP L").query(&mut con).unwrap();
    let _: () = cmd("RESTORE L2 0").arg(dump).query(&mut con).unwrap();
    let walk = scandump(&mut con, b"L");
    robust::loadchunks(&mut con, b"L3", &walk);
    let _: () = cmd("DEBUG RELOAD").query(&mut con).unwrap();
    for k in ["L", "L2", "L3"] {
        robust::assert_present(&mut con, "after a copy", k.as_bytes(), &accepted, 1000);
        assert_eq!(info_num(&mut con, k, "FILTERS"), layers);
    }
    assert_alive(&mut s, &mut con, "after the layer underflow");
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();

    // maxmemory nearly reached.
    let used = info_u64(&mut con, "memory", "used_memory");
    let max = used + 40_000_000;
    let _: () = cmd("CONFIG SET maxmemory")
        .arg(max)
        .query(&mut con)
        .unwrap();
    assert!(cmd_text(&mut con, "BF.RESERVE mA 0.01 15000000").is_ok()); // ~20.7 MB
    assert_eq!(
        cmd_text(&mut con, "BF.RESERVE mB 0.01 15000000").unwrap_err(),
        NO_MEMORY
    );
    assert_eq!(
        cmd_text(&mut con, "BF.ADD mB x").map(|_| ()),
        Ok(()),
        "a small implicit filter still fits"
    );
    assert!(cmd_text(&mut con, "BF.RESERVE mC 0.01 1000 EXPANSION 20000").is_ok());
    let fill: Vec<Vec<u8>> = (0..1100)
        .map(|i| format!("fill:{i}").into_bytes())
        .collect();
    let v = raw(&mut con, cmd("BF.MADD mC").arg(&fill));
    let refused = format!("{v:?}")
        .matches("problem inserting into filter")
        .count();
    assert!(refused > 0, "growth past maxmemory refused: {v:?}");
    let before = (info_of(&mut con, "mC"), scandump(&mut con, b"mC"));
    assert_eq!(
        cmd_text(&mut con, "BF.ADD mC one-more").unwrap_err(),
        PROBLEM
    );
    assert_eq!(
        (info_of(&mut con, "mC"), scandump(&mut con, b"mC")),
        before,
        "nothing changed"
    );
    println!(
        "maxmemory {max} (used {used}): 20.7 MB filter created, a second refused with {NO_MEMORY:?}, \
         growth to a 31 MB layer refused with {PROBLEM:?} ({refused} items), filter unchanged"
    );
    // Past maxmemory: every deny-oom command gets Redis' OOM error; reads still work.
    let used_now = info_u64(&mut con, "memory", "used_memory");
    let _: () = cmd("CONFIG SET maxmemory")
        .arg(used_now - 1_000_000)
        .query(&mut con)
        .unwrap();
    let (_, hdr) = &scandump(&mut con, b"mB")[0];
    for args in [
        vec![b"BF.ADD".to_vec(), b"mC".to_vec(), b"x".to_vec()],
        vec![b"BF.MADD".to_vec(), b"mC".to_vec(), b"x".to_vec()],
        vec![
            b"BF.INSERT".to_vec(),
            b"new".to_vec(),
            b"ITEMS".to_vec(),
            b"x".to_vec(),
        ],
        vec![
            b"BF.RESERVE".to_vec(),
            b"new".to_vec(),
            b"0.01".to_vec(),
            b"10".to_vec(),
        ],
        vec![
            b"BF.LOADCHUNK".to_vec(),
            b"new".to_vec(),
            b"1".to_vec(),
            hdr.clone(),
        ],
    ]
    .into_iter()
    .chain(
        [
            "CF.ADD cnew x",
            "CF.ADDNX cnew x",
            "CF.INSERT cnew ITEMS x",
            "CF.INSERTNX cnew ITEMS x",
            "CF.RESERVE cnew 100",
        ]
        .map(|l| l.split(' ').map(|w| w.as_bytes().to_vec()).collect()),
    )
    .chain([vec![
        b"CF.LOADCHUNK".to_vec(),
        b"cnew".to_vec(),
        b"1".to_vec(),
        cuckoo_dump::encode_header(&Cuckoo::new(100, 2, 20, 1, u64::MAX).unwrap()).to_vec(),
    ]]) {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let r = common::raw_command(s.port, false, &refs);
        assert_eq!(
            String::from_utf8_lossy(&r),
            format!("-{OOM}\r\n"),
            "{}",
            String::from_utf8_lossy(&args[0])
        );
    }
    assert_eq!(cmd_text(&mut con, "BF.EXISTS mB x").unwrap(), Value::Int(1));
    assert!(cmd_text(&mut con, "BF.INFO mA").is_ok());
    let _: i64 = cmd("DEL mA").query(&mut con).unwrap();
    assert_eq!(
        cmd_text(&mut con, "BF.ADD mB y").unwrap(),
        Value::Int(1),
        "works again after DEL"
    );
    let _: () = cmd("CONFIG SET maxmemory 0").query(&mut con).unwrap();
    println!(
        "past maxmemory: BF.ADD/MADD/INSERT/RESERVE/LOADCHUNK, CF.ADD/ADDNX/INSERT/INSERTNX/\
         RESERVE/LOADCHUNK → -{OOM}"
    );

    // The per-filter byte limit.
    let _: () = cmd("CONFIG SET bf.max-filter-bytes")
        .arg(100_000)
        .query(&mut con)
        .unwrap();
    let limit: Vec<String> = cmd("CONFIG GET bf.max-filter-bytes")
        .query(&mut con)
        .unwrap();
    assert_eq!(limit[1], "100000");
    assert_eq!(
        cmd_text(&mut con, "BF.RESERVE x1 0.01 100000").unwrap_err(),
        NO_MEMORY
    ); // 138 KB
    assert!(cmd_text(&mut con, "BF.RESERVE x2 0.01 40000").is_ok()); // 55 KB
    let fill: Vec<Vec<u8>> = (0..41_000)
        .map(|i| format!("x2:{i}").into_bytes())
        .collect();
    let mut problems = 0;
    for g in fill.chunks(10_000) {
        let v = raw(&mut con, cmd("BF.MADD x2").arg(g));
        problems += format!("{v:?}")
            .matches("problem inserting into filter")
            .count();
    }
    assert!(problems > 0, "the second layer (125 KB) passes the limit");
    assert_eq!(info_num(&mut con, "x2", "FILTERS"), 1);
    let mut chain = Chain::new(200_000, 0.01, 2, false, u64::MAX).unwrap();
    chain.add(b"x", u64::MAX).unwrap();
    let e = raw(
        &mut con,
        cmd("BF.LOADCHUNK x3 1").arg(encode_header(&chain)),
    );
    assert_eq!(
        err_of(&e).as_deref(),
        Some(BAD_DATA),
        "header over the limit (as RedisBloom answers it)"
    );
    let _: () = cmd("CONFIG SET bf.max-filter-bytes 0")
        .query(&mut con)
        .unwrap();
    println!(
        "bf.max-filter-bytes 100000: 138 KB filter → {NO_MEMORY:?}, growth → {PROBLEM:?} ({problems} \
         items), 276 KB LOADCHUNK header → {BAD_DATA:?}"
    );
    assert_alive(&mut s, &mut con, "at the end");
    assert_no_panic(&s);
    println!("absurd sizes: {:?}", t0.elapsed());
}

/// Absurd `CF.RESERVE` / `CF.INSERT` sizes are errors with RedisBloom's text on each server
/// line (Redis 8 caps capacities at 2^30 first) and allocate nothing (`used_memory_peak` does
/// not move): capacities whose table is 2^59 buckets, 128 GiB or 2 TiB, or past 64 bits;
/// bucket sizes, max iterations and expansions out of range or past 64 bits. A growth past
/// `bf.max-filter-bytes` (a third sub-filter of 2 GiB with EXPANSION 32768) is refused
/// (`ERR Insufficient memory`, `-1` per item) and changes nothing; a CF.LOADCHUNK header over
/// it is `Couldn't create filter!` and creates nothing.
#[test]
fn cf_absurd_sizes_are_errors_not_crashes() {
    use common::errors_by_line::redis8;
    let mut s = Server::start();
    let mut con = s.conn();
    let by = |rb28: &'static str, rb8: &'static str| if redis8() { rb8 } else { rb28 };
    let cap_range = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";
    let big = by(NO_MEMORY, cap_range);
    let small = by("Capacity must be at least (BucketSize * 2)", cap_range);
    let insert_big = by(
        NO_MEMORY,
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
    );
    let insert_small = by(
        "Capacity must be at least (BucketSize * 2)",
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
    );
    let bucket_size = by(
        "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        "BUCKETSIZE: value must be in the range [1, 255]",
    );
    let max_iterations = by(
        "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        "MAXITERATIONS: value must be in the range [1, 65535]",
    );
    let expansion = by(
        "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        "EXPANSION: value must be in the range [0, 32768]",
    );
    let peak = info_u64(&mut con, "memory", "used_memory_peak");
    for (line, want) in [
        ("CF.RESERVE a 1000000000000000000", big),
        ("CF.RESERVE a 9223372036854775807", big),
        ("CF.RESERVE a 100000000000", big),
        ("CF.RESERVE a 1099511627776 BUCKETSIZE 255", big),
        ("CF.RESERVE a 9223372036854775808", "Bad capacity"),
        ("CF.RESERVE a -1", small),
        ("CF.RESERVE a -9223372036854775808", small),
        ("CF.RESERVE a 100 BUCKETSIZE 256", bucket_size),
        ("CF.RESERVE a 100 BUCKETSIZE -1", bucket_size),
        ("CF.RESERVE a 100 BUCKETSIZE 4294967297", bucket_size),
        (
            "CF.RESERVE a 100 BUCKETSIZE 18446744073709551616",
            "Couldn't parse BUCKETSIZE",
        ),
        ("CF.RESERVE a 100 MAXITERATIONS 65536", max_iterations),
        ("CF.RESERVE a 100 MAXITERATIONS 0", max_iterations),
        (
            "CF.RESERVE a 100 MAXITERATIONS 99999999999999999999",
            "Couldn't parse MAXITERATIONS",
        ),
        ("CF.RESERVE a 100 EXPANSION 32769", expansion),
        ("CF.RESERVE a 100 EXPANSION -1", expansion),
        ("CF.RESERVE a 100 EXPANSION 9223372036854775807", expansion),
        (
            "CF.INSERT a CAPACITY 1000000000000000000 ITEMS x",
            insert_big,
        ),
        (
            "CF.INSERT a CAPACITY 9223372036854775807 ITEMS x",
            insert_big,
        ),
        ("CF.INSERTNX a CAPACITY 100000000000 ITEMS x", insert_big),
        ("CF.INSERT a CAPACITY -1 ITEMS x", insert_small),
        (
            "CF.INSERT a CAPACITY 99999999999999999999 ITEMS x",
            "Bad capacity",
        ),
    ] {
        assert_eq!(cmd_text(&mut con, line).unwrap_err(), want, "{line}");
    }
    let exists: i64 = cmd("EXISTS a").query(&mut con).unwrap();
    assert_eq!(exists, 0, "nothing half-created");
    let grown = info_u64(&mut con, "memory", "used_memory_peak").saturating_sub(peak);
    println!("absurd CF sizes: refused, used_memory_peak grew by {grown} bytes");
    assert!(grown < 1 << 20, "a refused size allocated {grown} bytes");
    assert_alive(&mut s, &mut con, "after absurd CF sizes");

    // Growth past bf.max-filter-bytes: 2 buckets of 1, then 65 536, then 2^31 (2 GiB).
    let _: () = cmd("CONFIG SET bf.max-filter-bytes")
        .arg(1 << 30)
        .query(&mut con)
        .unwrap();
    assert!(cmd_text(&mut con, "CF.RESERVE g 2 BUCKETSIZE 1 EXPANSION 32768").is_ok());
    let mut refused = Vec::new();
    let mut n = 0;
    while refused.is_empty() {
        let batch: Vec<String> = (n..n + 10_000).map(|i| format!("g{i}")).collect();
        n += 10_000;
        let r: Vec<i64> = cmd("CF.INSERT g ITEMS")
            .arg(&batch)
            .query(&mut con)
            .unwrap();
        refused.extend(
            batch
                .into_iter()
                .zip(r)
                .filter(|(_, v)| *v == -1)
                .map(|(i, _)| i),
        );
        assert!(n < 200_000, "the growth to 2 GiB was never refused");
    }
    let shape = |con: &mut Connection| {
        (
            info_of_kind(con, Kind::Cuckoo, "g"),
            walk_of(con, Kind::Cuckoo, b"g"),
        )
    };
    let before = shape(&mut con);
    // The last item refused (its buckets are still full: a bucket never empties while items
    // are only added) is refused again.
    let last = refused.last().unwrap();
    assert_eq!(
        cmd_text(&mut con, &format!("CF.ADD g {last}")).unwrap_err(),
        "ERR Insufficient memory"
    );
    let refused = refused.len();
    assert_eq!(shape(&mut con), before, "nothing changed");
    let filters: Vec<Value> = info_of_kind(&mut con, Kind::Cuckoo, "g");
    println!(
        "CF growth to a 2 GiB sub-filter past bf.max-filter-bytes 1 GiB: {refused} items -1, \
         CF.ADD → ERR Insufficient memory, unchanged; CF.INFO {filters:?}"
    );
    // A header over the limit: 65 536 buckets of 2 (128 KiB) against 100 000 bytes.
    let _: () = cmd("CONFIG SET bf.max-filter-bytes 100000")
        .query(&mut con)
        .unwrap();
    let h = cuckoo_dump::Header {
        items: 1,
        buckets: 1 << 16,
        deletes: 0,
        filters: 1,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
    };
    let r = raw(
        &mut con,
        cmd("CF.LOADCHUNK big 1").arg(write_cuckoo_header(&h)),
    );
    assert_eq!(err_of(&r).as_deref(), Some(CF_BAD_HEADER));
    let exists: i64 = cmd("EXISTS big").query(&mut con).unwrap();
    assert_eq!(exists, 0);
    let _: () = cmd("CONFIG SET bf.max-filter-bytes 0")
        .query(&mut con)
        .unwrap();
    assert_alive(&mut s, &mut con, "at the end");
    assert_no_panic(&s);
}

// ------------------------------------------------------------------------------------------

/// jemalloc's size class for a small allocation (what `sdsZmallocSize` reports).
fn size_class(n: u64) -> u64 {
    match n {
        0..=8 => 8,
        9..=128 => n.div_ceil(16) * 16,
        129..=256 => n.div_ceil(32) * 32,
        257..=512 => n.div_ceil(64) * 64,
        _ => n.div_ceil(128) * 128,
    }
}

/// Where a server keeps a key's name, which MEMORY USAGE counts besides the module's figure.
#[derive(Clone, Copy)]
enum KeyLayout {
    /// Redis 7.x and 8.0: an sds of its own and a dict entry (24 bytes).
    SdsAndDictEntry,
    /// Redis after 8.0 (8.6 checked): embedded in the key's object (16-byte header, 1 byte for
    /// the sds header's size, the sds), one allocation.
    EmbeddedRedis,
    /// Valkey 9: embedded as in Redis after 8.0, with an 8-byte expire field for names of 128
    /// bytes and more.
    EmbeddedValkey,
}

impl KeyLayout {
    fn of(con: &mut Connection) -> KeyLayout {
        let info: String = cmd("INFO server").query(con).unwrap();
        if info.contains("valkey_version:") {
            return KeyLayout::EmbeddedValkey;
        }
        let version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .expect("INFO server has redis_version");
        let mut parts = version.trim().split('.').map(|p| p.parse::<u32>().unwrap());
        if (parts.next().unwrap(), parts.next().unwrap()) <= (8, 0) {
            KeyLayout::SdsAndDictEntry
        } else {
            KeyLayout::EmbeddedRedis
        }
    }

    /// What MEMORY USAGE adds to the module's figure for a key named `key`.
    fn overhead(self, key: &[u8]) -> i64 {
        let sds = match key.len() {
            0..=31 => 1,
            32..=255 => 3,
            _ => 5,
        } + key.len() as u64
            + 1;
        let expire = if key.len() >= 128 { 8 } else { 0 };
        (match self {
            KeyLayout::SdsAndDictEntry => size_class(sds) + 24,
            KeyLayout::EmbeddedRedis => size_class(16 + 1 + sds),
            KeyLayout::EmbeddedValkey => size_class(16 + expire + 1 + sds),
        }) as i64
    }
}

/// MEMORY USAGE = BF.INFO / CF.INFO Size + the key's name as the server keeps it
/// ([`KeyLayout`]: its sds — header, 1 byte for names shorter than 32 bytes, 3 below 256, +
/// name + NUL — rounded to jemalloc's size class, and what holds it). Size = 32 + Σ (64 +
/// layer bytes) from BF.DEBUG for a Bloom filter; 40 + Σ (16 + buckets × expansion^i × bucket
/// size) over its sub-filters, from CF.INFO, for a cuckoo filter.
fn check_memory_formula(
    con: &mut Connection,
    layout: KeyLayout,
    kind: Kind,
    key: &[u8],
) -> (i64, i64) {
    let (size, formula) = match kind {
        Kind::Bloom => {
            let v: Vec<i64> = cmd("BF.INFO").arg(key).arg("SIZE").query(con).unwrap();
            let debug: Vec<String> = cmd("BF.DEBUG").arg(key).query(con).unwrap();
            let layer_bytes: i64 = debug[1..]
                .iter()
                .map(|l| {
                    l.split(' ')
                        .find_map(|f| f.strip_prefix("bytes:"))
                        .unwrap()
                        .parse::<i64>()
                        .unwrap()
                })
                .map(|b| 64 + b)
                .sum();
            (v[0], 32 + layer_bytes)
        }
        Kind::Cuckoo => {
            let info: BTreeMap<String, i64> = cmd("CF.INFO").arg(key).query(con).unwrap();
            let (buckets, filters) = (info["Number of buckets"], info["Number of filters"]);
            let (bucket_size, expansion) = (info["Bucket size"], info["Expansion rate"]);
            let tables: i64 = (0..filters)
                .map(|i| buckets * expansion.pow(i as u32) * bucket_size)
                .sum();
            (info["Size"], 40 + 16 * filters + tables)
        }
    };
    assert_eq!(size, formula, "{kind:?} Size formula for {key:?}");
    let usage: i64 = cmd("MEMORY USAGE").arg(key).query(con).unwrap();
    let overhead = layout.overhead(key);
    assert_eq!(
        usage,
        size + overhead,
        "MEMORY USAGE of {:?}",
        String::from_utf8_lossy(key)
    );
    (size, usage)
}

#[test]
fn no_leak_after_10000_filters() {
    const FILTERS: usize = 10_000;
    const BATCH: usize = 250;
    let t0 = Instant::now();
    let mut rng = Rng::new(robust::seed_from_env("BF_HOSTILE_SEED"));
    let mut s = Server::start();
    let mut meter = s.conn();
    let mut con = s.conn();
    let layout = KeyLayout::of(&mut con);
    // A template for LOADCHUNK and RESTORE copies.
    assert!(cmd_text(&mut con, "BF.RESERVE tpl 0.001 5000 EXPANSION 3").is_ok());
    let tpl_items: Vec<String> = (0..12_000).map(|i| format!("t{i}")).collect();
    let _ = raw(&mut con, cmd("BF.MADD tpl").arg(&tpl_items));
    let tpl_walk = scandump(&mut con, b"tpl");
    let tpl_dump: Vec<u8> = cmd("DUMP tpl").query(&mut con).unwrap();
    // And a cuckoo one: grown (bucket size 4, expansion 2), with deletions.
    assert!(cmd_text(&mut con, "CF.RESERVE ctpl 1000 BUCKETSIZE 4 EXPANSION 2").is_ok());
    let _ = raw(
        &mut con,
        cmd("CF.INSERT ctpl ITEMS").arg(&tpl_items[..4000]),
    );
    for it in &tpl_items[..100] {
        let _: i64 = cmd("CF.DEL ctpl").arg(it).query(&mut con).unwrap();
    }
    let ctpl_walk = walk_of(&mut con, Kind::Cuckoo, b"ctpl");
    let ctpl_dump: Vec<u8> = cmd("DUMP ctpl").query(&mut con).unwrap();
    let round = |con: &mut Connection,
                 rng: &mut Rng,
                 first: usize,
                 n: usize,
                 sampled: &mut Vec<(i64, i64)>| {
        let mut p = redis::pipe();
        let mut count = 0;
        let keys: Vec<String> = (first..first + n).map(|i| format!("leak:{i}")).collect();
        for (j, k) in keys.iter().enumerate() {
            let digits = 1 + rng.below(5) as u32;
            let cap = 1 + rng.below(10u64.pow(digits));
            let err = [0.1, 0.01, 0.001, 1e-4, 1e-6][rng.below(5) as usize];
            let items: Vec<String> = (0..rng.below(3 * cap.min(2000) + 1))
                .map(|i| format!("{k}:{i}"))
                .collect();
            match j % 12 {
                0 => {
                    p.cmd("BF.RESERVE").arg(k).arg(err).arg(cap);
                    count += 1;
                    if !items.is_empty() {
                        p.cmd("BF.MADD").arg(k).arg(&items);
                        count += 1;
                    }
                }
                1 => {
                    p.cmd("BF.ADD").arg(k).arg("first");
                    p.cmd("BF.MADD").arg(k).arg(&items).arg("x");
                    count += 2;
                }
                2 => {
                    p.cmd("BF.INSERT")
                        .arg(k)
                        .arg("CAPACITY")
                        .arg(cap)
                        .arg("ERROR")
                        .arg(err);
                    if rng.chance(30) {
                        p.arg("NONSCALING");
                    }
                    p.arg("ITEMS").arg(&items).arg("x");
                    count += 1;
                }
                // Cuckoo filters: the same ways of making one, and deletions.
                6 => {
                    let bucket_size = [1, 2, 4][rng.below(3) as usize];
                    let expansion = [0, 1, 2, 4][rng.below(4) as usize];
                    p.cmd("CF.RESERVE")
                        .arg(k)
                        .arg(cap.max(2 * bucket_size))
                        .arg("BUCKETSIZE")
                        .arg(bucket_size)
                        .arg("EXPANSION")
                        .arg(expansion);
                    count += 1;
                    if !items.is_empty() {
                        p.cmd("CF.INSERT").arg(k).arg("ITEMS").arg(&items);
                        count += 1;
                    }
                }
                7 => {
                    p.cmd("CF.ADD").arg(k).arg("first");
                    p.cmd("CF.INSERT").arg(k).arg("ITEMS").arg(&items).arg("x");
                    count += 2;
                    for it in items.iter().take(items.len() / 3) {
                        p.cmd("CF.DEL").arg(k).arg(it);
                        count += 1;
                    }
                }
                8 => {
                    p.cmd("CF.INSERT")
                        .arg(k)
                        .arg("CAPACITY")
                        .arg(cap.max(4))
                        .arg("ITEMS")
                        .arg(&items)
                        .arg("x");
                    count += 1;
                }
                // A copy of a template, of the kind of the case: LOADCHUNK of its SCANDUMP
                // walk, RESTORE of its DUMP, COPY (3, 4, 5: Bloom; 9, 10, 11: cuckoo).
                n => {
                    let (tpl, walk, dump, loadchunk) = if n < 6 {
                        ("tpl", &tpl_walk, &tpl_dump, "BF.LOADCHUNK")
                    } else {
                        ("ctpl", &ctpl_walk, &ctpl_dump, "CF.LOADCHUNK")
                    };
                    match n % 3 {
                        0 => {
                            for (it, d) in walk {
                                p.cmd(loadchunk).arg(k).arg(*it).arg(d.as_slice());
                                count += 1;
                            }
                        }
                        1 => {
                            p.cmd("RESTORE").arg(k).arg(0).arg(dump.as_slice());
                            count += 1;
                        }
                        _ => {
                            p.cmd("COPY").arg(tpl).arg(k);
                            count += 1;
                        }
                    }
                }
            }
        }
        let r = raw_pipe(con, &p, count);
        for v in &r {
            let replies = match v {
                Value::Array(a) => a.clone(),
                v => vec![v.clone()],
            };
            for x in replies {
                let e = err_of(&x);
                assert!(
                    e.is_none() || e.as_deref() == Some(FULL) || e.as_deref() == Some(CF_MAX),
                    "unexpected reply {x:?}"
                );
            }
        }
        for (j, k) in keys.iter().enumerate().step_by(97) {
            let kind = if j % 12 < 6 {
                Kind::Bloom
            } else {
                Kind::Cuckoo
            };
            sampled.push(check_memory_formula(con, layout, kind, k.as_bytes()));
        }
        let dbsize: i64 = cmd("DBSIZE").query(con).unwrap();
        assert_eq!(dbsize as usize, n + 2, "every filter created");
        let deleted: i64 = cmd("DEL").arg(&keys).query(con).unwrap();
        assert_eq!(deleted as usize, n);
    };
    let mut sampled = Vec::new();
    // Warm-up round, then the baseline.
    round(&mut con, &mut rng, 0, BATCH, &mut sampled);
    // Measured with only the idle meter connected, at the start as at the end (a connection
    // that sent big pipelines holds buffers of its own).
    drop(con);
    let start = used_memory(&mut meter);
    let mut con = s.conn();
    let bf_start = info_u64(&mut meter, "bf", "bf_bytes");
    let cf_start = info_u64(&mut meter, "bf", "bf_cf_bytes");
    let mut peak = 0;
    let mut created = 0;
    while created < FILTERS {
        round(&mut con, &mut rng, BATCH + created, BATCH, &mut sampled);
        created += BATCH;
        peak = peak.max(info_u64(&mut meter, "memory", "used_memory_peak"));
    }
    drop(con);
    let end = used_memory(&mut meter);
    let bf_end = info_u64(&mut meter, "bf", "bf_bytes");
    assert_eq!(
        info_u64(&mut meter, "bf", "bf_filters"),
        1,
        "only the template is left"
    );
    assert_eq!(bf_end, bf_start, "INFO bf bytes back to its start");
    assert_eq!(
        info_u64(&mut meter, "bf", "bf_cf_filters"),
        1,
        "only the cuckoo template is left"
    );
    assert_eq!(
        info_u64(&mut meter, "bf", "bf_cf_bytes"),
        cf_start,
        "INFO bf cuckoo bytes back to their start"
    );
    println!(
        "{created} filters created and deleted, half Bloom, half cuckoo (RESERVE/ADD/INSERT/\
         LOADCHUNK/RESTORE/COPY, CF.DEL; sizes up to ~{} KB); peak used_memory {peak}",
        100_000 * 29 / 8 / 1024
    );
    let (sizes, usages): (Vec<i64>, Vec<i64>) = sampled.iter().copied().unzip();
    println!(
        "MEMORY USAGE = BF.INFO / CF.INFO Size + key overhead and Size = 32 + Σ(64 + bytes) / \
         40 + Σ(16 + table bytes) on {} sampled filters (Size {}..{} bytes, MEMORY USAGE {}..{})",
        sampled.len(),
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap(),
        usages.iter().min().unwrap(),
        usages.iter().max().unwrap()
    );
    println!(
        "used_memory grew by {:.1} bytes per filter created and deleted",
        (end as f64 - start as f64) / created as f64
    );
    assert_near(start, end, 0, "create/delete 10 000 filters");
    assert_alive(&mut s, &mut meter, "at the end");
    assert_no_panic(&s);
    println!("leak check: {:?}", t0.elapsed());
}

// ------------------------------------------------------------------------------------------

mod random_commands {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    use std::cell::RefCell;

    /// Every BF and CF command, with the arguments after the key each takes (lowest,
    /// highest), so most cases get past the arity check and reach the parsers and the data
    /// paths.
    const COMMANDS: [(&str, (usize, usize)); 25] = [
        ("BF.RESERVE", (2, 5)),
        ("BF.ADD", (1, 1)),
        ("BF.MADD", (1, 6)),
        ("BF.INSERT", (1, 10)),
        ("BF.EXISTS", (1, 1)),
        ("BF.MEXISTS", (1, 6)),
        ("BF.INFO", (0, 1)),
        ("BF.CARD", (0, 0)),
        ("BF.DEBUG", (0, 0)),
        ("BF.SCANDUMP", (1, 1)),
        ("BF.LOADCHUNK", (2, 2)),
        ("CF.RESERVE", (1, 7)),
        ("CF.ADD", (1, 1)),
        ("CF.ADDNX", (1, 1)),
        ("CF.INSERT", (2, 8)),
        ("CF.INSERTNX", (2, 8)),
        ("CF.EXISTS", (1, 1)),
        ("CF.MEXISTS", (1, 6)),
        ("CF.DEL", (1, 1)),
        ("CF.COUNT", (1, 1)),
        ("CF.INFO", (0, 0)),
        ("CF.DEBUG", (0, 0)),
        ("CF.SCANDUMP", (1, 1)),
        ("CF.LOADCHUNK", (2, 2)),
        ("CF.COMPACT", (0, 0)),
    ];

    /// One argument: a keyword of either family, a number (edge values included), a key of
    /// the pool, random bytes, or a real SCANDUMP header (`headers`: a Bloom and a cuckoo one).
    fn token(headers: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
        let words: Vec<&'static str> = vec![
            "CAPACITY",
            "ERROR",
            "EXPANSION",
            "NOCREATE",
            "NONSCALING",
            "ITEMS",
            "SIZE",
            "FILTERS",
            "BUCKETSIZE",
            "MAXITERATIONS",
            "bucketsize",
            "maxiterations",
            "255",
            "256",
            "65535",
            "65536",
            "32768",
            "32769",
            "capacity",
            "items",
            "nonscaling",
            "expansion",
            "e",
            "i",
            "n",
            "c",
            "Expansion",
            "0",
            "1",
            "2",
            "3",
            "-1",
            "100",
            "1000",
            "01",
            "+1",
            "1.5",
            "1e3",
            "0.5",
            "0.01",
            "1e-300",
            "5e-324",
            "1e308",
            "1e999",
            "inf",
            "-inf",
            "nan",
            "0x1p-3",
            ".5",
            "",
            " 1",
            "1 ",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "1000000000000000000",
        ];
        let keys = vec!["pk0", "pk1", "pk2", "pk3", "str"];
        prop_oneof![
            4 => proptest::sample::select(words).prop_map(|w| w.as_bytes().to_vec()),
            3 => proptest::sample::select(keys).prop_map(|w| w.as_bytes().to_vec()),
            2 => proptest::collection::vec(any::<u8>(), 0..24),
            1 => proptest::sample::select(headers),
            1 => any::<i64>().prop_map(|i| i.to_string().into_bytes()),
        ]
    }

    /// (command index, lower-case name, arguments): 85% with the command's arity and a key from
    /// a small pool, the rest fully random.
    fn command(headers: Vec<Vec<u8>>) -> impl Strategy<Value = (usize, bool, Vec<Vec<u8>>)> {
        let keys = vec!["pk0", "pk1", "pk2", "pk3", "str"];
        (
            0..COMMANDS.len(),
            any::<bool>(),
            0..100u8,
            proptest::sample::select(keys),
            proptest::collection::vec(token(headers), 0..11),
            any::<u16>(),
        )
            .prop_map(|(ci, lower, mode, key, mut rest, pick)| {
                if mode < 85 {
                    let (lo, hi) = COMMANDS[ci].1;
                    let n = lo + usize::from(pick) % (hi - lo + 1);
                    rest.resize(n, b"x".to_vec());
                    rest.insert(0, key.as_bytes().to_vec());
                }
                (ci, lower, rest)
            })
    }

    #[test]
    fn random_commands_never_panic() {
        let cases = if std::env::var_os("BF_SOAK").is_some() {
            20_000
        } else {
            1000
        };
        let t0 = Instant::now();
        // Bounded so random capacities cannot make the server allocate gigabytes.
        let mut s = Server::start_with(&["max-filter-bytes", "67108864"], &[]);
        let mut con2 = s.conn();
        let con3 = s.conn3();
        let _: () = cmd("SET str").arg("a string").query(&mut con2).unwrap();
        let _: () = cmd("BF.RESERVE tplh")
            .arg(0.01)
            .arg(50)
            .query(&mut con2)
            .unwrap();
        let _: () = cmd("CF.RESERVE tplc 100").query(&mut con2).unwrap();
        let _: () = cmd("CF.ADD tplc x").query(&mut con2).unwrap();
        let headers = vec![
            scandump(&mut con2, b"tplh")[0].1.clone(),
            walk_of(&mut con2, Kind::Cuckoo, b"tplc")[0].1.clone(),
        ];
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let strategy = proptest::collection::vec(command(headers), 1..16);
        // (RESP2 connection, RESP3 connection, cases, commands, error texts seen)
        let state = RefCell::new((con2, con3, 0usize, 0usize, BTreeMap::<String, usize>::new()));
        let result = runner.run(&strategy, |case| {
            let mut st = state.borrow_mut();
            let st = &mut *st;
            st.2 += 1;
            let n = st.2;
            for (ci, lower, args) in &case {
                let name = if *lower {
                    COMMANDS[*ci].0.to_ascii_lowercase()
                } else {
                    COMMANDS[*ci].0.to_string()
                };
                let mut c = redis::cmd(&name);
                for a in args {
                    c.arg(a.as_slice());
                }
                let con: &mut Connection = if n % 2 == 0 { &mut st.0 } else { &mut st.1 };
                let v = match con.req_command(&c) {
                    Ok(v) => v,
                    Err(e) if e.code().is_some() => {
                        Value::ServerError(redis::ServerError::try_from(e).unwrap())
                    }
                    Err(e) => {
                        return Err(TestCaseError::fail(format!(
                            "I/O error on {name} {args:?}: {e}"
                        )))
                    }
                };
                st.3 += 1;
                if format!("{v:?}").contains(&CAUGHT_PANIC[4..]) {
                    return Err(TestCaseError::fail(format!(
                        "caught panic: {name} {args:?}"
                    )));
                }
                if let Some(e) = err_of(&v) {
                    let first: String = e.chars().take(48).collect();
                    *st.4.entry(first).or_default() += 1;
                }
            }
            let pong: String = cmd("PING")
                .query(&mut st.0)
                .map_err(|e| TestCaseError::fail(format!("no PONG: {e}")))?;
            prop_assert_eq!(pong, "PONG");
            if n % 50 == 0 {
                let _: () = cmd("FLUSHALL").query(&mut st.0).unwrap();
                let _: () = cmd("SET str").arg("a string").query(&mut st.0).unwrap();
            }
            Ok(())
        });
        let (mut con2, _, n, commands, errors) = state.into_inner();
        let alive = s.is_alive();
        println!(
            "{n} random cases, {commands} BF and CF commands (RESP2 and RESP3), {} answered without an \
             error, server alive: {alive}, {:?}; error replies seen:",
            commands - errors.values().sum::<usize>(),
            t0.elapsed()
        );
        for (e, c) in &errors {
            println!("  {c:6}  {e}");
        }
        if let Err(e) = result {
            panic!("{e}; log:\n{}", tail(&s.log()));
        }
        assert!(alive);
        assert_alive(&mut s, &mut con2, "after the random commands");
        assert_no_panic(&s);
    }
}

// ------------------------------------------------------------------------------------------
// Static Ribbon filters (`bf-ribbon`, RF.*).

/// A Ribbon header with one field replaced: `(offset, bytes)` written over a real header.
fn ribbon_header_with(header: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut h = header.to_vec();
    h[at..at + bytes.len()].copy_from_slice(bytes);
    h
}

/// Hostile `bf-ribbon` input is refused with an exact error and changes nothing, the server
/// stays up: RF.LOADCHUNK headers of the wrong length, version, error rate, item or bumped
/// count, shape (0 blocks, 0 or 33 result bits, the upper blocks past the last, a body of
/// exabytes or past `bf.max-filter-bytes`); chunks out of order, empty, too long, without a
/// header, or completing a body whose bumped hashes are not increasing; RESTORE of truncated
/// and garbled DUMP payloads of both states (CRC fixed, so the module reads them), which
/// either fail with `ERR Bad data format` and create nothing or give a key every RF command
/// answers and a DEBUG RELOAD keeps.
#[test]
fn ribbon_hostile_payloads_are_refused() {
    use redis_bf::bloom::ribbon::dump::{chunk_at, encode_header};
    let mut s = Server::start_with(&["max-filter-bytes", FUZZ_FILTER_LIMIT], &[]);
    let mut con = s.conn();
    let set: Vec<Vec<u8>> = (0..3000).map(|i| format!("h:{i}").into_bytes()).collect();
    let ribbon = common::rf_core(&set, 0.01);
    let header = encode_header(&ribbon).to_vec();
    let (_, body) = chunk_at(&ribbon, 1).unwrap();
    let le = |v: u64| v.to_le_bytes().to_vec();
    let bad_headers: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("48 bytes", header[..48].to_vec()),
        ("50 bytes", [&header[..], &[0]].concat()),
        ("version 0", ribbon_header_with(&header, 0, &[0])),
        ("version 2", ribbon_header_with(&header, 0, &[2])),
        (
            "error rate 0",
            ribbon_header_with(&header, 1, &0f64.to_le_bytes()),
        ),
        (
            "error rate 1",
            ribbon_header_with(&header, 1, &1f64.to_le_bytes()),
        ),
        (
            "error rate NaN",
            ribbon_header_with(&header, 1, &f64::NAN.to_le_bytes()),
        ),
        (
            "error rate -0.5",
            ribbon_header_with(&header, 1, &(-0.5f64).to_le_bytes()),
        ),
        ("items 2^32", ribbon_header_with(&header, 9, &le(1 << 32))),
        ("bumped > items", ribbon_header_with(&header, 41, &le(3001))),
        ("0 blocks", ribbon_header_with(&header, 17, &le(0))),
        (
            "0 result bits",
            ribbon_header_with(&header, 25, &0u32.to_le_bytes()),
        ),
        (
            "33 result bits",
            ribbon_header_with(&header, 25, &33u32.to_le_bytes()),
        ),
        (
            "upper past the last block",
            ribbon_header_with(&header, 29, &le(u64::MAX)),
        ),
        ("2^60 blocks", ribbon_header_with(&header, 17, &le(1 << 60))),
        (
            "u64::MAX blocks",
            ribbon_header_with(&header, 17, &le(u64::MAX)),
        ),
        (
            "past bf.max-filter-bytes",
            ribbon_header_with(&header, 17, &le(1 << 20)),
        ),
        (
            "u64::MAX bumped",
            ribbon_header_with(&header, 41, &le(u64::MAX)),
        ),
    ];
    for (what, h) in &bad_headers {
        let r = robust::raw(&mut con, cmd("RF.LOADCHUNK k 1").arg(&h[..]));
        assert_eq!(err_of(&r).as_deref(), Some(BAD_DATA), "header {what}");
        let n: i64 = cmd("EXISTS k").query(&mut con).unwrap();
        assert_eq!(n, 0, "header {what} created the key");
    }
    assert_alive(&mut s, &mut con, "after the bad headers");
    // Chunks: a real header, then chunks in the wrong places, each refused; the good chunk
    // still completes the copy after every refusal.
    let body_end = body.len() as i64 + 1;
    let _: () = cmd("RF.LOADCHUNK k 1")
        .arg(&header[..])
        .query(&mut con)
        .unwrap();
    // Refusals with another answer than BAD_DATA (asserted at the end, so the rest runs).
    let mut wrong = Vec::new();
    // A negative iterator: BF.LOADCHUNK's error.
    let r = robust::raw(&mut con, cmd("RF.LOADCHUNK k -5").arg(&body[..]));
    let numeric = "ERR Second argument must be numeric";
    assert_eq!(err_of(&r).as_deref(), Some(numeric), "a negative iterator");
    for (what, pos, data) in [
        ("position 0", 0, body.clone()),
        ("position 2", 2, body.clone()),
        ("past the end", body_end + 1, body[..8].to_vec()),
        ("empty", body_end, Vec::new()),
        ("too long", body_end, [&body[..], &[0u8; 8]].concat()),
    ] {
        let r = robust::raw(&mut con, cmd("RF.LOADCHUNK k").arg(pos).arg(&data[..]));
        if err_of(&r).as_deref() != Some(BAD_DATA) {
            wrong.push(format!("chunk {what}: {r:?}"));
        }
    }
    let r = robust::raw(
        &mut con,
        cmd("RF.LOADCHUNK nokey").arg(body_end).arg(&body[..]),
    );
    assert!(err_of(&r).is_some(), "a chunk without a header: {r:?}");
    assert_eq!(cmd("EXISTS nokey").query::<i64>(&mut con).unwrap(), 0);
    let _: () = cmd("RF.LOADCHUNK k")
        .arg(body_end)
        .arg(&body[..])
        .query(&mut con)
        .unwrap();
    assert!(common::rf_scandump(&mut con, b"k") == common::rf_core_walk(&ribbon));
    // Bumped hashes out of order: a filter with two bumped hashes, the last chunk swapped.
    let big: Vec<Vec<u8>> = (0..400_000)
        .map(|i| format!("b:{i}").into_bytes())
        .collect();
    let bumpy = common::rf_core(&big, 0.01);
    if bumpy.bumped().len() >= 2 {
        let walk = common::rf_core_walk(&bumpy);
        let (last_iter, last) = walk.last().unwrap().clone();
        let mut swapped = last.clone();
        let n = swapped.len();
        let (a, b) = (swapped[n - 16..n - 8].to_vec(), swapped[n - 8..].to_vec());
        swapped[n - 16..n - 8].copy_from_slice(&b);
        swapped[n - 8..].copy_from_slice(&a);
        common::loadchunk_walk(&mut con, "RF.LOADCHUNK", b"bumpy", &walk[..walk.len() - 1]);
        let r = robust::raw(
            &mut con,
            cmd("RF.LOADCHUNK bumpy").arg(last_iter).arg(&swapped[..]),
        );
        assert_eq!(
            err_of(&r).as_deref(),
            Some(BAD_DATA),
            "bumped hashes out of order"
        );
        // Refused whole: the copy is as it was (still loading, answering no membership),
        // so a primary and its replicas stay alike; the right last chunk then completes it.
        let state: Vec<String> = cmd("RF.INFO bumpy STATE").query(&mut con).unwrap();
        assert_eq!(state, ["loading"], "a refused last chunk changed the copy");
        let e = robust::raw(&mut con, &cmd("RF.EXISTS bumpy b:0"));
        assert_ne!(e, Value::Int(0), "a half copy answered a false 0");
        let _: () = cmd("RF.LOADCHUNK bumpy")
            .arg(last_iter)
            .arg(&last[..])
            .query(&mut con)
            .unwrap();
        assert!(
            common::rf_scandump(&mut con, b"bumpy") == walk,
            "the copy completed after a refused last chunk differs"
        );
    } else {
        panic!(
            "400 000 items bumped {} hashes: pick a bigger set",
            bumpy.bumped().len()
        );
    }
    assert_alive(&mut s, &mut con, "after the bad chunks");
    // RESTORE of truncated and garbled payloads, both states.
    let _: Vec<i64> = cmd("RF.MADD staged")
        .arg(&set[..500])
        .query(&mut con)
        .unwrap();
    let mut rng = Rng::new(robust::seed_from_env("BF_HOSTILE_SEED"));
    let mut accepted = 0;
    for source in [&b"k"[..], b"staged"] {
        let payload: Vec<u8> = cmd("DUMP").arg(source).query(&mut con).unwrap();
        let (body, version) = unseal(&payload);
        for case in 0..300 {
            let mut b = body.clone();
            match case % 3 {
                0 => b.truncate(rng.below(b.len() as u64) as usize),
                1 => {
                    for _ in 0..1 + rng.below(4) {
                        let at = 1 + rng.below(b.len() as u64 - 1) as usize;
                        b[at] ^= 1 << rng.below(8);
                    }
                }
                _ => {
                    let at = 1 + rng.below(b.len() as u64 - 1) as usize;
                    let len = 1 + rng.below(16) as usize;
                    b.splice(at..at, rng.bytes(len));
                }
            }
            let r = robust::raw(&mut con, cmd("RESTORE r 0").arg(seal(&b, version)));
            if let Some(e) = err_of(&r) {
                assert_eq!(e, BAD_FORMAT, "{source:?} case {case}");
                assert_eq!(cmd("EXISTS r").query::<i64>(&mut con).unwrap(), 0);
                continue;
            }
            accepted += 1;
            for line in [
                "RF.CARD r",
                "RF.INFO r",
                "RF.EXISTS r h:1",
                "RF.MEXISTS r h:2 x",
            ] {
                let v = robust::raw(&mut con, &cmd(line));
                assert!(err_of(&v).is_none(), "{line} on an accepted RESTORE: {v:?}");
            }
            let _: i64 = cmd("DEL r").query(&mut con).unwrap();
        }
        assert_alive(&mut s, &mut con, "after the RESTOREs");
    }
    println!("ribbon RESTORE: {accepted} of 600 mutated payloads accepted (and usable)");
    let _: () = cmd("DEBUG RELOAD").query(&mut con).unwrap();
    assert!(common::rf_scandump(&mut con, b"k") == common::rf_core_walk(&ribbon));
    assert_no_panic(&s);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
