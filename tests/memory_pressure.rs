//! Memory pressure: a new filter or layer is a write like any other. Under an eviction policy
//! Redis evicts and the write succeeds unless it can never fit; under `noeviction` what would
//! cross `maxmemory` is refused; a LOADCHUNK header refused for memory says so; and batches do
//! not hold copies of their items (peak RSS, `VmHWM`).
//!
//! Needs `cargo build --release` first.

mod common;

use common::{config_set, info_num, proc_number, proc_vm_bytes, Server};
use redis::{Connection, Value};

const NO_MEMORY: &str = "Insufficient memory to create filter";

fn used_memory(con: &mut Connection) -> u64 {
    info_num(con, "memory", "used_memory")
}

/// Fills the server with `n` strings of 1000 bytes (with a TTL, so volatile policies can
/// evict them).
fn fill(con: &mut Connection, n: usize) {
    let value = vec![b'x'; 1000];
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET")
                .arg(format!("fill:{i}"))
                .arg(&value)
                .arg("EX")
                .arg(100_000)
                .ignore();
        }
        let _: () = p.query(con).unwrap();
    }
}

fn error_text(r: redis::RedisResult<Value>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// A reply of 1 / true (RESP2 integer).
fn is_one(v: &Value) -> bool {
    matches!(v, Value::Int(1))
}

/// Fills 10 000 strings (about 11 MB), then sets `policy` and a `maxmemory` 1 MiB under
/// `used_memory`: the state of a full cache, where every write makes Redis evict.
fn full_cache(policy: &str) -> (Server, Connection, u64) {
    let s = Server::start();
    let mut con = s.conn();
    fill(&mut con, 10_000);
    let max = used_memory(&mut con) - (1 << 20);
    config_set(&mut con, "maxmemory-policy", policy);
    config_set(&mut con, "maxmemory", &max.to_string());
    (s, con, max)
}

#[test]
fn eviction_policies_treat_new_filters_as_writes() {
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "volatile-lru",
        "allkeys-random",
    ] {
        let (_s, mut con, max) = full_cache(policy);
        // 1000 new keys by BF.ADD, pipelined: every one is created (Redis evicts strings).
        let mut p = redis::pipe();
        for i in 0..1000 {
            p.cmd("BF.ADD").arg(format!("user:{i}")).arg("item");
        }
        let replies: Vec<Value> = p.query(&mut con).unwrap();
        let ok = replies.iter().filter(|v| is_one(v)).count();
        assert_eq!(
            ok, 1000,
            "{policy}: new-key BF.ADD refused: {:?}",
            replies[0]
        );
        // A 2.6 MB filter (large: the exact budget is read) and BF.INSERT on a new key.
        let r: String = common::cmd("BF.RESERVE big 0.01 2000000")
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{policy}: BF.RESERVE of 2.6 MB refused: {e}"));
        assert_eq!(r, "OK");
        let r: Vec<i64> = common::cmd("BF.INSERT ins CAPACITY 100000 ITEMS a b")
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{policy}: BF.INSERT refused: {e}"));
        assert_eq!(r, vec![1, 1]);
        // Growth into a 312 KB layer (above the small-array threshold): a filter of 10 items
        // with expansion 20 000 takes 20 items. In one transaction, so that Redis evicts before
        // it and not in between (allkeys policies may evict the new filter itself).
        let items: Vec<String> = (0..20).map(|i| format!("g{i}")).collect();
        let (r, layers): (Vec<Value>, Vec<i64>) = redis::pipe()
            .atomic()
            .cmd("BF.RESERVE")
            .arg("grow")
            .arg(0.01)
            .arg(10)
            .arg("EXPANSION")
            .arg(20_000)
            .ignore()
            .cmd("BF.MADD")
            .arg("grow")
            .arg(&items)
            .cmd("BF.INFO")
            .arg("grow")
            .arg("FILTERS")
            .query(&mut con)
            .unwrap();
        assert_eq!(r, vec![Value::Int(1); 20], "{policy}: growth refused");
        assert_eq!(layers, vec![2], "{policy}");
        // What can never fit is still refused: an array larger than maxmemory itself.
        let e = error_text(
            common::cmd("BF.RESERVE huge 0.01")
                .arg(max) // about 1.2 bytes an item: larger than maxmemory
                .query(&mut con),
        );
        assert!(e.contains(NO_MEMORY), "{policy}: {e}");
        let evicted = info_num(&mut con, "stats", "evicted_keys");
        assert!(evicted > 0, "{policy}: nothing evicted");
        assert!(
            used_memory(&mut con) < max + (4 << 20),
            "{policy}: over limit"
        );
    }
}

#[test]
fn noeviction_refuses_what_would_cross_maxmemory() {
    let s = Server::start();
    let mut con = s.conn();
    // A full filter of 10 items about to grow into a 431 KB layer.
    let _: String = common::cmd("BF.RESERVE grow 0.001 10 EXPANSION 20000")
        .query(&mut con)
        .unwrap();
    let items: Vec<String> = (0..10).map(|i| format!("g{i}")).collect();
    let r: Vec<i64> = common::cmd("BF.MADD grow")
        .arg(&items)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, vec![1; 10]);
    config_set(&mut con, "maxmemory-policy", "noeviction");
    let max = used_memory(&mut con) + 150_000;
    config_set(&mut con, "maxmemory", &max.to_string());

    // Small new filters still fit.
    let r: i64 = common::cmd("BF.ADD small a").query(&mut con).unwrap();
    assert_eq!(r, 1);
    // A 2.6 MB filter would cross the limit.
    let e = error_text(common::cmd("BF.RESERVE big 0.01 2000000").query(&mut con));
    assert!(e.contains(NO_MEMORY), "{e}");
    // The growth too: the item is refused, the filter unchanged.
    let e = error_text(common::cmd("BF.ADD grow").arg("one more").query(&mut con));
    assert!(e.contains("problem inserting into filter"), "{e}");
    let r: Vec<Value> = common::cmd("BF.INFO grow FILTERS").query(&mut con).unwrap();
    assert_eq!(r, vec![Value::Int(1)]);
    // Near the limit small arrays are checked exactly: 55 KB fits in the ~150 KB left once,
    // not three times.
    let mut results = Vec::new();
    for i in 0..3 {
        results.push(
            redis::cmd("BF.RESERVE")
                .arg(format!("mid{i}"))
                .arg(0.01)
                .arg(40_000)
                .query::<String>(&mut con)
                .map_err(|e| e.to_string()),
        );
    }
    assert_eq!(results[0], Ok("OK".to_string()), "{results:?}");
    assert!(
        results[2].as_ref().is_err_and(|e| e.contains(NO_MEMORY)),
        "{results:?}"
    );
    assert!(used_memory(&mut con) <= max, "crossed maxmemory");
    // Refusals are not evictions: nothing was evicted.
    assert_eq!(info_num(&mut con, "stats", "evicted_keys"), 0);
}

/// The SCANDUMP of a filter of `capacity` at 0.01: header, then chunks.
fn dump_of(con: &mut Connection, key: &str, capacity: u64) -> Vec<(i64, Vec<u8>)> {
    let _: String = redis::cmd("BF.RESERVE")
        .arg(key)
        .arg(0.01)
        .arg(capacity)
        .query(con)
        .unwrap();
    let _: i64 = redis::cmd("BF.ADD").arg(key).arg("x").query(con).unwrap();
    let dump = common::scandump(con, key.as_bytes());
    let _: i64 = redis::cmd("DEL").arg(key).query(con).unwrap();
    dump
}

#[test]
fn loadchunk_header_refused_for_memory_answers_bad_data() {
    let s = Server::start();
    let mut con = s.conn();
    let dump = dump_of(&mut con, "src", 100_000);
    config_set(&mut con, "bf.max-filter-bytes", "10000");
    let e = error_text(
        common::cmd("BF.LOADCHUNK dst")
            .arg(dump[0].0)
            .arg(&dump[0].1)
            .query(&mut con),
    );
    // As RedisBloom answers a header it cannot allocate.
    assert!(
        e.contains("received bad data") && !e.contains(NO_MEMORY),
        "{e}"
    );
    for (iter, data) in &dump[1..] {
        let e = error_text(
            common::cmd("BF.LOADCHUNK dst")
                .arg(iter)
                .arg(data)
                .query(&mut con),
        );
        assert!(e.contains("not found"), "{e}");
    }
    let exists: i64 = common::cmd("EXISTS dst").query(&mut con).unwrap();
    assert_eq!(exists, 0);
    // A corrupt header still says bad data.
    let mut bad = dump[0].1.clone();
    bad.pop();
    let e = error_text(common::cmd("BF.LOADCHUNK dst 1").arg(&bad).query(&mut con));
    assert!(e.contains("received bad data"), "{e}");
}

#[test]
fn loadchunk_of_a_large_dump_on_a_full_cache_succeeds() {
    // volatile-lru: only the fillers (which have a TTL) are evicted, never the filter being
    // restored (under allkeys-* Redis may legitimately evict `dst` itself between chunks).
    let (_s, mut con, _) = full_cache("volatile-lru");
    config_set(&mut con, "maxmemory", "0");
    let dump = dump_of(&mut con, "src", 2_000_000);
    let max = used_memory(&mut con) - (1 << 20);
    config_set(&mut con, "maxmemory", &max.to_string());
    for (iter, data) in &dump {
        let r: String = common::cmd("BF.LOADCHUNK dst")
            .arg(iter)
            .arg(data)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("LOADCHUNK {iter}: {e}"));
        assert_eq!(r, "OK");
    }
    let r: i64 = common::cmd("BF.EXISTS dst x").query(&mut con).unwrap();
    assert_eq!(r, 1);
}

/// Peak resident memory of the server since the last reset, in bytes (`VmHWM`).
fn peak_rss(pid: u64) -> u64 {
    proc_vm_bytes(pid, "VmHWM")
}

fn reset_peak_rss(pid: u64) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
}

fn current_rss(pid: u64) -> u64 {
    proc_vm_bytes(pid, "VmRSS")
}

#[test]
fn implicit_creation_does_not_copy_a_big_item() {
    let s = Server::start();
    let mut con = s.conn();
    let pid = info_num(&mut con, "server", "process_id");
    let item = vec![b'i'; 64 << 20];
    // Warm up the allocator and the query buffer path with the same size once.
    let _: i64 = common::cmd("BF.ADD warm")
        .arg(&item)
        .query(&mut con)
        .unwrap();
    let _: () = common::cmd("MEMORY PURGE").query(&mut con).unwrap();
    let before = current_rss(pid);
    reset_peak_rss(pid);
    let r: i64 = common::cmd("BF.ADD new")
        .arg(&item)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, 1);
    let peak = peak_rss(pid).saturating_sub(before);
    // The query buffer holds the item once (64 MiB); a copy for replication made it 128 MiB.
    assert!(
        peak < 96 << 20,
        "peak RSS grew by {} MiB for a 64 MiB item",
        peak >> 20
    );
}

#[test]
fn a_million_item_madd_holds_no_per_item_copies() {
    let s = Server::start();
    let mut con = s.conn();
    let pid = info_num(&mut con, "server", "process_id");
    let items: Vec<String> = (0..1_000_000).map(|i| format!("item:{i}")).collect();
    let _: String = common::cmd("BF.RESERVE k 0.01 2000000")
        .query(&mut con)
        .unwrap();
    let _: () = common::cmd("MEMORY PURGE").query(&mut con).unwrap();
    let before = current_rss(pid);
    reset_peak_rss(pid);
    let r: Vec<i64> = common::cmd("BF.MADD k")
        .arg(&items)
        .query(&mut con)
        .unwrap();
    assert_eq!(r.len(), 1_000_000);
    assert!(r.iter().filter(|&&v| v == 1).count() > 990_000);
    let peak = peak_rss(pid).saturating_sub(before);
    eprintln!("BF.MADD of 1 000 000 items: peak RSS +{} MiB", peak >> 20);
    // Redis' own argument vector and query buffer, the reply and the filter's pages (about
    // 45 MiB with RedisBloom), the command wrapper's vector of arguments (16 MiB); no value, hash
    // or reply held per item for the whole batch (those made it 180 MiB).
    assert!(
        peak < 120 << 20,
        "peak RSS grew by {} MiB for 1 000 000 items",
        peak >> 20
    );
}

/// Bytes the server process has read through system calls so far (`rchar` of /proc/PID/io):
/// sockets and files alike.
fn bytes_read(pid: u64) -> u64 {
    proc_number(pid, "io", "rchar")
}

#[test]
fn creating_small_filters_reads_no_memory_statistics() {
    let s = Server::start();
    let mut con = s.conn();
    let pid = info_num(&mut con, "server", "process_id");
    let mut p = redis::pipe();
    for i in 0..1000 {
        p.cmd("BF.ADD").arg(format!("user:{i}")).arg("item");
        p.cmd("BF.RESERVE")
            .arg(format!("r:{i}"))
            .arg(0.01)
            .arg(1000);
    }
    let before = bytes_read(pid);
    let replies: Vec<Value> = p.query(&mut con).unwrap();
    let read = bytes_read(pid) - before;
    assert_eq!(replies.len(), 2000);
    assert!(replies.iter().all(|v| !matches!(v, Value::ServerError(_))));
    // The commands themselves are about 60 KB; one /proc/meminfo read per creation (1.5 KB
    // each) made it more than 3 MB.
    assert!(
        read < 500_000,
        "the server read {read} bytes for 2000 creations"
    );
}

/// The allocator rounds a big array up to its size class (1.5 GiB for the 1.38 GB of
/// `BF.RESERVE k 0.01 1000000000`) and `used_memory` counts the class: under `noeviction` with
/// 1.45 GB left, that filter would cross `maxmemory` and is refused; a 1.2 GB one (class
/// 1.25 GiB) fits.
#[test]
fn noeviction_counts_the_allocator_size_class() {
    let s = Server::start();
    let mut con = s.conn();
    config_set(&mut con, "maxmemory-policy", "noeviction");
    let used = used_memory(&mut con);
    config_set(&mut con, "maxmemory", &(used + 1_450_000_000).to_string());
    let e = error_text(
        redis::cmd("BF.RESERVE")
            .arg("big")
            .arg(0.01)
            .arg(1_000_000_000)
            .query(&mut con),
    );
    assert!(e.contains("Insufficient memory to create filter"), "{e}");
    let r: String = redis::cmd("BF.RESERVE")
        .arg("fits")
        .arg(0.01)
        .arg(900_000_000)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    assert!(used_memory(&mut con) <= used + 1_450_000_000);
}

/// Under `ulimit -v` (RLIMIT_AS) a primary refuses what its address space cannot take, with the
/// usual errors, instead of meeting the allocator's out-of-memory abort (Redis 7.0 has no
/// TryCalloc); what fits is still created, and a refused growth refuses the rest of the batch
/// at once.
#[test]
fn address_space_limit_refuses_cleanly() {
    let server = Server::start();
    let mut con = server.conn();
    let mut t = common::Steps::on(server.conn());
    t.ok("BF.RESERVE g 0.01 100000 EXPANSION 2000");
    common::limit_address_space(&mut con, 128 << 20);
    // About 240 MB and 120 MB of bit array against 128 MiB of address space.
    t.steps(
        r#"
        BF.RESERVE big 0.01 200000000   -> (error) ERR Insufficient memory to create filter
        BF.INSERT big2 CAPACITY 100000000 ITEMS a -> (error) ERR Insufficient memory to create filter
        EXISTS big big2                 -> 0
        BF.RESERVE small 0.01 100000    -> OK
        BF.ADD small x                  -> 1
        PING                            -> PONG
        "#,
    );
    drop(t);
    // g's next layer holds 200 000 000 items (about 240 MB): every new item past its capacity
    // is refused, and the command ends quickly (no memory read per item).
    let items: Vec<String> = (0..120_000).map(|i| format!("i{i}")).collect();
    let mut args: Vec<&[u8]> = vec![b"BF.MADD", b"g"];
    args.extend(items.iter().map(|i| i.as_bytes()));
    let reply = String::from_utf8(common::raw_command(server.port, false, &args)).unwrap();
    let refused = reply
        .matches("-ERR problem inserting into filter\r\n")
        .count();
    assert!(refused > 10_000, "{refused} refused");
    let layers: Vec<i64> = common::cmd("BF.INFO g FILTERS").query(&mut con).unwrap();
    assert_eq!(layers, vec![1]);
    assert!(server_alive(&mut con));
}

fn server_alive(con: &mut Connection) -> bool {
    common::cmd("PING").query::<String>(con).is_ok()
}
