//! Freeing, eviction and COPY of big filters, Bloom and cuckoo: an eviction counts what the
//! filter frees (so Redis evicts the filter alone, not unrelated keys after it), `used_memory`
//! drops inside the delete while the module's background thread gives the pages back
//! (`bf_free_pending_bytes` goes to 0) — a window filter's dropped generations and a cuckoo
//! filter's many grown sub-filters too — and `COPY` of a sparse filter copies only its written
//! pages. A Ribbon filter, staging or built, is dropped on the module's dropping thread:
//! `bf_free_pending_bytes` counts it until then, and `used_memory` has dropped by its size once
//! that is 0, whatever deleted it.
//!
//! Memory figures and key counts only: stall times are measured by `bench/stall.py`.

mod common;

use common::{
    batched, cf_info, cmd, config_set, info_num, server_rss as rss, settled_rss,
    sparse_big_filters, wait_free_pending_zero as wait_pending_zero, wait_rss_at_most, Server,
};
use redis::{Connection, Value};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// `used_memory` from the text of an `INFO memory` reply (taken in the same pipeline as the
/// delete it follows).
fn used_memory_in(info: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no used_memory in {info}"))
}

/// `used_memory` right before `write` and right after it: the write runs in a transaction
/// with an `INFO memory` queued behind it, so nothing else runs in between.
fn used_memory_across(con: &mut Connection, write: redis::Cmd) -> (u64, u64) {
    let used0 = info_num(con, "memory", "used_memory");
    let (info,): (String,) = redis::pipe()
        .atomic()
        .add_command(write)
        .ignore()
        .cmd("INFO")
        .arg("memory")
        .query(con)
        .unwrap();
    (used0, used_memory_in(&info))
}

fn select(con: &mut Connection, db: u32) {
    let _: () = redis::cmd("SELECT").arg(db).query(con).unwrap();
}

/// Capacity of a `BF.RESERVE key 0.001 capacity` of about `bytes` bytes.
fn capacity_for(con: &mut Connection, bytes: u64) -> u64 {
    let _: () = cmd("BF.RESERVE probe 0.001 1000000").query(con).unwrap();
    let v: Vec<Value> = cmd("BF.INFO probe SIZE").query(con).unwrap();
    let Value::Int(size) = v[0] else {
        panic!("BF.INFO SIZE: {v:?}")
    };
    let _: i64 = cmd("DEL probe").query(con).unwrap();
    1_000_000 * bytes / size as u64
}

/// Whether a shape of [`create_shape`] is a cuckoo filter (`CF.*`) rather than a Bloom one.
fn is_cuckoo(shape: &str) -> bool {
    shape.starts_with("cuckoo")
}

/// Adds `items` to the filter `key` of `shape` (`BF.MADD`, or `CF.INSERT key NOCREATE ITEMS`).
fn madd(con: &mut Connection, shape: &str, key: &str, items: &[String]) {
    let added = if is_cuckoo(shape) {
        batched(con, "CF.INSERT", (key, "NOCREATE", "ITEMS"), items, 10_000)
    } else {
        batched(con, "BF.MADD", key, items, 10_000)
    };
    assert!(added.iter().all(|&a| a >= 0), "{shape}: an add refused");
}

fn mexists(con: &mut Connection, shape: &str, key: &str, items: &[String]) -> Vec<bool> {
    let command = if is_cuckoo(shape) {
        "CF.MEXISTS"
    } else {
        "BF.MEXISTS"
    };
    let v = batched(con, command, key, items, 10_000);
    v.into_iter().map(|x| x == 1).collect()
}

/// `bf_bytes` and `bf_cf_bytes`: the table bytes of every Bloom and cuckoo filter there is.
fn filter_bytes(con: &mut Connection) -> [u64; 2] {
    [
        info_num(con, "bf", "bf_bytes"),
        info_num(con, "bf", "bf_cf_bytes"),
    ]
}

/// Creates a big filter (a 256 MiB layer, a chain of 16 × 4 MiB layers, a window filter with
/// one generation of 64 MiB, a cuckoo filter of one 256 MiB table, or one of 17 grown
/// sub-filters of 2 KiB to 128 MiB) for the table-driven tests; returns its size (`BF.INFO
/// SIZE`, `CF.INFO`'s `Size`).
fn create_shape(con: &mut Connection, shape: &str, key: &str) -> u64 {
    match shape {
        "cuckoo table" => {
            // 2^27 buckets of 2 slots.
            let _: () = cmd("CF.RESERVE")
                .arg(key)
                .arg(1u64 << 28)
                .query(con)
                .unwrap();
            return cf_info(con, key, "Size") as u64;
        }
        "cuckoo sub-filters" => {
            // One-slot buckets: an item's two buckets take two copies of it per sub-filter, so
            // every second copy of the same item grows a sub-filter twice the last one. One
            // command for all 34 copies, so that the filter is not used more often than the
            // keys the LFU policies compare it with.
            let reserve = format!("CF.RESERVE {key} 2048 BUCKETSIZE 1 EXPANSION 2");
            let _: () = cmd(reserve.as_str()).query(con).unwrap();
            let added: Vec<i64> = cmd(format!("CF.INSERT {key} NOCREATE ITEMS"))
                .arg(vec!["same"; 34])
                .query(con)
                .unwrap();
            assert_eq!(added, vec![1; 34]);
            assert_eq!(cf_info(con, key, "Number of filters"), 17);
            return cf_info(con, key, "Size") as u64;
        }
        "one layer" => {
            let cap = capacity_for(con, 256 * MIB);
            let _: () = cmd("BF.RESERVE")
                .arg(key)
                .arg(0.001)
                .arg(cap)
                .query(con)
                .unwrap();
        }
        "16 layers" => {
            // A header announcing 16 copies of one 4 MiB layer (BF.LOADCHUNK accepts equal
            // layers), then a chunk of set bits into every layer.
            let cap = capacity_for(con, 4 * MIB);
            let _: () = cmd("BF.RESERVE tmpl 0.001").arg(cap).query(con).unwrap();
            let v: Vec<Value> = cmd("BF.SCANDUMP tmpl 0").query(con).unwrap();
            let Value::BulkString(h) = &v[1] else {
                panic!("{v:?}")
            };
            let _: i64 = cmd("DEL tmpl").query(con).unwrap();
            let layer = &h[20..73];
            let bytes = u64::from_le_bytes(layer[..8].try_into().unwrap());
            let mut header = Vec::new();
            header.extend_from_slice(&0u64.to_le_bytes());
            header.extend_from_slice(&16u32.to_le_bytes());
            header.extend_from_slice(&h[12..20]);
            for _ in 0..16 {
                header.extend_from_slice(layer);
            }
            let _: () = cmd("BF.LOADCHUNK")
                .arg(key)
                .arg(1)
                .arg(header)
                .query(con)
                .unwrap();
            let chunk = vec![0x11u8; MIB as usize];
            for j in 0..16 {
                let _: () = cmd("BF.LOADCHUNK")
                    .arg(key)
                    .arg(1 + j * bytes + MIB)
                    .arg(chunk.as_slice())
                    .query(con)
                    .unwrap();
            }
        }
        "window" => {
            // Capacity per generation (a quarter of the window's) of about 64 MiB.
            let cap = capacity_for(con, 64 * MIB) * 4;
            let _: () = cmd("BF.RESERVE")
                .arg(key)
                .arg(0.001)
                .arg(cap)
                .arg("WINDOW")
                .arg(3_600_000)
                .query(con)
                .unwrap();
            // The first add creates the current generation's array.
            let _: i64 = cmd("BF.ADD").arg(key).arg("first").query(con).unwrap();
        }
        other => panic!("unknown shape {other}"),
    }
    let v: Vec<Value> = cmd("BF.INFO").arg(key).arg("SIZE").query(con).unwrap();
    match v[0] {
        Value::Int(n) => n as u64,
        _ => panic!("BF.INFO SIZE: {v:?}"),
    }
}

#[test]
fn eviction_counts_what_a_filter_frees() {
    // (policy, the filter's TTL, the strings' TTL): the filter is the best candidate of every
    // policy (shortest TTL, longest idle, least used: with `lfu-log-factor 0` every access
    // counts, and each string is read ten times, more than any shape's creation uses its
    // filter) and alone in db 1, which every pass of the eviction pool samples; the strings
    // are in db 0.
    let cases = [
        "volatile-ttl",
        "volatile-lru",
        "volatile-lfu",
        "allkeys-lru",
        "allkeys-lfu",
    ];
    const STRINGS: usize = 2000;
    for (shape, policy) in ["one layer", "cuckoo table", "cuckoo sub-filters"]
        .into_iter()
        .flat_map(|shape| cases.map(|policy| (shape, policy)))
    {
        for lazy in ["no", "yes"] {
            let s = Server::start_with(
                &[],
                &[
                    ("maxmemory-policy", policy),
                    ("lazyfree-lazy-eviction", lazy),
                    ("lfu-log-factor", "0"),
                ],
            );
            let mut con = s.conn();
            select(&mut con, 1);
            let size = create_shape(&mut con, shape, "filter");
            let _: i64 = cmd("EXPIRE filter 1000").query(&mut con).unwrap();
            if policy.ends_with("lru") {
                // Redis' LRU clock has a resolution of one second.
                std::thread::sleep(Duration::from_millis(2500));
            }
            select(&mut con, 0);
            let value = vec![b'v'; 5000];
            let mut pipe = redis::pipe();
            for i in 0..STRINGS {
                pipe.cmd("SET")
                    .arg(format!("s{i}"))
                    .arg(value.as_slice())
                    .arg("EX")
                    .arg(100_000)
                    .ignore();
                for _ in 0..10 {
                    pipe.cmd("GET").arg(format!("s{i}")).ignore();
                }
            }
            let _: () = pipe.query(&mut con).unwrap();
            let used = info_num(&mut con, "memory", "used_memory");
            config_set(&mut con, "maxmemory", &(used + MIB).to_string());
            // 3 MiB: the server goes ~2 MiB over maxmemory; evicting the filter frees far more.
            let big = vec![b'b'; 3 * MIB as usize];
            let r: redis::RedisResult<()> = cmd("SET big").arg(big).query(&mut con);
            let evicted = info_num(&mut con, "stats", "evicted_keys");
            let strings: u64 = cmd("DBSIZE").query(&mut con).unwrap();
            select(&mut con, 1);
            let filter: i64 = cmd("EXISTS filter").query(&mut con).unwrap();
            println!(
                "{shape}, {policy}, lazyfree-lazy-eviction {lazy}: {size} B filter, SET {r:?}, \
                 {evicted} keys evicted, {strings} keys in db 0"
            );
            let case = format!("{shape}/{policy}/{lazy}");
            assert!(r.is_ok(), "{case}: SET refused: {r:?}");
            assert_eq!(filter, 0, "{case}: the filter was evicted");
            assert_eq!(evicted, 1, "{case}: keys evicted");
            assert_eq!(strings, STRINGS as u64 + 1, "{case}: keys left in db 0");
            wait_pending_zero(&mut con);
            assert_eq!(filter_bytes(&mut con), [0, 0], "{case}: tables left");
        }
    }
}

/// Every way a filter at `k` goes, by name.
const DELETES: [(&str, &[&str]); 5] = [
    ("DEL", &["DEL", "k"]),
    ("UNLINK", &["UNLINK", "k"]),
    ("overwrite", &["SET", "k", "v"]),
    // SYNC: Valkey 8+ flushes asynchronously by default (lazyfree-lazy-user-flush yes).
    ("FLUSHALL SYNC", &["FLUSHALL", "SYNC"]),
    ("FLUSHALL ASYNC", &["FLUSHALL", "ASYNC"]),
];

#[test]
fn used_memory_drops_at_the_delete_and_pages_are_given_back() {
    // Every way a filter goes ([`DELETES`]), for each shape; the delete runs in a MULTI with an
    // INFO right after it, so `used_memory` is read before anything else could run.
    let s = Server::start_with(&[], &[("lazyfree-lazy-server-del", "yes")]);
    let mut con = s.conn();
    let shapes = [
        "one layer",
        "16 layers",
        "window",
        "cuckoo table",
        "cuckoo sub-filters",
    ];
    for shape in shapes {
        for (name, delete) in DELETES {
            if name == "FLUSHALL ASYNC" {
                // Redis frees the whole keyspace on its lazyfree thread: used_memory drops when
                // that thread is done, checked below with the pending bytes.
                continue;
            }
            let size = create_shape(&mut con, shape, "k");
            if shape == "one layer" || shape == "cuckoo table" {
                // Touch pages so there is something for the background thread to give back.
                let items: Vec<String> = (0..100_000).map(|i| format!("i{i}")).collect();
                madd(&mut con, shape, "k", &items);
            }
            let rss0 = rss(&mut con);
            let (used0, used1) = used_memory_across(&mut con, cmd(delete));
            wait_pending_zero(&mut con);
            let rss1 = rss(&mut con);
            println!(
                "{shape}, {name}: {size} B; used_memory {used0} → {used1}; RSS {rss0} → {rss1}"
            );
            assert!(
                used0.saturating_sub(used1) >= size * 99 / 100,
                "{shape}, {name}: used_memory {used0} → {used1} inside the delete of {size} B"
            );
            assert_eq!(filter_bytes(&mut con), [0, 0], "{shape}, {name}");
            let _: () = cmd("FLUSHALL SYNC").query(&mut con).unwrap();
        }
    }
    // FLUSHALL ASYNC and a window filter's dropped generations: what is pending goes to 0.
    create_shape(&mut con, "one layer", "k");
    create_shape(&mut con, "cuckoo sub-filters", "c");
    let _: () = cmd("FLUSHALL ASYNC").query(&mut con).unwrap();
    wait_pending_zero(&mut con);
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_num(&mut con, "memory", "lazyfree_pending_objects") > 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    wait_pending_zero(&mut con);
    assert_eq!(filter_bytes(&mut con), [0, 0]);
}

#[test]
fn copy_of_a_sparse_filter_copies_only_written_pages() {
    for shape in ["one layer", "window", "cuckoo table"] {
        // A fresh server for each shape: pages that the allocator kept resident from an earlier
        // filter (Valkey's jemalloc does) would hide what the items touch.
        let s = Server::start_with(&[], &[("enable-debug-command", "yes")]);
        let mut con = s.conn();
        let size = create_shape(&mut con, shape, "src");
        // A few items scattered over the whole array.
        let items: Vec<String> = (0..200).map(|i| format!("{shape}-item-{i}")).collect();
        let rss0 = rss(&mut con);
        madd(&mut con, shape, "src", &items);
        let rss1 = rss(&mut con);
        let copied: i64 = cmd("COPY src dst").query(&mut con).unwrap();
        let rss2 = rss(&mut con);
        assert_eq!(copied, 1);
        let (added, copy) = (rss1.saturating_sub(rss0), rss2.saturating_sub(rss1));
        println!(
            "{shape}: {size} B filter; RSS +{added} B for 200 items, then +{copy} B for the COPY"
        );
        // The copy's resident memory is about what the items touched in the source (each set
        // bit's page, plus the pages a jemalloc block's offset splits), not the filter's size.
        assert!(
            copy <= 2 * added + 4 * MIB && copy < size / 4,
            "{shape}: COPY grew RSS by {copy} B for a {size} B filter whose items took {added} B"
        );
        assert_eq!(
            mexists(&mut con, shape, "dst", &items),
            vec![true; items.len()]
        );
        let others: Vec<String> = (0..20_000).map(|i| format!("absent-{i}")).collect();
        assert_eq!(
            mexists(&mut con, shape, "dst", &others),
            mexists(&mut con, shape, "src", &others),
            "{shape}: the copy answers as the source"
        );
        let d = |con: &mut Connection, k: &str| -> Value {
            cmd("DEBUG DIGEST-VALUE").arg(k).query(con).unwrap()
        };
        assert_eq!(d(&mut con, "src"), d(&mut con, "dst"), "{shape}: digests");
        // The copy is independent: adding to it leaves the source alone.
        let prefix = if is_cuckoo(shape) { "CF" } else { "BF" };
        let _: i64 = cmd(format!("{prefix}.ADD dst only-in-the-copy"))
            .query(&mut con)
            .unwrap();
        let in_src: i64 = cmd(format!("{prefix}.EXISTS src only-in-the-copy"))
            .query(&mut con)
            .unwrap();
        assert_eq!(in_src, 0);
        let in_dst: i64 = cmd(format!("{prefix}.EXISTS dst only-in-the-copy"))
            .query(&mut con)
            .unwrap();
        assert_eq!(in_dst, 1);
    }
}

#[test]
fn a_window_filters_dropped_generations_leave_used_memory_in_the_write() {
    // Five generations of ~72 MiB (a 2 s window: quarters of 500 ms), then the window passes
    // with no write: the next BF.ADD drops all five, and used_memory has dropped by their size
    // when the INFO queued right behind it in the same transaction runs.
    let s = Server::start();
    let mut con = s.conn();
    let cap = capacity_for(&mut con, 64 * MIB) * 4;
    let _: () = cmd("BF.RESERVE w 0.001")
        .arg(cap)
        .arg("WINDOW")
        .arg(2000)
        .query(&mut con)
        .unwrap();
    let start = Instant::now();
    for g in 0..5u32 {
        let _: i64 = cmd("BF.ADD w")
            .arg(format!("g{g}"))
            .query(&mut con)
            .unwrap();
        let next = Duration::from_millis(500) * (g + 1);
        std::thread::sleep(next.saturating_sub(start.elapsed()));
    }
    let v: Vec<Value> = cmd("BF.INFO w SIZE").query(&mut con).unwrap();
    let Value::Int(size) = v[0] else {
        panic!("{v:?}")
    };
    let layers = info_num(&mut con, "bf", "bf_layers");
    std::thread::sleep(Duration::from_millis(2600));
    let (used0, used1) = used_memory_across(&mut con, cmd("BF.ADD w after"));
    let v: Vec<Value> = cmd("BF.INFO w SIZE").query(&mut con).unwrap();
    let Value::Int(size1) = v[0] else {
        panic!("{v:?}")
    };
    println!(
        "{layers} layers of {size} B dropped: used_memory {used0} → {used1}, size {size1} after"
    );
    assert!(layers >= 2, "{layers} generations before the idle time");
    // The new generation's array is allocated in the same write; it is one of the old size.
    let dropped = size as u64 - size1 as u64;
    assert!(dropped as i64 > 0);
    assert!(
        used0.saturating_sub(used1) + MIB >= dropped,
        "used_memory {used0} → {used1} in the write that dropped {dropped} B"
    );
    wait_pending_zero(&mut con);
}

#[test]
fn a_cuckoo_filters_dropped_sub_filters_leave_used_memory_in_the_write() {
    // A 4 KiB sub-filter of one-slot buckets, then a 128 MiB one: the third copy of an item
    // finds both its buckets full and grows the filter. Deleting that copy empties the big
    // sub-filter, which the compaction frees: inside CF.DEL when deletions pass 10 % of the
    // items, else inside CF.COMPACT (20 other items first keep CF.DEL below that).
    let s = Server::start();
    let mut con = s.conn();
    for (frees, others) in [("CF.DEL", 0), ("CF.COMPACT", 20)] {
        let _: () = cmd("CF.RESERVE k 4096 BUCKETSIZE 1 EXPANSION 32768")
            .query(&mut con)
            .unwrap();
        let items: Vec<String> = (0..others).map(|i| format!("other-{i}")).collect();
        madd(&mut con, "cuckoo", "k", &items);
        for _ in 0..3 {
            let _: i64 = cmd("CF.ADD k same").query(&mut con).unwrap();
        }
        assert_eq!(cf_info(&mut con, "k", "Number of filters"), 2);
        if frees == "CF.COMPACT" {
            let deleted: i64 = cmd("CF.DEL k same").query(&mut con).unwrap();
            assert_eq!(deleted, 1);
            let filters = cf_info(&mut con, "k", "Number of filters");
            assert_eq!(filters, 2, "CF.DEL alone left both sub-filters");
        }
        let write = if frees == "CF.DEL" {
            "CF.DEL k same"
        } else {
            "CF.COMPACT k"
        };
        let size = cf_info(&mut con, "k", "Size") as u64;
        let (used0, used1) = used_memory_across(&mut con, cmd(write));
        let size1 = cf_info(&mut con, "k", "Size") as u64;
        println!(
            "{write}: {size} B filter → {size1} B; used_memory {used0} → {used1} in the write"
        );
        assert_eq!(cf_info(&mut con, "k", "Number of filters"), 1, "{frees}");
        assert_eq!(size - size1, 128 * MIB + 16, "{frees}: the big sub-filter");
        assert!(
            used0.saturating_sub(used1) + MIB >= 128 * MIB,
            "{frees}: used_memory {used0} → {used1} in the write that freed 128 MiB"
        );
        let count: i64 = cmd("CF.COUNT k same").query(&mut con).unwrap();
        assert_eq!(count, 2, "{frees}: the other copies stay");
        let found = mexists(&mut con, "cuckoo", "k", &items);
        assert_eq!(found, vec![true; items.len()], "{frees}");
        wait_pending_zero(&mut con);
        assert_eq!(filter_bytes(&mut con), [0, 4096], "{frees}");
        let _: i64 = cmd("DEL k").query(&mut con).unwrap();
    }
}

/// Copies `key` from `src` to `dst` with a SCANDUMP walk (`prefix` `BF` or `CF`), one chunk
/// in flight at a time.
fn loadchunk_walk(src: &mut Connection, dst: &mut Connection, prefix: &str, key: &str) {
    let mut iter = 0i64;
    loop {
        let (next, data): (i64, Option<Vec<u8>>) = cmd(format!("{prefix}.SCANDUMP {key}"))
            .arg(iter)
            .query(src)
            .unwrap();
        let Some(data) = data.filter(|_| next != 0) else {
            return;
        };
        let _: () = cmd(format!("{prefix}.LOADCHUNK {key}"))
            .arg(next)
            .arg(data)
            .query(dst)
            .unwrap();
        iter = next;
    }
}

/// A copy of a big sparse filter made on another server (a replica's full sync, a
/// `LOADCHUNK` walk, `RESTORE` of a `DUMP`) or on the same one (`DEBUG RELOAD`) is resident as
/// far as the source's written pages are, not the filter's size: a 128 MiB Bloom layer and a
/// 64 MiB cuckoo table holding one item each cost the copy a few pages, as on the source.
#[test]
fn copies_of_sparse_filters_stay_sparse() {
    const SLACK: u64 = 8 * MIB;
    let keys = [("BF", "bloom"), ("CF", "cuckoo")];
    let mut fails = Vec::new();
    for way in ["full sync", "LOADCHUNK walk", "RESTORE", "DEBUG RELOAD"] {
        let src = Server::start();
        let mut sc = src.conn();
        let rss0 = settled_rss(&mut sc);
        let size = sparse_big_filters(&mut sc, "bloom", "cuckoo");
        let keys_rss = settled_rss(&mut sc).saturating_sub(rss0);
        let digest = |con: &mut Connection, k: &str| -> Value {
            cmd("DEBUG DIGEST-VALUE").arg(k).query(con).unwrap()
        };
        let digests: Vec<Value> = keys.iter().map(|(_, k)| digest(&mut sc, k)).collect();
        let other = (way != "DEBUG RELOAD").then(Server::start);
        let mut dc = other.as_ref().map_or_else(|| src.conn(), |s| s.conn());
        let before = settled_rss(&mut dc);
        match way {
            "full sync" => {
                common::attach_replica(other.as_ref().unwrap(), &src);
                let deadline = Instant::now() + Duration::from_secs(60);
                while cmd("DBSIZE").query::<i64>(&mut dc).unwrap() < 2 {
                    assert!(
                        Instant::now() < deadline,
                        "the replica never loaded the keys"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            "LOADCHUNK walk" => {
                for (prefix, key) in keys {
                    loadchunk_walk(&mut sc, &mut dc, prefix, key);
                }
            }
            "RESTORE" => {
                for (_, key) in keys {
                    let payload: Vec<u8> = cmd("DUMP").arg(key).query(&mut sc).unwrap();
                    let _: () = cmd("RESTORE")
                        .arg(key)
                        .arg(0)
                        .arg(payload)
                        .query(&mut dc)
                        .unwrap();
                }
            }
            _ => {
                let _: () = cmd("DEBUG RELOAD").query(&mut dc).unwrap();
            }
        }
        for (i, (prefix, key)) in keys.iter().enumerate() {
            let found: i64 = cmd(format!("{prefix}.EXISTS {key} {}", common::ONLY_ITEM))
                .query(&mut dc)
                .unwrap();
            assert_eq!(found, 1, "{way}: {key}");
            assert_eq!(digest(&mut dc, key), digests[i], "{way}: {key}'s digest");
        }
        // The keys were already in `before` when they were reloaded in place.
        let allowed = if other.is_some() { keys_rss } else { 0 } + SLACK;
        let after = wait_rss_at_most(&mut dc, before + allowed);
        let line = format!(
            "{way}: {size} B of filters, {keys_rss} B resident on the source; the copy's server \
             RSS {before} → {} B (at most {} B expected)",
            after.unwrap_or_else(|e| e),
            before + allowed
        );
        println!("{line}");
        if after.is_err() {
            fails.push(line);
        }
    }
    assert!(
        fails.is_empty(),
        "copies over their expected RSS:\n{}",
        fails.join("\n")
    );
}

/// Items of the Ribbon filters of [`ribbon_values_are_freed_off_the_main_thread`]: staged, 16
/// MB; built at 0.0001, about 1.8 MB. Both past the 1 MiB from which the module drops a Ribbon
/// value on its dropping thread.
const RF_ITEMS: u64 = 1_000_000;

#[test]
fn ribbon_values_are_freed_off_the_main_thread() {
    let s = Server::start_with(&[], &[("lazyfree-lazy-server-del", "yes")]);
    let mut con = s.conn();
    for built in [false, true] {
        select(&mut con, 1);
        let items: Vec<String> = (0..RF_ITEMS).map(|i| format!("i{i}")).collect();
        for batch in items.chunks(50_000) {
            let _: Vec<i64> = cmd("RF.MADD kept").arg(batch).query(&mut con).unwrap();
        }
        if built {
            let _: () = cmd("RF.BUILD kept ERROR 0.0001").query(&mut con).unwrap();
        }
        let v: Vec<u64> = cmd("RF.INFO kept SIZE").query(&mut con).unwrap();
        let size = v[0];
        let state = if built { "built" } else { "staging" };
        // Each of [`DELETES`] of a copy (in db 0) of the value kept in db 1: FLUSHDB for
        // FLUSHALL.
        for (_, delete) in DELETES {
            let delete: Vec<&str> = delete
                .iter()
                .map(|&a| if a == "FLUSHALL" { "FLUSHDB" } else { a })
                .collect();
            let name = delete.join(" ");
            select(&mut con, 1);
            let copied: i64 = cmd("COPY kept k DB 0").query(&mut con).unwrap();
            assert_eq!(copied, 1);
            select(&mut con, 0);
            // Nothing else pending (the staged set a build replaced).
            wait_pending_zero(&mut con);
            let (used0, used1) = used_memory_across(&mut con, cmd(delete.as_slice()));
            let deadline = Instant::now() + Duration::from_secs(30);
            while info_num(&mut con, "memory", "lazyfree_pending_objects") > 0 {
                assert!(Instant::now() < deadline);
                std::thread::sleep(Duration::from_millis(10));
            }
            wait_pending_zero(&mut con);
            let used2 = info_num(&mut con, "memory", "used_memory");
            println!(
                "Ribbon {state}, {name}: {size} B; used_memory {used0} → {used1} at the delete → \
                 {used2} once bf_free_pending_bytes is 0"
            );
            assert!(
                used0.saturating_sub(used2) >= size * 99 / 100,
                "{state}, {name}: used_memory {used0} → {used2} after the free of {size} B"
            );
            // What INFO bf counts is the value kept in db 1 alone.
            let rf: Vec<u64> = ["bf_rf_filters", "bf_rf_items"]
                .iter()
                .map(|f| info_num(&mut con, "bf", f))
                .collect();
            assert_eq!(rf, [1, RF_ITEMS], "{state}, {name}");
            // The overwrite leaves a string.
            let _: i64 = cmd("DEL k").query(&mut con).unwrap();
        }
        let _: () = cmd("FLUSHALL SYNC").query(&mut con).unwrap();
        wait_pending_zero(&mut con);
        assert_eq!(info_num(&mut con, "bf", "bf_rf_bytes"), 0, "{state}");
    }
}
