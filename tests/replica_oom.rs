//! A replica that cannot allocate what its primary allocated must not acknowledge the write
//! and stay "in sync" with missing items (after a failover it would answer false negatives):
//! it aborts with a log line, as Redis does when its own allocator runs out. The replica's
//! address space is limited with `prlimit --as` (RLIMIT_AS) once it is in sync.
//!
//! Needs `cargo build --release` first, and `prlimit` (util-linux).

mod common;

use common::{attach_replica, exits_within, Server};
use redis::{Connection, Value};
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
    common::limit_address_space(con, HEADROOM);
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
    // Either the module's own line (servers with RedisModule_TryCalloc: the allocation fails
    // and the module aborts, naming the command) or Redis' allocator's (7.0–7.2, where a
    // zeroed array comes from RedisModule_Calloc, which aborts by itself when it cannot).
    let log = replica.log();
    let line = log
        .lines()
        .find(|l| l.contains("bf: out of memory") || l.contains("Out Of Memory allocating"))
        .unwrap_or_else(|| panic!("no out-of-memory line in the replica's log:\n{log}"));
    if line.contains("bf: out of memory") {
        assert!(line.contains(command), "{line}");
        assert!(line.contains("aborting"), "{line}");
    }
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
    let _: String = common::cmd(format!("BF.RESERVE src 0.005 {BIG_CAPACITY} NONSCALING"))
        .query(&mut p)
        .unwrap();
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
    attach_replica(&replica, &primary);
    limit_memory(&mut replica.conn());
    // Implicit creation, growth over many layers, a partial MADD, a LOADCHUNK restore.
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
    let present: i64 = common::cmd("BF.EXISTS k last").query(&mut r).unwrap();
    assert_eq!(present, 1);
}

// ---------------------------------------------------------------------------------------------
// Window filters: every path that allocates follows the same rule, on every supported server.

/// A window filter whose generations take about 266 MiB each (160 million items at
/// 0.01 / 6): twice the headroom.
const BIG_WINDOW: &str = "0.01 640000000 WINDOW 3600000";

/// How each window case prepares the primary (before the replica attaches, so that nothing
/// big is allocated on the replica first) and the command that makes the replica allocate.
struct WindowCase {
    name: &'static str,
    /// The command named in the module's abort line: the one the replica receives (a window
    /// add reaches it rewritten as `BF.INSERT … GENERATION g`).
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

/// `BF.RESERVE src <reserve>`, then `BF.ADD src x` (so a window filter has a generation).
fn filled_src(p: &mut Connection, reserve: &str) {
    let _: String = common::cmd(format!("BF.RESERVE src {reserve}"))
        .query(p)
        .unwrap();
    let _: i64 = common::cmd("BF.ADD src x").query(p).unwrap();
}

/// `take`'s reply on a filter `src` (`BF.RESERVE src <reserve>` holding one item), which is
/// then deleted: what a replica gets only later, as a header or a payload.
fn made_and_deleted<T: redis::FromRedisValue>(p: &mut Connection, reserve: &str, take: &str) -> T {
    filled_src(p, reserve);
    let taken: T = common::cmd(take).query(p).unwrap();
    let _: i64 = common::cmd("DEL src").query(p).unwrap();
    taken
}

/// `RESTORE w 0 <payload>`.
fn restore_of(payload: Vec<u8>) -> redis::Cmd {
    let mut c = common::cmd("RESTORE w 0");
    c.arg(payload);
    c
}

const WINDOW_CASES: &[WindowCase] = &[
    WindowCase {
        name: "a new generation",
        command: "BF.INSERT",
        setup: |p| {
            let _: String = common::cmd(format!("BF.RESERVE w {BIG_WINDOW}"))
                .query(p)
                .unwrap();
            common::cmd("BF.MADD w a b c")
        },
    },
    WindowCase {
        name: "growth inside a generation",
        command: "BF.INSERT",
        setup: |p| {
            // First layer: 25 items; the next one 25 × 25 600 000 = 640 million, about 1.2 GB
            // (checked on the primary below): far beyond the headroom, so no slack in the
            // replica's address space can make room for it.
            let _: String = common::cmd("BF.RESERVE w 0.01 100 WINDOW 3600000 EXPANSION 25600000")
                .query(p)
                .unwrap();
            fill_generation(p);
            common::cmd("BF.MADD w last other")
        },
    },
    WindowCase {
        name: "an implicit creation",
        command: "BF.INSERT",
        setup: |_| common::cmd("BF.INSERT w CAPACITY 640000000 WINDOW 3600000 ITEMS a b"),
    },
    WindowCase {
        name: "the window LOADCHUNK header",
        command: "BF.LOADCHUNK",
        setup: |p| {
            let (iter, header): (i64, Vec<u8>) =
                made_and_deleted(p, BIG_WINDOW, "BF.SCANDUMP src 0");
            let mut c = common::cmd("BF.LOADCHUNK w");
            c.arg(iter).arg(header);
            c
        },
    },
    WindowCase {
        name: "RESTORE",
        command: "RESTORE",
        setup: |p| restore_of(made_and_deleted(p, BIG_WINDOW, "DUMP src")),
    },
    WindowCase {
        name: "RESTORE of a plain filter",
        command: "RESTORE",
        setup: |p| {
            let reserve = format!("0.005 {BIG_CAPACITY} NONSCALING");
            restore_of(made_and_deleted(p, &reserve, "DUMP src"))
        },
    },
    WindowCase {
        name: "COPY",
        command: "COPY",
        setup: |p| {
            filled_src(p, BIG_WINDOW);
            common::cmd("COPY src w")
        },
    },
    WindowCase {
        name: "COPY of a plain filter",
        command: "COPY",
        setup: |p| {
            filled_src(p, &format!("0.005 {BIG_CAPACITY} NONSCALING"));
            common::cmd("COPY src w")
        },
    },
];

#[test]
fn window_replica_that_cannot_allocate_aborts_on_every_server() {
    for (server, bin) in common::servers() {
        for case in WINDOW_CASES {
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
                let mut rc = replica.conn();
                let answers: Value = common::cmd("BF.MEXISTS w a b c last x")
                    .query(&mut rc)
                    .unwrap();
                panic!(
                    "{server}, {}: the replica stayed up after failing a replicated {} \
                     (BF.MEXISTS: {answers:?}); log:\n{}",
                    case.name,
                    case.command,
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

/// The replica's or loader's log names the out-of-memory abort: the module's own line (with
/// the command) or the server allocator's, which aborts by itself on servers without
/// `RedisModule_TryCalloc` and for buffers Redis allocates itself (RESTORE's payload).
fn assert_abort_line(log: &str, command: &str, what: &str) {
    let line = log
        .lines()
        .find(|l| l.contains("bf: out of memory") || l.contains("Out Of Memory allocating"))
        .unwrap_or_else(|| panic!("{what}: no out-of-memory line in the log:\n{log}"));
    if line.contains("bf: out of memory") {
        assert!(
            line.contains(command) && line.contains("aborting"),
            "{what}: {line}"
        );
    }
}

#[test]
fn window_aof_replay_that_cannot_allocate_aborts_on_every_server() {
    for (server, bin) in common::servers() {
        let mut s = Server::start_on(&bin, &[], &[("appendonly", "yes")]);
        let mut c = s.conn();
        let _: String = common::cmd(format!("BF.RESERVE w {BIG_WINDOW}"))
            .query(&mut c)
            .unwrap();
        // What a fresh process of this server maps before it loads anything big.
        let pid = common::info_str(&mut c, "server", "process_id");
        let limit = common::proc_vm_bytes(&pid, "VmSize") + HEADROOM;
        let r: Vec<i64> = common::cmd("BF.MADD w a b c").query(&mut c).unwrap();
        assert_eq!(r, vec![1, 1, 1]);
        drop(c);
        let status = s.run_limited(limit, Duration::from_secs(30));
        assert!(
            status.is_some_and(|st| !st.success()),
            "{server}: the AOF replay under a {limit}-byte address space did not abort \
             ({status:?}); log:\n{}",
            s.log()
        );
        assert_abort_line(&s.log(), "BF.INSERT", server);
    }
}

/// A primary's own client never aborts the server, even just under its address-space limit,
/// where the allocator maps a whole size class (up to 25 % more than the array): each
/// creation is either made or refused with the creation error, on every supported server.
#[test]
fn creation_near_the_address_space_limit_never_aborts() {
    for (server, bin) in common::servers() {
        // First layers of about 115, 118, 119, 120 and 131 MB against 128 MiB of headroom,
        // each on a fresh server (a freed array's address space is kept for reuse).
        for capacity in [
            84_000_000u64,
            85_500_000,
            86_500_000,
            87_500_000,
            95_000_000,
        ] {
            let mut s = Server::start_on(&bin, &[], &[]);
            limit_memory(&mut s.conn());
            let mut c = s.conn();
            let r: redis::RedisResult<String> =
                common::cmd("BF.RESERVE k 0.01").arg(capacity).query(&mut c);
            match &r {
                Ok(ok) => assert_eq!(ok, "OK", "{server}, {capacity}"),
                Err(e) => assert!(
                    e.to_string()
                        .contains("Insufficient memory to create filter"),
                    "{server}, {capacity}: {e}; log:\n{}",
                    s.log()
                ),
            }
            assert!(s.is_alive(), "{server}, {capacity}: log:\n{}", s.log());
        }
    }
}
