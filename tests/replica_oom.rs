//! A replica that cannot allocate what its primary allocated must not acknowledge the write
//! and stay "in sync" with missing items (after a failover it would answer false negatives):
//! it aborts with a log line, as Redis does when its own allocator runs out. The replica's
//! address space is limited with `prlimit --as` (RLIMIT_AS) once it is in sync.
//!
//! Needs `cargo build --release` first, and `prlimit` (util-linux).

mod common;

use common::Server;
use redis::{Connection, Value};
use std::time::{Duration, Instant};

/// Room left to the replica above its address space at the time of the limit.
const HEADROOM: u64 = 128 << 20;
/// A capacity whose layer at error 0.0025 (a scaling filter's second layer, 12.47 bits an
/// item) takes about 256 MiB: twice the headroom.
const BIG_CAPACITY: u64 = 172_000_000;

fn info_field(con: &mut Connection, section: &str, name: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .trim()
        .to_string()
}

/// Makes `replica` a replica of `primary` and waits until the link is up and in sync.
fn attach(replica: &Server, primary: &Server) {
    let mut r = replica.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port)
        .query(&mut r)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_field(&mut r, "replication", "master_link_status") != "up" {
        assert!(Instant::now() < deadline, "replica never synced");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Limits the address space of the server behind `con` to its current size plus `HEADROOM`.
fn limit_memory(con: &mut Connection) {
    let pid = info_field(con, "server", "process_id");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    let limit = vm_kib * 1024 + HEADROOM;
    let out = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(&pid)
        .arg(format!("--as={limit}:{limit}"))
        .output()
        .expect("prlimit (util-linux) is needed");
    assert!(out.status.success(), "prlimit: {out:?}");
}

/// Waits until the primary's write reached its replica (`WAIT 1`), or the timeout.
fn wait_replica(primary: &mut Connection) -> i64 {
    redis::cmd("WAIT").arg(1).arg(5000).query(primary).unwrap()
}

/// Waits up to 20 s for the replica process to exit; true if it did.
fn died(replica: &mut Server) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !replica.is_alive() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn assert_aborted(replica: &mut Server, command: &str) {
    if !died(replica) {
        let mut r = replica.conn();
        let present: i64 = redis::cmd("BF.EXISTS")
            .arg("k")
            .arg("last")
            .query(&mut r)
            .unwrap_or(-1);
        panic!(
            "the replica stayed up after failing a replicated {command} (BF.EXISTS of the \
             new item: {present}); log:\n{}",
            replica.log()
        );
    }
    let log = replica.log();
    let line = log
        .lines()
        .find(|l| l.contains("bf: out of memory"))
        .unwrap_or_else(|| panic!("no out-of-memory line in the replica's log:\n{log}"));
    assert!(line.contains(command), "{line}");
    assert!(line.contains("aborting"), "{line}");
}

#[test]
fn replica_that_cannot_grow_a_layer_aborts() {
    let primary = Server::start();
    let mut replica = Server::start();
    attach(&replica, &primary);
    let mut p = primary.conn();
    // A scaling filter whose second layer is about 256 MiB.
    let _: String = redis::cmd("BF.RESERVE")
        .arg("k")
        .arg(0.01)
        .arg(100)
        .arg("EXPANSION")
        .arg(BIG_CAPACITY / 100)
        .query(&mut p)
        .unwrap();
    let items: Vec<String> = (0..100).map(|i| format!("i{i}")).collect();
    let _: Vec<i64> = redis::cmd("BF.MADD")
        .arg("k")
        .arg(&items)
        .query(&mut p)
        .unwrap();
    assert_eq!(wait_replica(&mut p), 1);
    limit_memory(&mut replica.conn());
    // The primary grows the layer; the replica cannot.
    let r: Vec<i64> = redis::cmd("BF.MADD")
        .arg("k")
        .arg("last")
        .arg("other")
        .query(&mut p)
        .unwrap();
    assert_eq!(r, vec![1, 1]);
    assert_aborted(&mut replica, "BF.MADD");
}

#[test]
fn replica_that_cannot_load_a_chunk_header_aborts() {
    let primary = Server::start();
    let mut replica = Server::start();
    let mut p = primary.conn();
    // The header of a 256 MiB filter, taken before the replica attaches.
    let _: String = redis::cmd("BF.RESERVE")
        .arg("src")
        .arg(0.005)
        .arg(BIG_CAPACITY)
        .arg("NONSCALING")
        .query(&mut p)
        .unwrap();
    let header: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
        .arg("src")
        .arg(0)
        .query(&mut p)
        .unwrap();
    let _: i64 = redis::cmd("DEL").arg("src").query(&mut p).unwrap();
    attach(&replica, &primary);
    limit_memory(&mut replica.conn());
    let r: String = redis::cmd("BF.LOADCHUNK")
        .arg("k")
        .arg(header.0)
        .arg(&header.1)
        .query(&mut p)
        .unwrap();
    assert_eq!(r, "OK");
    assert_aborted(&mut replica, "BF.LOADCHUNK");
}

#[test]
fn replica_under_a_memory_limit_still_applies_what_fits() {
    let primary = Server::start();
    let mut replica = Server::start();
    let mut p = primary.conn();
    let _: String = redis::cmd("BF.RESERVE")
        .arg("src")
        .arg(0.01)
        .arg(10_000)
        .query(&mut p)
        .unwrap();
    let _: i64 = redis::cmd("BF.ADD")
        .arg("src")
        .arg("dumped")
        .query(&mut p)
        .unwrap();
    let dump = common::scandump(&mut p, b"src");
    attach(&replica, &primary);
    limit_memory(&mut replica.conn());
    // Implicit creation, growth over many layers, a partial MADD, a LOADCHUNK restore.
    let items: Vec<String> = (0..5000).map(|i| format!("i{i}")).collect();
    let r: Vec<Value> = redis::cmd("BF.INSERT")
        .arg("k")
        .arg("CAPACITY")
        .arg(10)
        .arg("ITEMS")
        .arg(&items)
        .query(&mut p)
        .unwrap();
    assert!(r.iter().all(|v| matches!(v, Value::Int(_))), "{r:?}");
    let _: Vec<Value> = redis::cmd("BF.MADD")
        .arg("k")
        .arg("i1")
        .arg("last")
        .query(&mut p)
        .unwrap();
    for (iter, data) in &dump {
        let _: String = redis::cmd("BF.LOADCHUNK")
            .arg("restored")
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
    let present: i64 = redis::cmd("BF.EXISTS")
        .arg("k")
        .arg("last")
        .query(&mut r)
        .unwrap();
    assert_eq!(present, 1);
}
