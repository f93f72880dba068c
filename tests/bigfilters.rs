//! Big filters: bit arrays come from calloc untouched (`used_memory` counts them at once, the
//! resident set grows only as bits are set) on every creation path, deletions leave `INFO bf`
//! and `used_memory` right once the background thread gave the pages back, replicas and AOF replays of
//! all of it end identical, and active defrag moves small filters without changing them.
//!
//! Memory figures only (resident set, `used_memory`): stall times are measured by
//! `bench/stall.py`, never asserted here.

mod common;

use common::{attach_replica, batched, info_num, proc_vm_bytes, scandump, Server};
use redis::{Connection, Value};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// The server process' resident set (VmRSS), in bytes.
fn rss(con: &mut Connection) -> u64 {
    let pid = info_num(con, "server", "process_id");
    proc_vm_bytes(pid, "VmRSS")
}

fn bf_info(con: &mut Connection, key: &str, field: &str) -> u64 {
    let v: Vec<Value> = redis::cmd("BF.INFO")
        .arg(key)
        .arg(field)
        .query(con)
        .unwrap();
    match &v[0] {
        Value::Int(n) => *n as u64,
        other => panic!("BF.INFO {field}: {other:?}"),
    }
}

fn madd(con: &mut Connection, key: &str, prefix: &str, range: std::ops::Range<u64>) {
    let items: Vec<String> = range.map(|i| format!("{prefix}{i}")).collect();
    batched(con, "BF.MADD", key, &items, 20_000);
}

/// Waits until the server and the module have nothing left to free in the background.
fn wait_frees_done(con: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let lazy = info_num(con, "memory", "lazyfree_pending_objects");
        let ours = info_num(con, "bf", "bf_free_pending_bytes");
        if lazy == 0 && ours == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "background frees never finished ({lazy} objects, {ours} bytes pending)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `used_memory` measured through an idle connection once the background frees are done.
fn settled_used_memory(con: &mut Connection) -> u64 {
    wait_frees_done(con);
    std::thread::sleep(Duration::from_millis(100));
    info_num(con, "memory", "used_memory")
}

fn digest(con: &mut Connection, key: &str) -> String {
    common::cmd("DEBUG DIGEST-VALUE")
        .arg(key)
        .query::<Vec<String>>(con)
        .unwrap()
        .remove(0)
}

#[test]
fn new_bit_arrays_count_in_used_memory_but_stay_untouched() {
    let s = Server::start();
    let mut con = s.conn();

    // BF.RESERVE: ~857 MiB of bit array.
    let (rss0, used0) = (rss(&mut con), info_num(&mut con, "memory", "used_memory"));
    let _: () = common::cmd("BF.RESERVE big 0.001")
        .arg(500_000_000u64)
        .query(&mut con)
        .unwrap();
    let bytes = info_num(&mut con, "bf", "bf_bytes");
    assert!(bytes > 800 * MIB, "bit array of {bytes} bytes");
    let (rss1, used1) = (rss(&mut con), info_num(&mut con, "memory", "used_memory"));
    println!(
        "BF.RESERVE of {} MiB: used_memory +{} MiB, RSS +{} KiB",
        bytes / MIB,
        (used1 - used0) / MIB,
        (rss1.saturating_sub(rss0)) / 1024
    );
    assert!(used1 - used0 >= bytes, "used_memory counts the whole array");
    assert!(
        rss1.saturating_sub(rss0) <= 16 * MIB,
        "RSS grew by {}",
        rss1 - rss0
    );

    // Setting bits touches pages: 2000 items × 10 hashes land on ~20 000 distinct pages.
    madd(&mut con, "big", "item", 0..2000);
    let rss2 = rss(&mut con);
    println!("2000 items set: RSS +{} MiB", (rss2 - rss1) / MIB);
    assert!(rss2 - rss1 >= 40 * MIB, "RSS did not grow as bits were set");

    // Growth into a big new layer: first layer 1000 items, second 1000 × 100 000 items.
    let _: () = common::cmd("BF.RESERVE grow 0.01 1000 EXPANSION 100000")
        .query(&mut con)
        .unwrap();
    let capacity = bf_info(&mut con, "grow", "CAPACITY");
    let mut next = 0;
    while bf_info(&mut con, "grow", "ITEMS") < capacity {
        let left = capacity - bf_info(&mut con, "grow", "ITEMS");
        madd(&mut con, "grow", "g", next..next + left);
        next += left;
    }
    assert_eq!(bf_info(&mut con, "grow", "FILTERS"), 1);
    let (rss3, used3, bytes3) = (
        rss(&mut con),
        info_num(&mut con, "memory", "used_memory"),
        info_num(&mut con, "bf", "bf_bytes"),
    );
    let _: Vec<i64> = common::cmd("BF.MADD grow new-1 new-2")
        .query(&mut con)
        .unwrap();
    assert_eq!(bf_info(&mut con, "grow", "FILTERS"), 2);
    let layer = info_num(&mut con, "bf", "bf_bytes") - bytes3;
    let (rss4, used4) = (rss(&mut con), info_num(&mut con, "memory", "used_memory"));
    println!(
        "growth into a {} MiB layer: used_memory +{} MiB, RSS +{} KiB",
        layer / MIB,
        (used4 - used3) / MIB,
        rss4.saturating_sub(rss3) / 1024
    );
    assert!(layer > 100 * MIB);
    assert!(used4 - used3 >= layer);
    assert!(rss4.saturating_sub(rss3) <= 16 * MIB);

    // A LOADCHUNK header creates the whole chain; the chunks fill it later.
    let chunks = scandump(&mut con, b"big");
    let (iter, header) = &chunks[0];
    let (rss5, used5) = (rss(&mut con), info_num(&mut con, "memory", "used_memory"));
    let _: () = common::cmd("BF.LOADCHUNK copy")
        .arg(*iter)
        .arg(header.as_slice())
        .query(&mut con)
        .unwrap();
    let (rss6, used6) = (rss(&mut con), info_num(&mut con, "memory", "used_memory"));
    println!(
        "LOADCHUNK header: used_memory +{} MiB, RSS +{} KiB",
        (used6 - used5) / MIB,
        rss6.saturating_sub(rss5) / 1024
    );
    assert!(used6 - used5 >= bytes);
    assert!(rss6.saturating_sub(rss5) <= 16 * MIB);
    // The rest of the chunks make it the same filter.
    for (iter, data) in &chunks[1..] {
        let _: () = common::cmd("BF.LOADCHUNK copy")
            .arg(*iter)
            .arg(data.as_slice())
            .query(&mut con)
            .unwrap();
    }
    assert_eq!(digest(&mut con, "copy"), digest(&mut con, "big"));

    // The memory limit still refuses what it refused (noeviction: the array must fit).
    let used = info_num(&mut con, "memory", "used_memory");
    let _: () = common::cmd("CONFIG SET maxmemory-policy noeviction")
        .query(&mut con)
        .unwrap();
    let _: () = common::cmd("CONFIG SET maxmemory")
        .arg(used + 100 * MIB)
        .query(&mut con)
        .unwrap();
    let err = common::cmd("BF.RESERVE refused 0.001")
        .arg(500_000_000u64)
        .query::<()>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Insufficient memory to create filter"),
        "{err}"
    );
}

/// Keys of several sizes: 6 of ~86 MiB and 20 of ~1.7 MiB (their pages moved out at the
/// delete and given back by the module's freeing thread), 200 small (freed at once).
fn populate(con: &mut Connection, tag: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for (n, capacity) in [(6, 50_000_000u64), (20, 1_000_000), (200, 1000)] {
        for i in 0..n {
            let key = format!("{tag}:{capacity}:{i}");
            let _: () = redis::cmd("BF.RESERVE")
                .arg(&key)
                .arg(0.001)
                .arg(capacity)
                .query(con)
                .unwrap();
            madd(con, &key, "x", 0..(capacity / 20).min(20_000));
            keys.push(key);
        }
    }
    keys
}

fn assert_bf_empty(con: &mut Connection) {
    for f in [
        "bf_filters",
        "bf_layers",
        "bf_items",
        "bf_bytes",
        "bf_free_pending_bytes",
    ] {
        assert_eq!(
            info_num(con, "bf", f),
            0,
            "{f} after every filter was freed"
        );
    }
}

#[test]
fn background_frees_leave_info_and_used_memory_right() {
    for lazy_user_del in ["no", "yes"] {
        let s = Server::start_with(&[], &[("lazyfree-lazy-user-del", lazy_user_del)]);
        let mut meter = s.conn();
        // Warm-up: the server's own structures reach their steady size.
        {
            let mut con = s.conn();
            let keys = populate(&mut con, "warm");
            let _: i64 = redis::cmd("DEL").arg(&keys).query(&mut con).unwrap();
        }
        let base = settled_used_memory(&mut meter);
        assert_bf_empty(&mut meter);
        let lazy0 = info_num(&mut meter, "memory", "lazyfreed_objects");

        // Eight clients delete interleaved keys at once, half with DEL, half with UNLINK.
        let mut con = s.conn();
        let keys = populate(&mut con, "k");
        drop(con);
        assert_eq!(info_num(&mut meter, "bf", "bf_filters"), keys.len() as u64);
        let port = s.port;
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let mine: Vec<String> = keys.iter().skip(t).step_by(8).cloned().collect();
                std::thread::spawn(move || {
                    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                    let mut c = client.get_connection().unwrap();
                    for k in mine {
                        let cmd = if t % 2 == 0 { "UNLINK" } else { "DEL" };
                        let n: i64 = redis::cmd(cmd).arg(&k).query(&mut c).unwrap();
                        assert_eq!(n, 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let after = settled_used_memory(&mut meter);
        assert_bf_empty(&mut meter);
        let lazy = info_num(&mut meter, "memory", "lazyfreed_objects") - lazy0;
        println!(
            "lazyfree-lazy-user-del {lazy_user_del}: used_memory {base} before, {after} after; \
             {lazy} values freed by Redis' lazyfree thread"
        );
        assert!(after.abs_diff(base) < 2 * MIB, "{base} → {after}");
        // No filter goes to Redis' lazyfree thread, not even by UNLINK or with
        // lazyfree-lazy-user-del: freeing one is cheap for any shape (its big arrays' pages
        // are moved out and given back by the module's own thread), so free_effort stays at
        // or below Redis' threshold and used_memory drops inside the delete.
        assert_eq!(lazy, 0, "values freed by the lazyfree thread");

        // FLUSHALL ASYNC frees everything in the background.
        let mut con = s.conn();
        populate(&mut con, "f");
        let _: () = common::cmd("FLUSHALL ASYNC").query(&mut con).unwrap();
        drop(con);
        let after = settled_used_memory(&mut meter);
        assert_bf_empty(&mut meter);
        assert!(
            after.abs_diff(base) < 2 * MIB,
            "{base} → {after} after FLUSHALL ASYNC"
        );
    }
}

fn wait_replica(primary: &mut Connection) {
    let n: i64 = common::cmd("WAIT 1 30000").query(primary).unwrap();
    assert_eq!(n, 1, "the replica acknowledged the writes");
}

#[test]
fn replica_and_aof_replay_match_the_primary() {
    let primary = Server::start_with(
        &[],
        &[
            ("appendonly", "yes"),
            ("appendfsync", "always"),
            ("repl-diskless-sync-delay", "0"),
        ],
    );
    let replica = Server::start_with(&[], &[("repl-diskless-sync-delay", "0")]);
    let mut p = primary.conn();
    let mut r = replica.conn();
    attach_replica(&replica, &primary);

    // Every operation of the stall benchmark, at 86 MiB instead of gigabytes.
    let _: () = common::cmd("BF.RESERVE big 0.001 50000000")
        .query(&mut p)
        .unwrap();
    madd(&mut p, "big", "b", 0..50_000);
    let _: () = common::cmd("BF.RESERVE grow 0.01 1000 EXPANSION 40000")
        .query(&mut p)
        .unwrap();
    madd(&mut p, "grow", "g", 0..3000);
    assert_eq!(bf_info(&mut p, "grow", "FILTERS"), 2);
    let chunks = scandump(&mut p, b"big");
    for (iter, data) in &chunks {
        let _: () = common::cmd("BF.LOADCHUNK copy")
            .arg(*iter)
            .arg(data.as_slice())
            .query(&mut p)
            .unwrap();
    }
    for k in ["d1", "d2", "d3"] {
        let _: () = redis::cmd("BF.RESERVE")
            .arg(k)
            .arg(0.001)
            .arg(50_000_000)
            .query(&mut p)
            .unwrap();
        madd(&mut p, k, k, 0..1000);
    }
    let _: i64 = common::cmd("DEL d1").query(&mut p).unwrap();
    let _: i64 = common::cmd("UNLINK d2").query(&mut p).unwrap();
    // Overwritten by another type.
    let _: () = common::cmd("SET d3 v").query(&mut p).unwrap();
    let _: () = common::cmd("SELECT 1").query(&mut p).unwrap();
    populate(&mut p, "db1");
    let _: () = common::cmd("FLUSHDB ASYNC").query(&mut p).unwrap();
    let _: () = common::cmd("SELECT 0").query(&mut p).unwrap();
    wait_replica(&mut p);

    let keys = ["big", "grow", "copy"];
    let expected: Vec<String> = keys.iter().map(|k| digest(&mut p, k)).collect();
    let dumps: Vec<_> = keys
        .iter()
        .map(|k| scandump(&mut p, k.as_bytes()))
        .collect();
    assert_eq!(
        expected[0], expected[2],
        "the LOADCHUNKed copy is the filter"
    );
    let check = |con: &mut Connection, who: &str| {
        let dbsize: i64 = redis::cmd("DBSIZE").query(con).unwrap();
        assert_eq!(dbsize, 4, "{who}: big, grow, copy and d3");
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(digest(con, k), expected[i], "{who}: {k}");
            assert!(
                scandump(con, k.as_bytes()) == dumps[i],
                "{who}: SCANDUMP of {k}"
            );
        }
        let _: () = common::cmd("SELECT 1").query(con).unwrap();
        let dbsize: i64 = redis::cmd("DBSIZE").query(con).unwrap();
        assert_eq!(dbsize, 0, "{who}: db 1 flushed");
        let _: () = common::cmd("SELECT 0").query(con).unwrap();
    };
    check(&mut r, "replica");
    drop(r);
    drop(replica);
    drop(p);
    let mut primary = primary;
    primary.restart(&[]);
    let mut p = primary.conn();
    check(&mut p, "AOF replay");
}

/// Active defrag needs Redis' own jemalloc: skipped (with a message) on a server that refuses
/// `activedefrag yes`, such as Debian's redis-server. Run it with `REDIS_SERVER` pointing at
/// a server built with its bundled jemalloc (`scripts/servers.sh` builds Redis 8 and Valkey
/// so); `BF_REQUIRE_DEFRAG=1` (set by `scripts/test.sh` for those) makes a refusal fail.
#[test]
fn active_defrag_moves_small_filters_without_changing_them() {
    let s = Server::start_with(
        &[],
        &[
            ("active-defrag-ignore-bytes", "1mb"),
            ("active-defrag-threshold-lower", "1"),
            ("active-defrag-cycle-min", "25"),
            ("active-defrag-cycle-max", "75"),
        ],
    );
    let mut con = s.conn();
    let keys: Vec<String> = (0..40_000).map(|i| format!("user:{i}")).collect();
    let mut pipe = redis::pipe();
    for (i, k) in keys.iter().enumerate() {
        pipe.cmd("BF.RESERVE")
            .arg(k)
            .arg(0.01)
            .arg(100 + i % 900)
            .ignore();
        pipe.cmd("BF.ADD").arg(k).arg(format!("first-{i}")).ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    // Three quarters deleted leave sparse pages behind.
    let deleted: Vec<&String> = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 4 != 0)
        .map(|(_, k)| k)
        .collect();
    for batch in deleted.chunks(1000) {
        let _: i64 = redis::cmd("DEL").arg(batch).query(&mut con).unwrap();
    }
    let kept: Vec<&String> = keys.iter().step_by(4).collect();
    let before: Vec<String> = kept.iter().map(|k| digest(&mut con, k)).collect();
    let enabled = common::cmd("CONFIG SET activedefrag yes").query::<()>(&mut con);
    if let Err(e) = enabled {
        assert!(
            std::env::var_os("BF_REQUIRE_DEFRAG").is_none(),
            "active defrag refused with BF_REQUIRE_DEFRAG set: {e}"
        );
        println!("active defrag not supported by this server ({e}), skipped");
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_num(&mut con, "bf", "bf_defrag_hits") < 1000 {
        assert!(
            Instant::now() < deadline,
            "active defrag moved no filter: INFO bf {:?}, server hits {}",
            info_num(&mut con, "bf", "bf_defrag_hits"),
            info_num(&mut con, "stats", "active_defrag_hits")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _: () = common::cmd("CONFIG SET activedefrag no")
        .query(&mut con)
        .unwrap();
    println!(
        "bf_defrag_hits {}, bf_defrag_misses {}",
        info_num(&mut con, "bf", "bf_defrag_hits"),
        info_num(&mut con, "bf", "bf_defrag_misses")
    );
    for (k, d) in kept.iter().zip(&before) {
        assert_eq!(&digest(&mut con, k), d, "{k} changed by defrag");
    }
    for (i, k) in keys.iter().enumerate().step_by(4) {
        let found: i64 = redis::cmd("BF.EXISTS")
            .arg(k)
            .arg(format!("first-{i}"))
            .query(&mut con)
            .unwrap();
        assert_eq!(found, 1, "{k} lost its item");
        let added: i64 = redis::cmd("BF.ADD")
            .arg(k)
            .arg("after")
            .query(&mut con)
            .unwrap();
        assert_eq!(added, 1);
    }
    assert_eq!(info_num(&mut con, "bf", "bf_filters"), kept.len() as u64);
}

/// Untouched arrays take no RAM, so `MemAvailable` stays high however many there are; each
/// counts whole in `used_memory`, and together they may not pass 15/16 of the machine's memory
/// (else setting their bits would end with the OOM killer). Three filters of 32% of the
/// machine each: two fit, the third is refused, and nothing was touched. (Needs half the machine
/// free, so that `MemAvailable` is not what refuses; says so loudly and checks nothing else.)
#[test]
fn untouched_arrays_still_count_against_the_machine() {
    let s = Server::start();
    let mut con = s.conn();
    let total = info_num(&mut con, "memory", "total_system_memory");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let available_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    if available_kib * 1024 < total / 2 {
        eprintln!("*** SKIP untouched_arrays_still_count_against_the_machine: less than half of the machine's memory is available; nothing was checked ***");
        return;
    }
    // Bytes per item at 0.01 are 9.585 bits / 8 (layer sizing); 32% of the machine each.
    let capacity = (total as f64 * 0.32 / (9.585_058 / 8.0)) as u64;
    let rss_before = rss(&mut con);
    for (key, ok) in [("m1", true), ("m2", true), ("m3", false)] {
        let r: redis::RedisResult<String> = redis::cmd("BF.RESERVE")
            .arg(key)
            .arg(0.01)
            .arg(capacity)
            .query(&mut con);
        match r {
            Ok(v) => assert!(ok && v == "OK", "{key}: {v} (capacity {capacity})"),
            Err(e) => assert!(
                !ok && e
                    .to_string()
                    .contains("Insufficient memory to create filter"),
                "{key}: {e}"
            ),
        }
    }
    assert!(info_num(&mut con, "memory", "used_memory") > total * 6 / 10);
    assert!(rss(&mut con) < rss_before + 64 * MIB);
    let _: i64 = redis::cmd("DEL")
        .arg("m1")
        .arg("m2")
        .query(&mut con)
        .unwrap();
}
