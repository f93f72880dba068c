//! Persistence and replication with a real server: a mix of filters (scaling with several
//! layers, NONSCALING, binary items and key names, custom EXPANSION, implicit creation, a
//! LOADCHUNK-made legacy 32-bit filter, a filter whose layer spans two 16 MiB SCANDUMP chunks)
//! must come back identical — BF.INFO, BF.DEBUG, BF.CARD, every SCANDUMP byte, every member and
//! the answers for 10 000 non-members — after DEBUG RELOAD, SAVE + restart, an AOF rewrite
//! without RDB preamble + restart, AOF replay (also under other module defaults, `docs/commands.md` "Replication and AOF"),
//! DUMP/RESTORE, SCANDUMP→LOADCHUNK (same and other server) and on a replica (`docs/commands.md` "Replication and AOF").

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{cmd, crc64, info_str, rdb_len, Rng, Server};
use redis::Value;
use redis_bf::bloom::chain::{AddError, AddOutcome, Chain};
use redis_bf::bloom::dump::{chunk_at, encode_header};
use redis_bf::bloom::layer::{Layer, LayerParams};
use redis_bf::bloom::rdb::{save, Value as RdbValue, Values};
use redis_bf::module::bloom::commands::info::debug_lines;

type Bytes = Vec<u8>;

/// Non-member probes compared between states.
const PROBES: usize = 10_000;
/// Module type id of `MBbloom--` encoding version 4.
const MODULE_ID: u64 = 0x3016_e5a2_89be_f804;
/// Module load arguments giving other auto-create defaults than the primary's (100, 0.01).
const OTHER_DEFAULTS: [&str; 4] = ["INITIAL_SIZE", "7", "ERROR_RATE", "0.2"];

// ------------------------------------------------------------------------------------------
// Small utilities.

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).escape_debug().to_string()
}

fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Bytes> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// `BF.RESERVE key ARGS`: `args` as on the command line after the key (error rate, capacity,
/// then `EXPANSION n` and `NONSCALING` when given).
fn reserve(key: &[u8], args: &str) -> Op {
    Op::Reserve {
        key: key.to_vec(),
        args: args.to_string(),
    }
}

/// `BF.INSERT key OPTIONS ITEMS items…`: `options` as on the command line (`CAPACITY n`,
/// `ERROR e`, `EXPANSION n`, `NONSCALING`, each when given).
fn insert(key: &[u8], options: &str, items: Vec<Bytes>) -> Op {
    Op::Insert {
        key: key.to_vec(),
        options: options.to_string(),
        items,
    }
}

/// The word after `name` in `words`, parsed; None without `name`.
fn option_value<T: std::str::FromStr>(words: &[&str], name: &str) -> Option<T> {
    let at = words.iter().position(|w| *w == name)?;
    let value = words[at + 1];
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} {value}: not a number")),
    )
}

fn madd(key: &[u8], items: Vec<Bytes>) -> Op {
    Op::Madd {
        key: key.to_vec(),
        items,
    }
}

/// A LOADCHUNK walk of `chain` with `items` added by the core.
fn load(key: &[u8], chain: Chain, items: Vec<Bytes>) -> Op {
    Op::Load {
        key: key.to_vec(),
        chain: chain_with_items(chain, &items),
        items,
    }
}

fn add(key: &[u8], item: Bytes) -> Op {
    Op::Add {
        key: key.to_vec(),
        item,
    }
}

fn probes() -> Vec<Bytes> {
    (0..PROBES)
        .map(|i| {
            if i % 4 == 0 {
                let mut v = vec![0xfe, 0x00];
                v.extend_from_slice(&(i as u64).to_le_bytes());
                v
            } else {
                format!("absent:{i}").into_bytes()
            }
        })
        .collect()
}

fn renamed(prefix: &str, key: &[u8]) -> Bytes {
    let mut k = prefix.as_bytes().to_vec();
    k.extend_from_slice(key);
    k
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ping(con: &mut redis::Connection) {
    let p: String = cmd("PING").query(con).expect("server still answers");
    assert_eq!(p, "PONG");
}

fn dbsize(con: &mut redis::Connection) -> usize {
    cmd("DBSIZE").query(con).unwrap()
}

// ------------------------------------------------------------------------------------------
// Fixture operations, run on a server and mirrored by the pure core.

#[derive(Clone)]
enum Op {
    Reserve {
        key: Bytes,
        /// The arguments after the key as on the command line: error rate, capacity, options.
        args: String,
    },
    Add {
        key: Bytes,
        item: Bytes,
    },
    Madd {
        key: Bytes,
        items: Vec<Bytes>,
    },
    Insert {
        key: Bytes,
        /// The options as on the command line, before `ITEMS`.
        options: String,
        items: Vec<Bytes>,
    },
    /// LOADCHUNK walk of a chain built with the core from `items`.
    Load {
        key: Bytes,
        chain: Chain,
        items: Vec<Bytes>,
    },
}

impl Op {
    fn key(&self) -> &[u8] {
        match self {
            Op::Reserve { key, .. }
            | Op::Add { key, .. }
            | Op::Madd { key, .. }
            | Op::Insert { key, .. }
            | Op::Load { key, .. } => key,
        }
    }

    fn items(&self) -> Vec<Bytes> {
        match self {
            Op::Reserve { .. } => vec![],
            Op::Add { item, .. } => vec![item.clone()],
            Op::Madd { items, .. } | Op::Insert { items, .. } | Op::Load { items, .. } => {
                items.clone()
            }
        }
    }

    fn commands(&self) -> Vec<redis::Cmd> {
        match self {
            Op::Reserve { key, args } => {
                let mut c = cmd("BF.RESERVE");
                c.arg(key.as_slice())
                    .arg(args.split_whitespace().collect::<Vec<_>>());
                vec![c]
            }
            Op::Add { key, item } => {
                let mut c = cmd("BF.ADD");
                c.arg(key.as_slice()).arg(item.as_slice());
                vec![c]
            }
            Op::Madd { key, items } => {
                let mut c = cmd("BF.MADD");
                c.arg(key.as_slice());
                for i in items {
                    c.arg(i.as_slice());
                }
                vec![c]
            }
            Op::Insert {
                key,
                options,
                items,
            } => {
                let mut c = cmd("BF.INSERT");
                c.arg(key.as_slice());
                c.arg(options.split_whitespace().collect::<Vec<_>>());
                c.arg("ITEMS");
                for i in items {
                    c.arg(i.as_slice());
                }
                vec![c]
            }
            Op::Load { key, chain, .. } => load_commands(key, chain),
        }
    }
}

/// `BF.LOADCHUNK` commands that recreate `chain` (header, then every chunk of a SCANDUMP walk).
fn load_commands(key: &[u8], chain: &Chain) -> Vec<redis::Cmd> {
    walk_to_loadchunks(key, &core_walk(chain))
}

fn walk_to_loadchunks(key: &[u8], walk: &[(i64, Bytes)]) -> Vec<redis::Cmd> {
    walk.iter()
        .filter(|(next, _)| *next != 0)
        .map(|(next, data)| {
            let mut c = cmd("BF.LOADCHUNK");
            c.arg(key).arg(*next).arg(data.as_slice());
            c
        })
        .collect()
}

/// The SCANDUMP replies of a full walk of `chain`: (next iter, data), ending with (0, "").
fn core_walk(chain: &Chain) -> Vec<(i64, Bytes)> {
    let mut out = vec![(1, encode_header(chain))];
    let mut it = 1;
    loop {
        let (next, data) = chunk_at(chain, it);
        out.push((next, data.to_vec()));
        if next == 0 {
            return out;
        }
        it = next;
    }
}

/// Runs `ops` on a server (pipelined) and returns every reply, LOADCHUNK replies included.
fn run_ops(con: &mut redis::Connection, ops: &[Op]) -> Vec<Value> {
    let cmds: Vec<redis::Cmd> = ops.iter().flat_map(|o| o.commands()).collect();
    let mut out = Vec::new();
    for batch in cmds.chunks(100) {
        let mut p = redis::pipe();
        for c in batch {
            p.add_command(c.clone());
        }
        let replies: Vec<Value> = p
            .query(con)
            .unwrap_or_else(|e| panic!("fixture commands failed: {e}"));
        out.extend(replies);
    }
    out
}

/// The core's idea of the same keyspace.
struct Model {
    default_capacity: u64,
    default_error: f64,
    keys: BTreeMap<Bytes, Chain>,
}

impl Model {
    fn new() -> Model {
        Model {
            default_capacity: 100,
            default_error: 0.01,
            keys: BTreeMap::new(),
        }
    }

    fn add_items(chain: &mut Chain, items: &[Bytes], array: bool) -> Value {
        let mut out = Vec::new();
        for i in items {
            match chain.add(i, u64::MAX) {
                Ok(AddOutcome::Added) => out.push(Value::Int(1)),
                Ok(AddOutcome::Exists) => out.push(Value::Int(0)),
                Err(AddError::Full) => panic!("fixture fills a non-scaling filter"),
                Err(AddError::CannotGrow) => panic!("fixture cannot grow"),
            }
        }
        if array {
            Value::Array(out)
        } else {
            out.pop().unwrap()
        }
    }

    /// Applies `ops`; returns the replies the module must give.
    fn apply(&mut self, ops: &[Op]) -> Vec<Value> {
        let mut replies = Vec::new();
        for op in ops {
            let (dc, de) = (self.default_capacity, self.default_error);
            match op {
                Op::Reserve { key, args } => {
                    assert!(!self.keys.contains_key(key));
                    let w: Vec<&str> = args.split_whitespace().collect();
                    let c = Chain::new(
                        w[1].parse().unwrap(),
                        w[0].parse().unwrap(),
                        option_value(&w, "EXPANSION").unwrap_or(2),
                        w.contains(&"NONSCALING"),
                        u64::MAX,
                    )
                    .unwrap();
                    self.keys.insert(key.clone(), c);
                    replies.push(Value::Okay);
                }
                Op::Add { key, item } => {
                    let c = self
                        .keys
                        .entry(key.clone())
                        .or_insert_with(|| Chain::new(dc, de, 2, false, u64::MAX).unwrap());
                    replies.push(Self::add_items(c, std::slice::from_ref(item), false));
                }
                Op::Madd { key, items } => {
                    let c = self
                        .keys
                        .entry(key.clone())
                        .or_insert_with(|| Chain::new(dc, de, 2, false, u64::MAX).unwrap());
                    replies.push(Self::add_items(c, items, true));
                }
                Op::Insert {
                    key,
                    options,
                    items,
                } => {
                    let w: Vec<&str> = options.split_whitespace().collect();
                    let c = self.keys.entry(key.clone()).or_insert_with(|| {
                        Chain::new(
                            option_value(&w, "CAPACITY").unwrap_or(dc),
                            option_value(&w, "ERROR").unwrap_or(de),
                            option_value(&w, "EXPANSION").unwrap_or(2),
                            w.contains(&"NONSCALING"),
                            u64::MAX,
                        )
                        .unwrap()
                    });
                    replies.push(Self::add_items(c, items, true));
                }
                Op::Load { key, chain, .. } => {
                    assert!(!self.keys.contains_key(key));
                    self.keys.insert(key.clone(), chain.clone());
                    for _ in load_commands(key, chain) {
                        replies.push(Value::Okay);
                    }
                }
            }
        }
        replies
    }
}

fn chain_with_items(mut chain: Chain, items: &[Bytes]) -> Chain {
    for i in items {
        chain.add(i, u64::MAX).unwrap();
    }
    chain
}

/// A filter as an old RedisBloom made it: options 0 (legacy 32-bit MurmurHash2, power-of-two
/// layers), built and filled by the core, to be loaded with LOADCHUNK.
fn legacy_chain(items: &[Bytes]) -> Chain {
    let params = LayerParams::for_capacity(64, 0.005, 0).unwrap();
    assert!(params.n2 > 0, "a power-of-two layer");
    let chain = Chain {
        size: 0,
        options: 0,
        growth: 2,
        layers: Box::new([Layer::new(params).unwrap()]),
    };
    let chain = chain_with_items(chain, items);
    assert!(chain.layers.len() >= 2, "the legacy fixture has grown");
    chain
}

const BIN_KEY: &[u8] = b"bin\x00key \xff\r\n";

/// The filters every persistence test starts from.
fn base_ops() -> Vec<Op> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ops = Vec::new();
    // Scaling, several layers (50, 100, 200, 400); NONSCALING filled to its capacity; custom
    // expansions. Each: BF.RESERVE, then batches of BF.MADD.
    for (key, reserve_args, prefix, batches, per_batch) in [
        (&b"scaling"[..], "0.01 50", "s:", 6, 100),
        (b"ns", "0.001 300 NONSCALING", "n:", 3, 100),
        (b"exp5", "0.05 10 EXPANSION 5", "x5:", 4, 100),
        (b"exp1", "0.1 16 EXPANSION 1", "x1:", 5, 20),
    ] {
        ops.push(reserve(key, reserve_args));
        for b in 0..batches {
            ops.push(madd(key, items(prefix, b * per_batch..(b + 1) * per_batch)));
        }
    }
    // Binary key name and binary items (empty, NUL bytes, all single bytes, a 4 KiB blob).
    ops.push(reserve(BIN_KEY, "0.02 100 EXPANSION 3"));
    let mut bin: Vec<Bytes> = vec![
        b"".to_vec(),
        b"\x00".to_vec(),
        b"\x00\x00\x00".to_vec(),
        b"a\x00b".to_vec(),
        b"\r\n".to_vec(),
        b"\xff\xfe\xfd".to_vec(),
        "ユーザー名".as_bytes().to_vec(),
        rng.bytes(4096),
    ];
    bin.extend((0..=255u8).map(|b| vec![b]));
    for _ in 0..300 {
        let n = (rng.next() % 40) as usize;
        bin.push(rng.bytes(n));
    }
    for chunk in bin.chunks(150) {
        ops.push(madd(BIN_KEY, chunk.to_vec()));
    }
    // Implicit creation: BF.ADD, BF.MADD, BF.INSERT with and without parameters.
    for i in 0..250 {
        ops.push(add(b"auto-add", format!("aa:{i}").into_bytes()));
    }
    ops.push(madd(b"auto-madd", items("am:", 0..50)));
    ops.push(madd(b"auto-madd", items("am:", 50..200)));
    ops.push(insert(
        b"ins",
        "CAPACITY 30 ERROR 0.02 EXPANSION 4",
        items("in:", 0..200),
    ));
    ops.push(insert(
        b"ins-ns",
        "CAPACITY 500 ERROR 0.005 NONSCALING",
        items("ins-ns:", 0..100),
    ));
    ops.push(insert(
        b"ins-ns-exp",
        "CAPACITY 20 EXPANSION 3 NONSCALING",
        items("ins-ns-exp:", 0..10),
    ));
    ops.push(insert(b"ins-defaults", "", items("id:", 0..150)));
    ops.push(insert(b"ins-cap", "CAPACITY 20", items("ic:", 0..70)));
    // Empty filter.
    ops.push(reserve(b"empty", "0.01 1000"));
    // One 19 775 360-byte layer: two SCANDUMP chunks (16 MiB + rest).
    ops.push(reserve(b"big", "0.001 10000000"));
    ops.push(madd(b"big", items("big:", 0..1000)));
    // Made by LOADCHUNK (modern and legacy 32-bit), then grown by the module.
    let chain = Chain::new(40, 0.03, 3, false, u64::MAX).unwrap();
    ops.push(load(b"loaded", chain, items("ld:", 0..200)));
    ops.push(madd(b"loaded", items("ld:", 200..400)));
    let lg = items("lg:", 0..150);
    ops.push(Op::Load {
        key: b"legacy".to_vec(),
        chain: legacy_chain(&lg),
        items: lg,
    });
    ops.push(madd(b"legacy", items("lg:", 150..400)));
    ops
}

/// Items per key of `ops`.
fn items_of(ops: &[Op]) -> BTreeMap<Bytes, Vec<Bytes>> {
    let mut m: BTreeMap<Bytes, Vec<Bytes>> = BTreeMap::new();
    for op in ops {
        m.entry(op.key().to_vec()).or_default().extend(op.items());
    }
    m
}

// ------------------------------------------------------------------------------------------
// Observed state of a key.

#[derive(Clone, PartialEq)]
struct KeyState {
    ty: String,
    info: Value,
    debug: Vec<String>,
    card: i64,
    /// Every SCANDUMP reply (next iter, data) of a walk from 0, ending with (0, "").
    walk: Vec<(i64, Bytes)>,
    /// BF.MEXISTS answers for the non-member probes.
    probes: Vec<i64>,
}

fn scandump_walk(con: &mut redis::Connection, key: &[u8]) -> Vec<(i64, Bytes)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Bytes) = cmd("BF.SCANDUMP")
            .arg(key)
            .arg(it)
            .query(con)
            .unwrap_or_else(|e| panic!("BF.SCANDUMP {} {it}: {e}", show(key)));
        out.push((next, data));
        if next == 0 {
            return out;
        }
        assert!(out.len() < 100_000, "endless SCANDUMP walk");
        it = next;
    }
}

fn mexists(con: &mut redis::Connection, key: &[u8], items: &[Bytes]) -> Vec<i64> {
    let out = common::batched(con, "BF.MEXISTS", key, items, 1000);
    assert_eq!(out.len(), items.len());
    out
}

fn snapshot(con: &mut redis::Connection, key: &[u8], probes: &[Bytes]) -> KeyState {
    let ty: String = cmd("TYPE").arg(key).query(con).unwrap();
    let info: Value = cmd("BF.INFO")
        .arg(key)
        .query(con)
        .unwrap_or_else(|e| panic!("BF.INFO {}: {e}", show(key)));
    let debug: Vec<String> = cmd("BF.DEBUG")
        .arg(key)
        .query(con)
        .unwrap_or_else(|e| panic!("BF.DEBUG {}: {e}", show(key)));
    let card: i64 = cmd("BF.CARD").arg(key).query(con).unwrap();
    KeyState {
        ty,
        info,
        debug,
        card,
        walk: scandump_walk(con, key),
        probes: mexists(con, key, probes),
    }
}

/// Differences between two states, each named briefly (first differing byte of a chunk, not
/// the chunk).
fn state_diff(want: &KeyState, got: &KeyState) -> Vec<String> {
    let mut d = Vec::new();
    if got.ty != want.ty {
        d.push(format!("TYPE {:?}, want {:?}", got.ty, want.ty));
    }
    if got.info != want.info {
        d.push(format!("BF.INFO {:?}, want {:?}", got.info, want.info));
    }
    if got.debug != want.debug {
        d.push(format!("BF.DEBUG {:?}, want {:?}", got.debug, want.debug));
    }
    if got.card != want.card {
        d.push(format!("BF.CARD {}, want {}", got.card, want.card));
    }
    if got.walk.len() != want.walk.len() {
        d.push(format!(
            "{} SCANDUMP steps, want {}",
            got.walk.len(),
            want.walk.len()
        ));
    }
    for (i, (g, w)) in got.walk.iter().zip(&want.walk).enumerate() {
        if g.0 != w.0 {
            d.push(format!(
                "SCANDUMP step {i}: next iter {}, want {}",
                g.0, w.0
            ));
        }
        if g.1.len() != w.1.len() {
            d.push(format!(
                "SCANDUMP step {i}: {} bytes, want {}",
                g.1.len(),
                w.1.len()
            ));
        } else if let Some(pos) = g.1.iter().zip(&w.1).position(|(a, b)| a != b) {
            let n = g.1.iter().zip(&w.1).filter(|(a, b)| a != b).count();
            d.push(format!(
                "SCANDUMP step {i}: {n} bytes differ, first at byte {pos}: {:#04x}, want {:#04x}",
                g.1[pos], w.1[pos]
            ));
        }
    }
    let diff = got
        .probes
        .iter()
        .zip(&want.probes)
        .filter(|(a, b)| a != b)
        .count();
    if diff != 0 {
        d.push(format!("BF.MEXISTS differs for {diff} non-members"));
    }
    if d.is_empty() && got != want {
        d.push("states differ".into());
    }
    d
}

/// Members of `key` that BF.MEXISTS does not report, as a message.
fn missing_members(con: &mut redis::Connection, key: &[u8], members: &[Bytes]) -> Option<String> {
    let got = mexists(con, key, members);
    let i = got.iter().position(|x| *x != 1)?;
    Some(format!(
        "{} of {} members missing, first {:?} (BF.MEXISTS answered {})",
        got.iter().filter(|x| **x != 1).count(),
        members.len(),
        show(&members[i]),
        got[i],
    ))
}

fn check_members(con: &mut redis::Connection, label: &str, key: &[u8], members: &[Bytes]) {
    if let Some(m) = missing_members(con, key, members) {
        panic!("{label} [{}]: {m}", show(key));
    }
}

type State = BTreeMap<Bytes, KeyState>;

struct Fixture {
    members: BTreeMap<Bytes, Vec<Bytes>>,
    probes: Vec<Bytes>,
    state: State,
}

impl Fixture {
    /// Runs `ops` on the server, checks every member is present, records the state.
    fn create(con: &mut redis::Connection, ops: &[Op]) -> Fixture {
        run_ops(con, ops);
        Fixture::record(con, items_of(ops))
    }

    fn record(con: &mut redis::Connection, members: BTreeMap<Bytes, Vec<Bytes>>) -> Fixture {
        let probes = probes();
        let mut state = State::new();
        for (key, its) in &members {
            check_members(con, "initial", key, its);
            state.insert(key.clone(), snapshot(con, key, &probes));
        }
        Fixture {
            members,
            probes,
            state,
        }
    }

    /// Asserts every key (under `prefix`) has the recorded state and all its members; lists
    /// every difference of every key.
    fn verify(&self, con: &mut redis::Connection, label: &str, prefix: &str) {
        let problems = self.problems(con, prefix);
        assert!(
            problems.is_empty(),
            "{label}: {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }

    /// Every difference between the recorded state and the keys under `prefix`.
    fn problems(&self, con: &mut redis::Connection, prefix: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for (key, want) in &self.state {
            let k = renamed(prefix, key);
            let l = format!("[{}]", show(&k));
            let exists: i64 = cmd("EXISTS").arg(k.as_slice()).query(con).unwrap();
            if exists != 1 {
                problems.push(format!("{l}: key missing"));
                continue;
            }
            let got = snapshot(con, &k, &self.probes);
            for d in state_diff(want, &got) {
                problems.push(format!("{l}: {d}"));
            }
            if let Some(m) = missing_members(con, &k, &self.members[key]) {
                problems.push(format!("{l}: {m}"));
            }
        }
        problems
    }
}

// ------------------------------------------------------------------------------------------
// The fixtures are what the core says they are (so the state we carry through persistence is
// the right one to begin with).

fn info_of(chain: &Chain) -> Value {
    Value::Array(vec![
        Value::SimpleString("Capacity".into()),
        Value::Int(chain.capacity() as i64),
        Value::SimpleString("Size".into()),
        Value::Int(chain.mem_usage() as i64),
        Value::SimpleString("Number of filters".into()),
        Value::Int(chain.layers.len() as i64),
        Value::SimpleString("Number of items inserted".into()),
        Value::Int(chain.size as i64),
        Value::SimpleString("Expansion rate".into()),
        if chain.is_nonscaling() {
            Value::Nil
        } else {
            Value::Int(i64::from(chain.growth))
        },
    ])
}

fn check_against_model(con: &mut redis::Connection, model: &Model, label: &str) {
    for (key, chain) in &model.keys {
        let l = format!("{label} [{}]", show(key));
        let walk = scandump_walk(con, key);
        let want = core_walk(chain);
        assert_eq!(walk.len(), want.len(), "{l}: SCANDUMP steps");
        for (i, (g, w)) in walk.iter().zip(&want).enumerate() {
            assert_eq!(g.0, w.0, "{l}: SCANDUMP step {i} next iter");
            assert_eq!(g.1.len(), w.1.len(), "{l}: SCANDUMP step {i} length");
            if let Some(pos) = g.1.iter().zip(&w.1).position(|(a, b)| a != b) {
                panic!(
                    "{l}: SCANDUMP step {i} differs from the core at byte {pos}: got {:#04x}, want {:#04x}",
                    g.1[pos], w.1[pos]
                );
            }
        }
        let info: Value = cmd("BF.INFO").arg(key.as_slice()).query(con).unwrap();
        assert_eq!(info, info_of(chain), "{l}: BF.INFO");
        let debug: Vec<String> = cmd("BF.DEBUG").arg(key.as_slice()).query(con).unwrap();
        assert_eq!(debug, debug_lines(chain), "{l}: BF.DEBUG");
    }
}

#[test]
fn fixtures_match_the_core_model() {
    let server = Server::start();
    let mut con = server.conn();
    let ops = base_ops();
    let replies = run_ops(&mut con, &ops);
    let mut model = Model::new();
    let want = model.apply(&ops);
    assert_eq!(replies.len(), want.len());
    for (i, (g, w)) in replies.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "reply {i}");
    }
    // Shapes the fixtures are meant to have.
    let layers = |k: &[u8]| model.keys[k].layers.len();
    assert_eq!(layers(b"scaling"), 4);
    assert!(layers(b"exp5") >= 3);
    assert!(layers(b"exp1") >= 5);
    assert!(layers(b"auto-add") >= 2);
    assert!(layers(BIN_KEY) >= 2);
    assert_eq!(
        model.keys[b"big".as_slice()].layers[0].data.len(),
        19_775_360
    );
    assert_eq!(model.keys[b"ins-ns-exp".as_slice()].growth, 3);
    assert_eq!(model.keys[b"legacy".as_slice()].options, 0);
    check_against_model(&mut con, &model, "fixtures");
}

// ------------------------------------------------------------------------------------------
// RDB.

#[test]
fn debug_reload_keeps_every_filter() {
    let server = Server::start();
    let mut con = server.conn();
    let f = Fixture::create(&mut con, &base_ops());
    let _: () = cmd("DEBUG RELOAD").query(&mut con).unwrap();
    assert_eq!(dbsize(&mut con), f.state.len());
    f.verify(&mut con, "after DEBUG RELOAD", "");
}

#[test]
fn save_and_restart_keeps_every_filter() {
    let mut server = Server::start();
    let mut con = server.conn();
    let f = Fixture::create(&mut con, &base_ops());
    let _: () = cmd("SAVE").query(&mut con).unwrap();
    drop(con);
    server.restart(&[]);
    let mut con = server.conn();
    assert_eq!(dbsize(&mut con), f.state.len(), "keys after restart");
    f.verify(&mut con, "after SAVE + restart", "");
}

// ------------------------------------------------------------------------------------------
// AOF.

/// RESP commands of an AOF file (annotations skipped).
fn parse_aof(data: &[u8]) -> Vec<Vec<Bytes>> {
    fn line(data: &[u8], pos: &mut usize) -> String {
        let end = *pos
            + data[*pos..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("CRLF");
        let l = String::from_utf8(data[*pos..end].to_vec()).unwrap();
        *pos = end + 2;
        l
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let l = line(data, &mut pos);
        if l.starts_with('#') {
            continue;
        }
        let n: usize = l.strip_prefix('*').expect("AOF array").parse().unwrap();
        let mut args = Vec::with_capacity(n);
        for _ in 0..n {
            let len: usize = line(data, &mut pos)
                .strip_prefix('$')
                .expect("AOF bulk")
                .parse()
                .unwrap();
            args.push(data[pos..pos + len].to_vec());
            assert_eq!(&data[pos + len..pos + len + 2], b"\r\n");
            pos += len + 2;
        }
        out.push(args);
    }
    out
}

/// The AOF files of `dir` of type `kind` (`b` base, `i` incr) in manifest order.
fn aof_files(dir: &Path, kind: &str) -> Vec<std::path::PathBuf> {
    let aofdir = dir.join("appendonlydir");
    let manifest =
        std::fs::read_to_string(aofdir.join("appendonly.aof.manifest")).expect("AOF manifest");
    manifest
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = w.get(w.iter().position(|x| *x == "file")? + 1)?;
            let ty = w.get(w.iter().position(|x| *x == "type")? + 1)?;
            (*ty == kind).then(|| aofdir.join(name))
        })
        .collect()
}

fn is_cmd(args: &[Bytes], name: &str) -> bool {
    args.first()
        .is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()))
}

fn wait_no_rewrite(con: &mut redis::Connection) {
    wait_until(
        "the AOF rewrite to finish",
        Duration::from_secs(120),
        || {
            info_str(con, "persistence", "aof_rewrite_in_progress") == "0"
                && info_str(con, "persistence", "aof_rewrite_scheduled") == "0"
        },
    );
}

#[test]
fn aof_rewrite_without_preamble_keeps_every_filter() {
    let mut server = Server::start_with(&[], common::AOF_NO_PREAMBLE);
    let mut con = server.conn();
    wait_no_rewrite(&mut con);
    let f = Fixture::create(&mut con, &base_ops());
    let before: u64 = info_str(&mut con, "persistence", "aof_rewrites")
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match cmd("BGREWRITEAOF").query::<String>(&mut con) {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline && e.to_string().contains("progress") => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("BGREWRITEAOF: {e}"),
        }
    }
    wait_until("aof_rewrites to increase", Duration::from_secs(120), || {
        info_str(&mut con, "persistence", "aof_rewrites")
            .parse::<u64>()
            .unwrap()
            > before
    });
    wait_no_rewrite(&mut con);
    assert_eq!(
        info_str(&mut con, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );

    // The rewritten base AOF is plain commands: per key, BF.LOADCHUNK of the header then of
    // every chunk exactly as a SCANDUMP walk gives them (`docs/format.md` ("AOF rewrite")).
    let base = aof_files(server.dir.path(), "b");
    assert_eq!(base.len(), 1, "one base file");
    assert!(
        base[0].to_string_lossy().ends_with(".base.aof"),
        "base is not an RDB: {}",
        base[0].display()
    );
    let data = std::fs::read(&base[0]).unwrap();
    assert!(!data.starts_with(b"REDIS"), "no RDB preamble");
    let mut per_key: BTreeMap<Bytes, Vec<(i64, Bytes)>> = BTreeMap::new();
    for args in parse_aof(&data) {
        if is_cmd(&args, "SELECT") {
            continue;
        }
        assert!(
            is_cmd(&args, "BF.LOADCHUNK"),
            "unexpected command in the rewritten AOF: {}",
            show(&args[0])
        );
        assert_eq!(args.len(), 4, "BF.LOADCHUNK key iter data");
        let iter: i64 = std::str::from_utf8(&args[2]).unwrap().parse().unwrap();
        assert!(args[3].len() <= 16 * 1024 * 1024, "chunk over 16 MiB");
        per_key
            .entry(args[1].clone())
            .or_default()
            .push((iter, args[3].clone()));
    }
    assert_eq!(
        per_key.keys().collect::<Vec<_>>(),
        f.state.keys().collect::<Vec<_>>(),
        "keys in the rewritten AOF"
    );
    for (key, chunks) in &per_key {
        let want: Vec<(i64, Bytes)> = f.state[key]
            .walk
            .iter()
            .filter(|(n, _)| *n != 0)
            .cloned()
            .collect();
        assert_eq!(chunks.len(), want.len(), "[{}] LOADCHUNK count", show(key));
        for (i, (g, w)) in chunks.iter().zip(&want).enumerate() {
            assert_eq!(g.0, w.0, "[{}] LOADCHUNK {i} iter", show(key));
            assert!(g.1 == w.1, "[{}] LOADCHUNK {i} data", show(key));
        }
    }

    drop(con);
    server.restart(&[]);
    let mut con = server.conn();
    assert_eq!(dbsize(&mut con), f.state.len(), "keys after AOF load");
    f.verify(&mut con, "after BGREWRITEAOF + restart", "");
}

fn parse_f64(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// The value after `word` in `args` (case-insensitive keyword match).
fn keyword_value<'a>(args: &'a [Bytes], word: &str) -> Option<&'a [u8]> {
    let i = args
        .iter()
        .position(|a| a.eq_ignore_ascii_case(word.as_bytes()))?;
    args.get(i + 1).map(|v| v.as_slice())
}

/// Filters a key's dup-add history is built from: the adds that change nothing must not be
/// replicated (`docs/commands.md` "Replication and AOF").
fn dup_ops() -> Vec<Op> {
    vec![
        reserve(b"dup", "0.01 100"),
        add(b"dup", b"x".to_vec()),
        add(b"dup", b"x".to_vec()),
        madd(b"dup", vec![b"x".to_vec(), b"x".to_vec()]),
        insert(b"dup", "", vec![b"x".to_vec()]),
        add(b"dup", b"y".to_vec()),
    ]
}

/// Copies a directory tree.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Starts a server with [`OTHER_DEFAULTS`] and checks they are in force (an auto-created
/// filter gets capacity 7 and layer error 0.1), so the replication checks against it can fail.
fn start_with_other_defaults(extra: &[(&str, &str)]) -> Server {
    let server = Server::start_with(&OTHER_DEFAULTS, extra);
    let mut con = server.conn();
    let _: i64 = cmd("BF.ADD defaults-probe x").query(&mut con).unwrap();
    let debug: Vec<String> = cmd("BF.DEBUG defaults-probe").query(&mut con).unwrap();
    let mut want = Chain::new(7, 0.2, 2, false, u64::MAX).unwrap();
    want.add(b"x", u64::MAX).unwrap();
    assert_eq!(
        debug,
        debug_lines(&want),
        "module arguments INITIAL_SIZE 7 ERROR_RATE 0.2 not in force"
    );
    let _: i64 = cmd("DEL defaults-probe").query(&mut con).unwrap();
    server
}

#[test]
fn aof_replay_keeps_every_filter_whatever_the_defaults() {
    let mut server = Server::start_with(&[], &[("appendonly", "yes")]);
    let mut con = server.conn();
    wait_no_rewrite(&mut con);
    let mut ops = base_ops();
    ops.extend(dup_ops());
    let f = Fixture::create(&mut con, &ops);

    // What went into the AOF (`docs/commands.md` "Replication and AOF"): implicit creations as explicit BF.INSERT with the creating
    // server's parameters; adds that changed nothing are absent.
    let mut cmds = Vec::new();
    for file in aof_files(server.dir.path(), "i") {
        cmds.extend(parse_aof(&std::fs::read(file).unwrap()));
    }
    let of_key = |key: &[u8]| -> Vec<&Vec<Bytes>> {
        cmds.iter()
            .filter(|a| {
                a.len() > 1
                    && a[0].len() > 3
                    && a[0][..3].eq_ignore_ascii_case(b"BF.")
                    && a[1] == key
            })
            .collect()
    };
    let dup = of_key(b"dup");
    assert_eq!(
        dup.len(),
        3,
        "AOF commands for `dup` (RESERVE, ADD x, ADD y; the 3 adds of an existing x change \
         nothing): {:?}",
        dup.iter()
            .map(|a| a.iter().map(|x| show(x)).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    );
    for key in [
        b"auto-add".as_slice(),
        b"auto-madd",
        b"ins-defaults",
        b"ins-cap",
    ] {
        let first = *of_key(key)
            .first()
            .unwrap_or_else(|| panic!("no AOF command for {}", show(key)));
        let text = first.iter().map(|x| show(x)).collect::<Vec<_>>().join(" ");
        assert!(
            is_cmd(first, "BF.INSERT"),
            "[{}] created by: {text}",
            show(key)
        );
        let cap = keyword_value(first, "CAPACITY").and_then(parse_f64);
        let want_cap = if key == b"ins-cap" { 20.0 } else { 100.0 };
        assert_eq!(cap, Some(want_cap), "[{}] CAPACITY in: {text}", show(key));
        let err = keyword_value(first, "ERROR").and_then(parse_f64);
        assert_eq!(err, Some(0.01), "[{}] ERROR in: {text}", show(key));
        assert!(
            first.iter().any(|a| a.eq_ignore_ascii_case(b"ITEMS")),
            "[{}] ITEMS in: {text}",
            show(key)
        );
    }

    // Replay with the same module arguments.
    drop(con);
    server.restart(&[]);
    let mut con = server.conn();
    assert_eq!(dbsize(&mut con), f.state.len(), "keys after AOF replay");
    // Both replays are checked before failing, so a report lists every difference.
    let mut problems: Vec<String> = f
        .problems(&mut con, "")
        .into_iter()
        .map(|p| format!("after AOF replay: {p}"))
        .collect();
    drop(con);
    server.kill();

    // Replay the same AOF on a server whose module defaults differ.
    let mut other = start_with_other_defaults(&[("appendonly", "yes")]);
    other.kill();
    let aofdir = other.dir.path().join("appendonlydir");
    std::fs::remove_dir_all(&aofdir).unwrap();
    copy_dir(&server.dir.path().join("appendonlydir"), &aofdir);
    other.restart(&[]);
    let mut con = other.conn();
    assert_eq!(
        dbsize(&mut con),
        f.state.len(),
        "keys after AOF replay with other defaults"
    );
    problems.extend(
        f.problems(&mut con, "")
            .into_iter()
            .map(|p| format!("after AOF replay with INITIAL_SIZE 7 ERROR_RATE 0.2: {p}")),
    );
    assert!(
        problems.is_empty(),
        "{} problem(s):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

// ------------------------------------------------------------------------------------------
// DUMP / RESTORE.

#[test]
fn dump_restore_into_new_names() {
    let server = Server::start();
    let mut con = server.conn();
    let f = Fixture::create(&mut con, &base_ops());
    for key in f.state.keys() {
        let payload: Bytes = cmd("DUMP").arg(key.as_slice()).query(&mut con).unwrap();
        let _: () = cmd("RESTORE")
            .arg(renamed("restored:", key))
            .arg(0)
            .arg(payload)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("RESTORE of {}: {e}", show(key)));
    }
    assert_eq!(dbsize(&mut con), 2 * f.state.len());
    f.verify(&mut con, "restored copy", "restored:");
    f.verify(&mut con, "original after DUMP", "");
}

/// The module part of a DUMP payload (type, module id, opcode-tagged values, EOF).
fn module_part(module_id: u64, values: &[RdbValue]) -> Bytes {
    let mut out = vec![7];
    rdb_len(&mut out, module_id);
    for v in values {
        match v {
            RdbValue::Unsigned(u) => {
                out.push(2);
                rdb_len(&mut out, *u);
            }
            RdbValue::Double(d) => {
                out.push(4);
                out.extend_from_slice(&d.to_le_bytes());
            }
            RdbValue::Bytes(b) => {
                out.push(5);
                rdb_len(&mut out, b.len() as u64);
                out.extend_from_slice(b);
            }
        }
    }
    out.push(0);
    out
}

/// Appends the DUMP footer (RDB version, CRC64) to `body`.
fn with_footer(mut body: Bytes, rdb_version: [u8; 2]) -> Bytes {
    body.extend_from_slice(&rdb_version);
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

fn restore(con: &mut redis::Connection, key: &str, payload: &[u8]) -> redis::RedisResult<()> {
    cmd("RESTORE").arg(key).arg(0).arg(payload).query(con)
}

fn assert_refused(con: &mut redis::Connection, what: &str, payload: &[u8], text: &str) {
    match restore(con, "bad", payload) {
        Ok(()) => panic!("RESTORE of {what} was accepted"),
        Err(e) => assert!(
            e.to_string().contains(text),
            "RESTORE of {what}: error {e:?}, expected one containing {text:?}"
        ),
    }
    ping(con);
    let exists: i64 = cmd("EXISTS bad").query(con).unwrap();
    assert_eq!(exists, 0, "RESTORE of {what} left a key");
}

#[test]
fn malformed_restore_is_an_error() {
    let mut server = Server::start();
    let mut con = server.conn();
    let ops: Vec<Op> = base_ops()
        .into_iter()
        .filter(|o| o.key() == b"scaling")
        .collect();
    let f = Fixture::create(&mut con, &ops);
    let payload: Bytes = cmd("DUMP scaling").query(&mut con).unwrap();
    let n = payload.len();
    let footer: [u8; 2] = payload[n - 10..n - 8].try_into().unwrap();

    // Plain truncation (the footer no longer checks out).
    for cut in [1, 2, 8, 9, 10, 11, 12, n / 2, n - 12, n - 11, n - 1] {
        assert_refused(
            &mut con,
            &format!("a payload cut to {} of {n} bytes", n - cut),
            &payload[..n - cut],
            "checksum",
        );
    }

    // Crafted payloads with a valid footer, so the module's loader sees them. First a control:
    // our encoder's payload of a core chain must be accepted and give that chain.
    let chain = chain_with_items(
        Chain::new(20, 0.05, 2, false, u64::MAX).unwrap(),
        &items("c:", 0..60),
    );
    assert!(chain.layers.len() >= 2);
    let mut values = Values::default();
    save(&chain, &mut values);
    let good = with_footer(module_part(MODULE_ID, &values.values), footer);
    restore(&mut con, "crafted", &good).expect("RESTORE of a well-formed crafted payload");
    assert_eq!(scandump_walk(&mut con, b"crafted"), core_walk(&chain));

    let body = module_part(MODULE_ID, &values.values);
    // Cut anywhere, valid CRC. Redis does not check that a payload is used up, so the loader
    // reads on into the 10 footer bytes: a cut is certainly invalid inside the module id or
    // when more than 10 bytes of the last bit array are missing; elsewhere the footer may
    // happen to parse as the missing tail (e.g. as the last layer size + EOF), and then the
    // server must only survive and hold a usable key.
    let last = values
        .values
        .iter()
        .rposition(|v| matches!(v, RdbValue::Bytes(_)))
        .unwrap();
    let RdbValue::Bytes(last_bits) = &values.values[last] else {
        unreachable!()
    };
    let mut prefix = module_part(MODULE_ID, &values.values[..last]);
    prefix.pop(); // EOF
    prefix.push(5);
    rdb_len(&mut prefix, last_bits.len() as u64);
    let (s, e) = (prefix.len(), prefix.len() + last_bits.len());
    assert!(last_bits.len() > 12 && body[s..e] == last_bits[..]);
    let mut accepted = 0;
    for len in 1..body.len() {
        let p = with_footer(body[..len].to_vec(), footer);
        let what = format!("a module value cut to {len} of {} bytes", body.len());
        if len < 10 || (s..=e - 11).contains(&len) {
            assert_refused(&mut con, &what, &p, "Bad data format");
        } else {
            let r = restore(&mut con, "bad", &p);
            ping(&mut con);
            if r.is_ok() {
                accepted += 1;
                let _: Vec<String> = cmd("BF.DEBUG bad")
                    .query(&mut con)
                    .unwrap_or_else(|e| panic!("BF.DEBUG after RESTORE of {what}: {e}"));
                scandump_walk(&mut con, b"bad");
                let _: i64 = cmd("DEL bad").query(&mut con).unwrap();
            }
        }
    }
    println!("{accepted} cut payloads parsed as valid thanks to the footer bytes");
    // Fewer values than announced, then a proper EOF.
    for k in 0..values.values.len() {
        assert_refused(
            &mut con,
            &format!("the first {k} of {} values", values.values.len()),
            &with_footer(module_part(MODULE_ID, &values.values[..k]), footer),
            "Bad data format",
        );
    }
    let tweak = |i: usize, v: RdbValue| {
        let mut vs = values.values.clone();
        vs[i] = v;
        with_footer(module_part(MODULE_ID, &vs), footer)
    };
    // Value 1 = layer count; layer 0 = values 4..12: entries, error, hashes, bpe, bits, n2,
    // bit array, size.
    let cases: Vec<(&str, Bytes)> = vec![
        ("a huge layer count", tweak(1, RdbValue::Unsigned(1 << 40))),
        ("u64::MAX layers", tweak(1, RdbValue::Unsigned(u64::MAX))),
        ("zero layers", tweak(1, RdbValue::Unsigned(0))),
        ("error rate 1.5", tweak(5, RdbValue::Double(1.5))),
        ("error rate 0", tweak(5, RdbValue::Double(0.0))),
        ("error rate NaN", tweak(5, RdbValue::Double(f64::NAN))),
        ("a wrong hash count", tweak(6, RdbValue::Unsigned(99))),
        ("a huge hash count", tweak(6, RdbValue::Unsigned(u64::MAX))),
        ("bits 0", tweak(8, RdbValue::Unsigned(0))),
        (
            "bits beyond the array",
            tweak(8, RdbValue::Unsigned(1 << 40)),
        ),
        ("n2 = 64", tweak(9, RdbValue::Unsigned(64))),
        ("a short bit array", tweak(10, RdbValue::Bytes(vec![0; 4]))),
        ("an empty bit array", tweak(10, RdbValue::Bytes(vec![]))),
        (
            "a double where an unsigned is",
            tweak(0, RdbValue::Double(1.0)),
        ),
        (
            "a string where a double is",
            tweak(5, RdbValue::Bytes(vec![1; 8])),
        ),
        (
            "encoding version 5",
            with_footer(module_part(MODULE_ID + 1, &values.values), footer),
        ),
    ];
    for (what, p) in &cases {
        assert_refused(&mut con, what, p, "Bad data format");
    }
    assert!(server.is_alive(), "server died");
    ping(&mut con);
    assert_eq!(dbsize(&mut con), 2, "only `scaling` and `crafted` exist");
    f.verify(&mut con, "after the malformed RESTOREs", "");
}

// ------------------------------------------------------------------------------------------
// SCANDUMP → LOADCHUNK.

#[test]
fn scandump_loadchunk_copies_on_same_and_other_server() {
    let server = Server::start();
    let other = Server::start();
    let mut con = server.conn();
    let mut con2 = other.conn();
    let f = Fixture::create(&mut con, &base_ops());
    for (key, st) in &f.state {
        let copy = renamed("clone:", key);
        for (c, target) in [(&mut con, copy.as_slice()), (&mut con2, key.as_slice())] {
            for cmd in walk_to_loadchunks(target, &st.walk) {
                let _: () = cmd
                    .query(c)
                    .unwrap_or_else(|e| panic!("LOADCHUNK into {}: {e}", show(target)));
            }
        }
    }
    f.verify(&mut con, "LOADCHUNK copy on the same server", "clone:");
    f.verify(&mut con2, "LOADCHUNK copy on another server", "");
    f.verify(&mut con, "original after SCANDUMP", "");
    assert_eq!(dbsize(&mut con2), f.state.len());
}

// ------------------------------------------------------------------------------------------
// Replication.

fn late_ops() -> Vec<Op> {
    let mut ops = Vec::new();
    for i in 0..300 {
        ops.push(add(b"late-add", format!("la:{i}").into_bytes()));
    }
    ops.push(madd(b"late-madd", items("lm:", 0..120)));
    ops.push(insert(b"late-ins", "", items("li:", 0..50)));
    ops.push(insert(b"late-ins-cap", "CAPACITY 20", items("lc:", 0..60)));
    ops.push(insert(
        b"late-ins-err",
        "ERROR 0.001 EXPANSION 3",
        items("le:", 0..40),
    ));
    ops.push(insert(b"late-ins-ns", "NONSCALING", items("ln:", 0..30)));
    ops.push(insert(
        b"late-ins-ns-exp",
        "CAPACITY 40 EXPANSION 5 NONSCALING",
        items("lx:", 0..30),
    ));
    let mut bin_key = b"late\x00bin\xff".to_vec();
    bin_key.push(0);
    ops.push(add(&bin_key, b"".to_vec()));
    ops.push(madd(
        &bin_key,
        vec![b"\x00".to_vec(), b"\x00\x01".to_vec(), b"".to_vec()],
    ));
    let chain = Chain::new(25, 0.01, 2, false, u64::MAX).unwrap();
    ops.push(load(b"late-load", chain, items("ll:", 0..80)));
    // Existing filters keep growing; adds that change nothing.
    ops.push(madd(b"scaling", items("s:", 600..900)));
    ops.push(madd(b"scaling", items("s:", 0..50)));
    ops.push(add(b"auto-add", b"aa:0".to_vec()));
    ops.push(madd(b"legacy", items("lg:", 400..500)));
    ops.push(reserve(b"late-res", "0.02 10 EXPANSION 2"));
    ops.push(madd(b"late-res", items("lr:", 0..45)));
    ops
}

fn repl_offset(con: &mut redis::Connection) -> u64 {
    info_str(con, "replication", "master_repl_offset")
        .parse()
        .unwrap()
}

fn wait_synced(primary: &mut redis::Connection, replica: &mut redis::Connection) {
    let acked: i64 = cmd("WAIT 1").arg(20_000).query(primary).unwrap();
    assert!(acked >= 1, "WAIT: no replica acknowledged");
    let target = repl_offset(primary);
    wait_until("the replica offset", Duration::from_secs(30), || {
        repl_offset(replica) >= target
    });
}

#[test]
fn replica_matches_primary_whatever_its_defaults() {
    let primary = Server::start();
    let mut pcon = primary.conn();
    let base = base_ops();
    run_ops(&mut pcon, &base);

    let replica = start_with_other_defaults(&[]);
    let mut rcon = replica.conn();
    let _: () = cmd("REPLICAOF 127.0.0.1")
        .arg(primary.port)
        .query(&mut rcon)
        .unwrap();
    wait_until("master_link_status:up", Duration::from_secs(60), || {
        info_str(&mut rcon, "replication", "master_link_status") == "up"
    });
    wait_synced(&mut pcon, &mut rcon);

    // Written after the replica attached: implicit creations use the primary's defaults on
    // both sides (`docs/commands.md` "Replication and AOF").
    let late = late_ops();
    run_ops(&mut pcon, &late);
    wait_synced(&mut pcon, &mut rcon);

    let mut all = base;
    all.extend(late);
    let mut model = Model::new();
    model.apply(&all);
    // The primary is what the core says.
    check_against_model(&mut pcon, &model, "primary");
    let f = Fixture::record(&mut pcon, items_of(&all));
    assert_eq!(dbsize(&mut rcon), f.state.len(), "keys on the replica");
    f.verify(&mut rcon, "replica", "");
}
