//! A replica that cannot allocate what its primary allocated must not acknowledge the write
//! and stay "in sync" with missing items (after a failover it would answer false negatives):
//! it aborts with a log line, as Redis does when its own allocator runs out. The replica's
//! address space is limited with `prlimit --as` (RLIMIT_AS) once it is in sync. Bloom filters
//! (a new layer, a LOADCHUNK header) on the default server; window filters and cuckoo filters
//! (a replicated CF.RESERVE or implicit creation, a new sub-filter of CF.INSERT or CF.ADD, a
//! CF.LOADCHUNK header, RESTORE, COPY) on every supported server; an AOF replay that cannot allocate aborts
//! too (window filters, CF.RESERVE, a cuckoo sub-filter, a rewritten AOF's CF.LOADCHUNK); and a
//! primary's own creation just under its address-space limit (BF.RESERVE, CF.RESERVE,
//! CF.INSERT) is made or refused, never an abort. A limited replica still applies, byte for
//! byte, what fits (Bloom and cuckoo growth, CF.DEL, LOADCHUNK restores).
//!
//! Needs `cargo build --release` first, and `prlimit` (util-linux).

mod common;

use common::{attach_replica, exits_within, Server};
use redis::{Connection, Value};
use redis_bf::bloom::cuckoo::{Cuckoo, Insert};
use std::time::Duration;

/// Room left to the replica above its address space at the time of the limit.
const HEADROOM: u64 = 128 << 20;
/// A capacity whose layer at error 0.0025 (a scaling filter's second layer, 12.47 bits an
/// item) takes about 256 MiB: twice the headroom.
const BIG_CAPACITY: u64 = 172_000_000;

/// Limits the address space of the server behind `con` to its current size plus `HEADROOM`,
/// once that size has held still for 300 ms (a mapping made and dropped while the replica
/// settles after its sync would otherwise widen or narrow the headroom by chance).
fn limit_memory(con: &mut Connection) {
    let pid = common::info_str(con, "server", "process_id");
    let mut last = common::proc_vm_bytes(&pid, "VmSize");
    let mut steady = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while steady < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = common::proc_vm_bytes(&pid, "VmSize");
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
    }
    // Applied again while the size shrank after the limit (a mapping dropped late, on a loaded
    // machine, leaves more room than the headroom: a Redis 8.0 replica once grew a 1.2 GB
    // layer under its limit).
    for _ in 0..5 {
        let limit = common::limit_address_space(con, HEADROOM);
        std::thread::sleep(Duration::from_millis(300));
        if common::proc_vm_bytes(&pid, "VmSize") + HEADROOM + (16 << 20) >= limit {
            break;
        }
    }
}

/// Waits until the primary's write reached its replica (`WAIT 1`), or the timeout.
fn wait_replica(primary: &mut Connection) -> i64 {
    common::cmd("WAIT 1 5000").query(primary).unwrap()
}

fn assert_aborted(replica: &mut Server, command: &str) {
    if !exits_within(replica, Duration::from_secs(20)) {
        let mut r = replica.conn();
        let present: i64 = common::cmd("BF.EXISTS k last").query(&mut r).unwrap_or(-1);
        panic!(
            "the replica stayed up after failing a replicated {command} (BF.EXISTS of the \
             new item: {present}); log:\n{}",
            replica.log()
        );
    }
    assert_abort_line(&replica.log(), command, "the replica");
}

/// A primary and a would-be replica (not attached yet), and a connection to the primary.
fn unattached_pair() -> (Server, Server, Connection) {
    let primary = Server::start();
    let replica = Server::start();
    let p = primary.conn();
    (primary, replica, p)
}

#[test]
fn replica_that_cannot_grow_a_layer_aborts() {
    let primary = Server::start();
    let mut replica = Server::start();
    attach_replica(&replica, &primary);
    let mut p = primary.conn();
    // A scaling filter whose second layer is about 256 MiB.
    let _: String = common::cmd("BF.RESERVE k 0.01 100 EXPANSION")
        .arg(BIG_CAPACITY / 100)
        .query(&mut p)
        .unwrap();
    let items: Vec<String> = (0..100).map(|i| format!("i{i}")).collect();
    let _: Vec<i64> = common::cmd("BF.MADD k").arg(&items).query(&mut p).unwrap();
    assert_eq!(wait_replica(&mut p), 1);
    limit_memory(&mut replica.conn());
    // The primary grows the layer; the replica cannot.
    let r: Vec<i64> = common::cmd("BF.MADD k last other").query(&mut p).unwrap();
    assert_eq!(r, vec![1, 1]);
    assert_aborted(&mut replica, "BF.MADD");
}

#[test]
fn replica_that_cannot_load_a_chunk_header_aborts() {
    let (primary, mut replica, mut p) = unattached_pair();
    // The header of a 256 MiB filter, taken before the replica attaches.
    ok(&mut p, &format!("BF.RESERVE src {BIG_PLAIN}"));
    let header: (i64, Vec<u8>) = common::cmd("BF.SCANDUMP src 0").query(&mut p).unwrap();
    let _: i64 = common::cmd("DEL src").query(&mut p).unwrap();
    attach_replica(&replica, &primary);
    limit_memory(&mut replica.conn());
    let r: String = common::cmd("BF.LOADCHUNK k")
        .arg(header.0)
        .arg(&header.1)
        .query(&mut p)
        .unwrap();
    assert_eq!(r, "OK");
    assert_aborted(&mut replica, "BF.LOADCHUNK");
}

#[test]
fn replica_under_a_memory_limit_still_applies_what_fits() {
    let (primary, mut replica, mut p) = unattached_pair();
    let _: String = common::cmd("BF.RESERVE src 0.01 10000")
        .query(&mut p)
        .unwrap();
    let _: i64 = common::cmd("BF.ADD src dumped").query(&mut p).unwrap();
    let dump = common::scandump(&mut p, b"src");
    let _: i64 = common::cmd("CF.ADD csrc dumped").query(&mut p).unwrap();
    let cf_dump = common::cf_scandump_walk(&mut p, b"csrc");
    attach_replica(&replica, &primary);
    limit_memory(&mut replica.conn());
    // Cuckoo: implicit creation and growth to several sub-filters, a delete, an add, a
    // CF.LOADCHUNK restore.
    let items: Vec<String> = (0..3000).map(|i| format!("i{i}")).collect();
    let r: Vec<i64> = common::cmd("CF.INSERT c CAPACITY 1000 ITEMS")
        .arg(&items)
        .query(&mut p)
        .unwrap();
    assert!(r.iter().all(|&v| v == 1), "{r:?}");
    let deleted: i64 = common::cmd("CF.DEL c i1").query(&mut p).unwrap();
    assert_eq!(deleted, 1);
    let _: i64 = common::cmd("CF.ADD c last").query(&mut p).unwrap();
    for (iter, data) in cf_dump.iter().filter_map(|(i, d)| Some((i, d.as_ref()?))) {
        let _: String = common::cmd("CF.LOADCHUNK crestored")
            .arg(iter)
            .arg(data)
            .query(&mut p)
            .unwrap();
    }
    // Bloom: implicit creation, growth over many layers, a partial MADD, a LOADCHUNK restore.
    let items: Vec<String> = (0..5000).map(|i| format!("i{i}")).collect();
    let r: Vec<Value> = common::cmd("BF.INSERT k CAPACITY 10 ITEMS")
        .arg(&items)
        .query(&mut p)
        .unwrap();
    assert!(r.iter().all(|v| matches!(v, Value::Int(_))), "{r:?}");
    let _: Vec<Value> = common::cmd("BF.MADD k i1 last").query(&mut p).unwrap();
    for (iter, data) in &dump {
        let _: String = common::cmd("BF.LOADCHUNK restored")
            .arg(iter)
            .arg(data)
            .query(&mut p)
            .unwrap();
    }
    assert_eq!(wait_replica(&mut p), 1);
    assert!(replica.is_alive());
    let mut r = replica.conn();
    for key in ["k", "restored"] {
        assert_eq!(
            common::scandump(&mut r, key.as_bytes()),
            common::scandump(&mut p, key.as_bytes()),
            "{key} differs on the replica"
        );
    }
    for key in ["c", "crestored"] {
        assert_eq!(
            common::cf_scandump_walk(&mut r, key.as_bytes()),
            common::cf_scandump_walk(&mut p, key.as_bytes()),
            "{key} differs on the replica"
        );
    }
    let info: Vec<Value> = common::cmd("CF.INFO c").query(&mut r).unwrap();
    assert!(matches!(info[5], Value::Int(n) if n > 1), "grown: {info:?}");
    for line in ["BF.EXISTS k last", "CF.EXISTS c last"] {
        let present: i64 = common::cmd(line).query(&mut r).unwrap();
        assert_eq!(present, 1, "{line}");
    }
}

// ---------------------------------------------------------------------------------------------
// Window and cuckoo filters: every path that allocates follows the same rule, on every
// supported server.

/// A window filter whose generations take about 266 MiB each (160 million items at
/// 0.01 / 6): twice the headroom.
const BIG_WINDOW: &str = "0.01 640000000 WINDOW 3600000";

/// A plain filter whose one layer takes about 256 MiB (172 million items at 0.005,
/// [`BIG_CAPACITY`]): twice the headroom.
const BIG_PLAIN: &str = "0.005 172000000 NONSCALING";

/// A cuckoo filter whose table takes 256 MiB (2^27 buckets of 2): twice the headroom.
const BIG_CF: &str = "268435456";

/// `CF.RESERVE w 8192 EXPANSION 32768`: 8 KiB now, and 8 KiB × 32768 = 256 MiB for the
/// sub-filter it grows next.
const GROWING_CF: &str = "CF.RESERVE w 8192 EXPANSION 32768";

/// The items that fill `GROWING_CF`'s first sub-filter (computed with the core: the first item
/// that needs a new sub-filter ends the list), and that item.
fn growing_cf_fill() -> (Vec<String>, String) {
    let mut cf = Cuckoo::new(8192, 2, 20, 32768, u64::MAX).unwrap();
    for n in 0.. {
        let item = format!("fill{n}");
        if cf.insert(item.as_bytes(), false, 0) == Insert::CannotGrow {
            return ((0..n).map(|i| format!("fill{i}")).collect(), item);
        }
    }
    unreachable!()
}

/// How each case prepares the primary (before the replica attaches, so that nothing big is
/// allocated on the replica first) and the command that makes the replica allocate.
struct AllocCase {
    name: &'static str,
    /// The command named in the module's abort line: the one the replica receives (a window
    /// add reaches it rewritten as `BF.INSERT … GENERATION g`, a cuckoo creation as an explicit
    /// `CF.RESERVE`).
    command: &'static str,
    /// Prepares the primary; returns the command to send once the replica is limited.
    setup: fn(&mut Connection) -> redis::Cmd,
}

/// Fills the first layer of `w`'s current generation (25 items) without growing it.
fn fill_generation(p: &mut Connection) {
    let items: Vec<String> = (0..25).map(|i| format!("fill{i}")).collect();
    let _: Vec<i64> = common::cmd("BF.MADD w").arg(&items).query(p).unwrap();
    let card: i64 = common::cmd("BF.CARD w").query(p).unwrap();
    let layers: Vec<Value> = common::cmd("BF.INFO w FILTERS").query(p).unwrap();
    assert_eq!((card, &layers[..]), (25, &[Value::Int(1)][..]));
}

/// `<kind>.RESERVE src <reserve>`, then `<kind>.ADD src x` (so a window filter has a
/// generation, and a cuckoo filter a SCANDUMP); `kind` is `BF` or `CF`.
fn filled_src(p: &mut Connection, kind: &str, reserve: &str) {
    let _: String = common::cmd(format!("{kind}.RESERVE src {reserve}"))
        .query(p)
        .unwrap();
    let _: i64 = common::cmd(format!("{kind}.ADD src x")).query(p).unwrap();
}

/// `take`'s reply on a filter `src` (`<kind>.RESERVE src <reserve>` holding one item), which
/// is then deleted: what a replica gets only later, as a header or a payload.
fn made_and_deleted<T: redis::FromRedisValue>(
    p: &mut Connection,
    kind: &str,
    reserve: &str,
    take: &str,
) -> T {
    filled_src(p, kind, reserve);
    let taken: T = common::cmd(take).query(p).unwrap();
    let _: i64 = common::cmd("DEL src").query(p).unwrap();
    taken
}

/// `<kind>.LOADCHUNK w 1 <header>` with the SCANDUMP header of a filter made by
/// [`made_and_deleted`].
fn loadchunk_header_of(p: &mut Connection, kind: &str, reserve: &str) -> redis::Cmd {
    let (iter, header): (i64, Vec<u8>) =
        made_and_deleted(p, kind, reserve, &format!("{kind}.SCANDUMP src 0"));
    let mut c = common::cmd(format!("{kind}.LOADCHUNK w"));
    c.arg(iter).arg(header);
    c
}

/// `RESTORE w 0 <payload>`.
fn restore_of(payload: Vec<u8>) -> redis::Cmd {
    let mut c = common::cmd("RESTORE w 0");
    c.arg(payload);
    c
}

/// `COPY src w` of a filter made by [`filled_src`].
fn copy_of(p: &mut Connection, kind: &str, reserve: &str) -> redis::Cmd {
    filled_src(p, kind, reserve);
    common::cmd("COPY src w")
}

/// Runs a command line that answers OK (a creation).
fn ok(c: &mut Connection, line: &str) {
    let r: String = common::cmd(line).query(c).unwrap();
    assert_eq!(r, "OK", "{line}");
}

/// `n` items named `<prefix><i>`.
fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// `CF.INSERT w ITEMS <items>` (every item must be taken), then the number of sub-filters `w`
/// has (CF.INFO's "Number of filters").
fn cf_insert_w(c: &mut Connection, items: &[String]) -> Value {
    let r: Vec<i64> = common::cmd("CF.INSERT w ITEMS")
        .arg(items)
        .query(c)
        .unwrap();
    assert!(r.iter().all(|&v| v == 1), "CF.INSERT w: {r:?}");
    let info: Vec<Value> = common::cmd("CF.INFO w").query(c).unwrap();
    info[5].clone()
}

/// A row of [`CASES`]: its name, the command of its abort line and its setup.
const fn case(
    name: &'static str,
    command: &'static str,
    setup: fn(&mut Connection) -> redis::Cmd,
) -> AllocCase {
    AllocCase {
        name,
        command,
        setup,
    }
}

const CASES: &[AllocCase] = &[
    case("a new generation", "BF.INSERT", |p| {
        ok(p, &format!("BF.RESERVE w {BIG_WINDOW}"));
        common::cmd("BF.MADD w a b c")
    }),
    case("growth inside a generation", "BF.INSERT", |p| {
        // First layer: 25 items; the next one 25 × 25 600 000 = 640 million, about 1.2 GB
        // (checked on the primary below): far beyond the headroom, so no slack in the
        // replica's address space can make room for it.
        ok(p, "BF.RESERVE w 0.01 100 WINDOW 3600000 EXPANSION 25600000");
        fill_generation(p);
        common::cmd("BF.MADD w last other")
    }),
    case("an implicit creation", "BF.INSERT", |_| {
        common::cmd("BF.INSERT w CAPACITY 640000000 WINDOW 3600000 ITEMS a b")
    }),
    // Values that reach the replica whole (a LOADCHUNK header, a RESTORE payload, a COPY).
    case("the window LOADCHUNK header", "BF.LOADCHUNK", |p| {
        loadchunk_header_of(p, "BF", BIG_WINDOW)
    }),
    case("RESTORE", "RESTORE", |p| {
        restore_of(made_and_deleted(p, "BF", BIG_WINDOW, "DUMP src"))
    }),
    case("RESTORE of a plain filter", "RESTORE", |p| {
        restore_of(made_and_deleted(p, "BF", BIG_PLAIN, "DUMP src"))
    }),
    case("COPY", "COPY", |p| copy_of(p, "BF", BIG_WINDOW)),
    case("COPY of a plain filter", "COPY", |p| {
        copy_of(p, "BF", BIG_PLAIN)
    }),
    case("CF.RESERVE", "CF.RESERVE", |_| {
        common::cmd(format!("CF.RESERVE w {BIG_CF}"))
    }),
    case("a cuckoo implicit creation", "CF.RESERVE", |_| {
        common::cmd(format!("CF.INSERT w CAPACITY {BIG_CF} ITEMS a b"))
    }),
    case("a new cuckoo sub-filter (CF.INSERT)", "CF.INSERT", |p| {
        ok(p, GROWING_CF);
        let mut c = common::cmd("CF.INSERT w ITEMS");
        c.arg(items("i", 20_000));
        c
    }),
    case("a new cuckoo sub-filter (CF.ADD)", "CF.ADD", |p| {
        ok(p, GROWING_CF);
        let (fill, grows) = growing_cf_fill();
        for group in fill.chunks(1000) {
            assert_eq!(
                cf_insert_w(p, group),
                Value::Int(1),
                "one sub-filter before the add"
            );
        }
        let mut c = common::cmd("CF.ADD w");
        c.arg(grows);
        c
    }),
    case("the cuckoo LOADCHUNK header", "CF.LOADCHUNK", |p| {
        loadchunk_header_of(p, "CF", BIG_CF)
    }),
    case("RESTORE of a cuckoo filter", "RESTORE", |p| {
        restore_of(made_and_deleted(p, "CF", BIG_CF, "DUMP src"))
    }),
    case("COPY of a cuckoo filter", "COPY", |p| {
        copy_of(p, "CF", BIG_CF)
    }),
];

/// What the key `w` holds on a replica that stayed up: its type and its answers.
fn probe(con: &mut Connection) -> String {
    let mut out = Vec::new();
    for line in [
        "TYPE w",
        "BF.MEXISTS w a b c last x",
        "CF.MEXISTS w a b i0 x",
    ] {
        let r: redis::RedisResult<Value> = common::cmd(line).query(con);
        out.push(format!("{line}: {r:?}"));
    }
    out.join("; ")
}

#[test]
fn replica_that_cannot_allocate_aborts_on_every_server() {
    for (server, bin) in common::servers() {
        for case in CASES {
            let primary = Server::start_on(&bin, &[], &[]);
            let mut replica = Server::start_on(&bin, &[], &[]);
            let mut p = primary.conn();
            let trigger = (case.setup)(&mut p);
            attach_replica(&replica, &primary);
            limit_memory(&mut replica.conn());
            let r: Value = trigger.query(&mut p).unwrap();
            assert!(
                !matches!(r, Value::ServerError(_)),
                "{server}, {}: {r:?}",
                case.name
            );
            if !exits_within(&mut replica, Duration::from_secs(20)) {
                panic!(
                    "{server}, {}: the replica stayed up after failing a replicated {} ({}); \
                     log:\n{}",
                    case.name,
                    case.command,
                    probe(&mut replica.conn()),
                    replica.log()
                );
            }
            assert_abort_line(
                &replica.log(),
                case.command,
                &format!("{server}, {}", case.name),
            );
        }
    }
}

/// The module's two abort lines: a command's write that could not allocate, and a value
/// (RESTORE, a loaded or copied value) that could not be built.
const MODULE_ABORTS: [&str; 2] = ["bf: out of memory", "bf: cannot "];

/// The replica's or loader's log names the abort: the module's own line (naming the command,
/// on servers with `RedisModule_TryCalloc`) or the server allocator's, which aborts by itself
/// on servers without it (7.0–7.2) and for buffers Redis allocates itself (RESTORE's payload).
fn assert_abort_line(log: &str, command: &str, what: &str) {
    let module_line = |l: &str| MODULE_ABORTS.iter().any(|m| l.contains(m));
    let line = log
        .lines()
        .find(|l| module_line(l) || l.contains("Out Of Memory allocating"))
        .unwrap_or_else(|| panic!("{what}: no abort line in the log:\n{log}"));
    if module_line(line) {
        assert!(
            line.contains(command) && line.contains("aborting"),
            "{what}: {line}"
        );
        println!("{what}: aborted by the module ({command})");
    } else {
        println!("{what}: aborted by the server's allocator");
    }
}

/// An AOF whose replay must allocate more than the headroom: what a server writes to its AOF
/// (`write`, after the start with `configs`) and the command its replay aborts in.
struct AofCase {
    name: &'static str,
    configs: &'static [(&'static str, &'static str)],
    write: fn(&mut Connection),
    command: &'static str,
}

/// The configs of an AOF case that only writes an AOF.
const APPENDONLY: &[(&str, &str)] = &[("appendonly", "yes")];

const AOF_CASES: &[AofCase] = &[
    AofCase {
        name: "a window generation",
        configs: APPENDONLY,
        write: |c| {
            ok(c, &format!("BF.RESERVE w {BIG_WINDOW}"));
            let r: Vec<i64> = common::cmd("BF.MADD w a b c").query(c).unwrap();
            assert_eq!(r, vec![1, 1, 1]);
        },
        command: "BF.INSERT",
    },
    AofCase {
        name: "CF.RESERVE",
        configs: APPENDONLY,
        write: |c| ok(c, &format!("CF.RESERVE w {BIG_CF}")),
        command: "CF.RESERVE",
    },
    AofCase {
        name: "a new cuckoo sub-filter",
        configs: APPENDONLY,
        write: |c| {
            ok(c, GROWING_CF);
            let grown = cf_insert_w(c, &items("i", 20_000));
            assert_eq!(grown, Value::Int(2), "the filter grew");
        },
        command: "CF.INSERT",
    },
    AofCase {
        name: "a rewritten AOF's CF.LOADCHUNK header",
        configs: &[("appendonly", "yes"), ("aof-use-rdb-preamble", "no")],
        write: |c| {
            filled_src(c, "CF", BIG_CF);
            let _: Value = common::cmd("BGREWRITEAOF").query(c).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while common::info_num(c, "persistence", "aof_rewrite_in_progress") == 1
                || common::info_num(c, "persistence", "aof_rewrite_scheduled") == 1
            {
                assert!(std::time::Instant::now() < deadline, "the rewrite ends");
                std::thread::sleep(Duration::from_millis(20));
            }
            let status = common::info_str(c, "persistence", "aof_last_bgrewrite_status");
            assert_eq!(status, "ok");
        },
        command: "CF.LOADCHUNK",
    },
];

#[test]
fn aof_replay_that_cannot_allocate_aborts_on_every_server() {
    for (server, bin) in common::servers() {
        for case in AOF_CASES {
            let what = format!("{server}, {}", case.name);
            let mut s = Server::start_on(&bin, &[], case.configs);
            let mut c = s.conn();
            // What a fresh process of this server maps before it loads anything big.
            let pid = common::info_str(&mut c, "server", "process_id");
            let limit = common::proc_vm_bytes(&pid, "VmSize") + HEADROOM;
            (case.write)(&mut c);
            drop(c);
            let status = s.run_limited(limit, Duration::from_secs(30));
            assert!(
                status.is_some_and(|st| !st.success()),
                "{what}: the AOF replay under a {limit}-byte address space did not abort \
                 ({status:?}); log:\n{}",
                s.log()
            );
            assert_abort_line(&s.log(), case.command, &what);
        }
    }
}

/// A primary's own creations just under (and over) its address-space limit of 128 MiB of
/// headroom: Bloom first layers of about 115, 118, 119, 120 and 131 MB; cuckoo tables of 112,
/// 116, 120, 124, 127, 128 and 144 MiB (bucket sizes 7, 29, 15, 31, 127, 1 and 9), and of 1
/// and 2 GiB, which cannot fit (`true`: must be refused).
const NEAR_LIMIT: &[(&str, bool)] = &[
    ("BF.RESERVE k 0.01 84000000", false),
    ("BF.RESERVE k 0.01 85500000", false),
    ("BF.RESERVE k 0.01 86500000", false),
    ("BF.RESERVE k 0.01 87500000", false),
    ("BF.RESERVE k 0.01 95000000", false),
    ("CF.RESERVE k 117440512 BUCKETSIZE 7", false),
    ("CF.RESERVE k 121634816 BUCKETSIZE 29", false),
    ("CF.RESERVE k 125829120 BUCKETSIZE 15", false),
    ("CF.RESERVE k 130023424 BUCKETSIZE 31", false),
    ("CF.RESERVE k 133169152 BUCKETSIZE 127", false),
    ("CF.RESERVE k 134217728 BUCKETSIZE 1", false),
    ("CF.RESERVE k 150994944 BUCKETSIZE 9", false),
    ("CF.INSERT k CAPACITY 1073741824 ITEMS a", true),
    ("CF.RESERVE k 1073741824 BUCKETSIZE 255", true),
];

/// A primary's own client never aborts the server, even just under its address-space limit,
/// where the allocator maps a whole size class (up to 25 % more than the array): each
/// creation is either made or refused with the creation error, on every supported server.
#[test]
fn creation_near_the_address_space_limit_never_aborts() {
    for (server, bin) in common::servers() {
        // Each on a fresh server (a freed array's address space is kept for reuse).
        for &(line, too_big) in NEAR_LIMIT {
            let mut s = Server::start_on(&bin, &[], &[]);
            limit_memory(&mut s.conn());
            let mut c = s.conn();
            let r: redis::RedisResult<Value> = common::cmd(line).query(&mut c);
            match &r {
                Ok(v) => assert!(
                    !too_big && matches!(v, Value::Okay | Value::Array(_)),
                    "{server}, {line}: {v:?}"
                ),
                Err(e) => assert!(
                    e.to_string()
                        .contains("Insufficient memory to create filter"),
                    "{server}, {line}: {e}; log:\n{}",
                    s.log()
                ),
            }
            let made = r.is_ok();
            assert!(s.is_alive(), "{server}, {line}: log:\n{}", s.log());
            println!(
                "{server}: {line}: {}",
                if made { "made" } else { "refused" }
            );
        }
    }
}
