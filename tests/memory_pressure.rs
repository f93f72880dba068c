//! Memory pressure: a new filter, layer or sub-filter is a write like any other, for Bloom
//! (BF.*) and cuckoo (CF.*) filters alike (the tests loop over [`KINDS`]). Under an eviction
//! policy Redis evicts and the write succeeds unless it can never fit; under `noeviction`
//! Redis' OOM error refuses new filters once past `maxmemory`, and what would cross it is
//! refused; a LOADCHUNK header refused for memory answers as a bad header does
//! (RedisBloom's text for each kind); and batches (BF.MADD, CF.INSERT) and implicit creations
//! do not hold copies of their items (peak RSS, `VmHWM`).
//!
//! Needs `cargo build --release` first.

mod common;

use common::{config_set, info_num, proc_number, proc_vm_bytes, Server};
use redis::{Connection, ConnectionLike, Value};

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

/// The exact text of the error reply `r` must be (what follows the `-`).
fn error_text(r: redis::RedisResult<Value>) -> String {
    match r {
        Err(e) => match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_string(),
            _ => e.to_string(),
        },
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// A reply of 1 / true (RESP2 integer).
fn is_one(v: &Value) -> bool {
    matches!(v, Value::Int(1))
}

/// What the tests run for each filter kind, as command lines (`{k}` the key, `{n}` a
/// capacity).
struct Kind {
    name: &'static str,
    /// Adds one item to `{k}`, creating the filter when missing (answers 1).
    add: &'static str,
    /// Adds the items that follow to `{k}` (one reply per item, 1 when added).
    add_many: &'static str,
    /// Creates `{k}` for `{n}` items: about 1.2 bytes an item (Bloom, 1%), at least 1 byte
    /// (cuckoo: `next_pow2(n / 2)` buckets of 2).
    reserve: &'static str,
    /// Creates `{k}` with two items (answers `[1, 1]`).
    insert_new: &'static str,
    /// A filter of about 10 items whose next array is big: a 431 KB layer (Bloom, expansion
    /// 20 000), a 256 KiB sub-filter (cuckoo: 8 buckets of 1, then 262 144 with expansion
    /// 32 768).
    reserve_grow: &'static str,
    /// The command that tells `{k}`'s arrays ([`arrays`] reads its reply).
    arrays: &'static str,
    /// What an add answers when the growth it needs is refused for memory.
    growth_refused: &'static str,
    /// About 50 KB of array: 55 KB (Bloom), 48 KiB (cuckoo, 16 384 buckets of 3).
    reserve_mid: &'static str,
    /// What a LOADCHUNK header answers when its arrays are refused for memory (each kind as
    /// RedisBloom answers: it cannot tell that from a bad header), and a corrupt one.
    header_refused: &'static str,
    header_corrupt: &'static str,
}

const KINDS: [Kind; 2] = [
    Kind {
        name: "bloom",
        add: "BF.ADD {k}",
        add_many: "BF.MADD {k}",
        reserve: "BF.RESERVE {k} 0.01 {n}",
        insert_new: "BF.INSERT {k} CAPACITY 100000 ITEMS a b",
        reserve_grow: "BF.RESERVE {k} 0.001 10 EXPANSION 20000",
        arrays: "BF.INFO {k} FILTERS",
        growth_refused: "ERR problem inserting into filter",
        reserve_mid: "BF.RESERVE {k} 0.01 40000",
        header_refused: "ERR received bad data",
        header_corrupt: "ERR received bad data",
    },
    Kind {
        name: "cuckoo",
        add: "CF.ADD {k}",
        add_many: "CF.INSERT {k} ITEMS",
        reserve: "CF.RESERVE {k} {n}",
        insert_new: "CF.INSERT {k} CAPACITY 100000 ITEMS a b",
        reserve_grow: "CF.RESERVE {k} 8 BUCKETSIZE 1 EXPANSION 32768",
        arrays: "CF.DEBUG {k}",
        growth_refused: "ERR Insufficient memory",
        reserve_mid: "CF.RESERVE {k} 49152 BUCKETSIZE 3",
        header_refused: "Couldn't create filter!",
        header_corrupt: "Invalid header",
    },
];

impl Kind {
    /// `line` with its key (and capacity) filled in.
    fn line(&self, line: &str, key: &str, n: u64) -> redis::Cmd {
        common::cmd(line.replace("{k}", key).replace("{n}", &n.to_string()))
    }

    /// The kind's command `name` (`SCANDUMP` → `BF.SCANDUMP` / `CF.SCANDUMP`).
    fn cmd(&self, name: &str) -> String {
        format!("{}{name}", &self.add[..3])
    }

    /// The SCANDUMP walk of `key`: `(iterator, bytes)` from the header to the last chunk.
    fn walk(&self, con: &mut Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let at = out.last().map_or(0, |(n, _)| *n);
            let (next, data): (i64, Option<Vec<u8>>) = redis::cmd(&self.cmd("SCANDUMP"))
                .arg(key)
                .arg(at)
                .query(con)
                .unwrap();
            match data {
                Some(d) if next != 0 => out.push((next, d)),
                _ => return out,
            }
        }
    }
}

/// The number of arrays (layers, sub-filters) in the reply of a [`Kind::arrays`] command:
/// `[n]` (BF.INFO FILTERS) or `… filters:n …` (CF.DEBUG).
fn arrays(v: &Value) -> i64 {
    match v {
        Value::Array(a) if a.len() == 1 => match a[0] {
            Value::Int(n) => n,
            _ => panic!("{v:?}"),
        },
        Value::BulkString(b) => String::from_utf8_lossy(b)
            .split(' ')
            .find_map(|f| f.strip_prefix("filters:"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{v:?}")),
        _ => panic!("{v:?}"),
    }
}

/// Sends one command, keeping error replies (also inside arrays) as `Value::ServerError`.
fn raw(con: &mut Connection, cmd: &redis::Cmd) -> Value {
    match con.req_command(cmd) {
        Ok(v) => v,
        Err(e) if e.code().is_some() => {
            Value::ServerError(redis::ServerError::try_from(e).expect("server error"))
        }
        Err(e) => panic!("I/O error: {e}"),
    }
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
        // A fresh full server per kind: under volatile-lru only the strings with a TTL can go,
        // and one kind's filters would leave the next too few of them.
        for k in &KINDS {
            let (_s, mut con, max) = full_cache(policy);
            let what = format!("{policy}, {}", k.name);
            // 1000 new keys by an add, pipelined: every one is created (Redis evicts strings).
            let mut p = redis::pipe();
            for i in 0..1000 {
                p.add_command(k.line(k.add, &format!("{}:{i}", k.name), 0))
                    .arg("item");
            }
            let replies: Vec<Value> = p.query(&mut con).unwrap();
            let ok = replies.iter().filter(|v| is_one(v)).count();
            assert_eq!(ok, 1000, "{what}: new-key add refused: {:?}", replies[0]);
            // A 2.6 MB Bloom / 2 MiB cuckoo filter (large: the exact budget is read), and an
            // INSERT on a new key.
            let r: String = k
                .line(k.reserve, &format!("{}:big", k.name), 2_000_000)
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{what}: a 2 MB filter refused: {e}"));
            assert_eq!(r, "OK");
            let r: Vec<i64> = k
                .line(k.insert_new, &format!("{}:ins", k.name), 0)
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{what}: INSERT refused: {e}"));
            assert_eq!(r, vec![1, 1]);
            // Growth into a 431 KB layer / 256 KiB sub-filter (above the small-array threshold):
            // a filter of about 10 items takes 20. In one transaction, so that Redis evicts
            // before it and not in between (allkeys policies may evict the new filter itself).
            let key = format!("{}:grow", k.name);
            let items: Vec<String> = (0..20).map(|i| format!("g{i}")).collect();
            let (r, layers): (Vec<Value>, Value) = redis::pipe()
                .atomic()
                .add_command(k.line(k.reserve_grow, &key, 0))
                .ignore()
                .add_command(k.line(k.add_many, &key, 0))
                .arg(&items)
                .add_command(k.line(k.arrays, &key, 0))
                .query(&mut con)
                .unwrap_or_else(|e| {
                    let used = info_num(&mut con, "memory", "used_memory");
                    panic!("{what}: the growth transaction was refused (used_memory {used}, maxmemory {max}): {e}")
                });
            assert_eq!(r, vec![Value::Int(1); 20], "{what}: growth refused");
            assert_eq!(arrays(&layers), 2, "{what}");
            // What can never fit is still refused: an array larger than maxmemory itself.
            let e = error_text(
                k.line(k.reserve, &format!("{}:huge", k.name), max) // ≥ 1 byte an item
                    .query(&mut con),
            );
            assert!(e.contains(NO_MEMORY), "{what}: {e}");
            let evicted = info_num(&mut con, "stats", "evicted_keys");
            assert!(evicted > 0, "{what}: nothing evicted");
            assert!(
                used_memory(&mut con) < max + (4 << 20),
                "{what}: over limit"
            );
        }
    }
}

/// Under `noeviction`, once `used_memory` is past `maxmemory`, every command that makes a
/// filter gets Redis' own OOM error before it runs (they are flagged `deny-oom`) and creates
/// nothing; reads still answer.
#[test]
fn noeviction_past_maxmemory_refuses_new_filters_with_oom() {
    let (_s, mut con, _) = full_cache("noeviction");
    let mut t = common::Steps::on(_s.conn());
    t.steps(
        r#"
        BF.ADD b1 x                         -> (error) OOM command not allowed when used memory > 'maxmemory'.
        BF.RESERVE b2 0.01 100              -> (error) OOM command not allowed when used memory > 'maxmemory'.
        BF.INSERT b3 ITEMS x                -> (error) OOM command not allowed when used memory > 'maxmemory'.
        CF.ADD c1 x                         -> (error) OOM command not allowed when used memory > 'maxmemory'.
        CF.ADDNX c2 x                       -> (error) OOM command not allowed when used memory > 'maxmemory'.
        CF.RESERVE c3 100                   -> (error) OOM command not allowed when used memory > 'maxmemory'.
        CF.INSERT c4 ITEMS x                -> (error) OOM command not allowed when used memory > 'maxmemory'.
        CF.INSERTNX c5 CAPACITY 10 ITEMS x  -> (error) OOM command not allowed when used memory > 'maxmemory'.
        EXISTS b1 b2 b3 c1 c2 c3 c4 c5      -> 0
        CF.EXISTS c1 x                      -> 0
        BF.EXISTS b1 x                      -> 0
        "#,
    );
    drop(t);
    assert_eq!(info_num(&mut con, "stats", "evicted_keys"), 0);
}

#[test]
fn noeviction_refuses_what_would_cross_maxmemory() {
    for k in &KINDS {
        let s = Server::start();
        let mut con = s.conn();
        // A filter of about 10 items about to grow into a 431 KB layer / 256 KiB sub-filter.
        let _: String = k.line(k.reserve_grow, "grow", 0).query(&mut con).unwrap();
        config_set(&mut con, "maxmemory-policy", "noeviction");
        // Redis' first call of each command allocates its latency histogram (about 25 KB,
        // `latency-tracking`): the commands below and CONFIG SET take about 100 KB of the
        // room left besides the filters.
        let max = used_memory(&mut con) + 250_000;
        config_set(&mut con, "maxmemory", &max.to_string());

        // Small new filters still fit.
        let r: i64 = k.line(k.add, "small", 0).arg("a").query(&mut con).unwrap();
        assert_eq!(r, 1, "{}", k.name);
        // A 2.6 MB / 2 MiB filter would cross the limit.
        let e = error_text(k.line(k.reserve, "big", 2_000_000).query(&mut con));
        assert!(e.contains(NO_MEMORY), "{}: {e}", k.name);
        // The growth too: the items past the first array's room are refused, the filter keeps
        // one array, and a refused item is refused again.
        let items: Vec<String> = (0..30).map(|i| format!("g{i}")).collect();
        let r = raw(&mut con, k.line(k.add_many, "grow", 0).arg(&items));
        let Value::Array(r) = r else {
            panic!("{}: {r:?}", k.name)
        };
        let refused: Vec<&String> = items
            .iter()
            .zip(&r)
            .filter(|(_, v)| !is_one(v))
            .map(|(i, _)| i)
            .collect();
        assert!(refused.len() >= 20, "{}: {r:?}", k.name);
        let layers = raw(&mut con, &k.line(k.arrays, "grow", 0));
        assert_eq!(arrays(&layers), 1, "{}", k.name);
        let e = error_text(
            k.line(k.add, "grow", 0)
                .arg(refused.last().unwrap().as_str())
                .query(&mut con),
        );
        assert_eq!(e, k.growth_refused, "{}", k.name);
        // Near the limit small arrays are checked exactly: 55 KB / 48 KiB fits in the ~150 KB
        // left two or three times, not six.
        let results: Vec<Result<String, String>> = (0..6)
            .map(|i| {
                k.line(k.reserve_mid, &format!("mid{i}"), 0)
                    .query::<String>(&mut con)
                    .map_err(|e| e.to_string())
            })
            .collect();
        assert_eq!(results[0], Ok("OK".to_string()), "{}: {results:?}", k.name);
        assert!(
            results[5].as_ref().is_err_and(|e| e.contains(NO_MEMORY)),
            "{}: {results:?}",
            k.name
        );
        println!("{}: ~50 KB filters near the limit: {results:?}", k.name);
        assert!(
            used_memory(&mut con) <= max,
            "{}: crossed maxmemory",
            k.name
        );
        // Refusals are not evictions: nothing was evicted.
        assert_eq!(info_num(&mut con, "stats", "evicted_keys"), 0);
    }
}

/// The SCANDUMP of a filter of kind `k` made for `capacity` items, with one item: header,
/// then chunks.
fn dump_of(con: &mut Connection, k: &Kind, key: &str, capacity: u64) -> Vec<(i64, Vec<u8>)> {
    let _: String = k.line(k.reserve, key, capacity).query(con).unwrap();
    let _: i64 = k.line(k.add, key, 0).arg("x").query(con).unwrap();
    let dump = k.walk(con, key);
    let _: i64 = redis::cmd("DEL").arg(key).query(con).unwrap();
    dump
}

/// A LOADCHUNK header whose arrays the memory budget refuses (`bf.max-filter-bytes`, or
/// `maxmemory` under `noeviction`) answers what the kind's RedisBloom answers for a header it
/// cannot allocate — `ERR received bad data` (BF), `Couldn't create filter!` (CF), never
/// `Insufficient memory` — and creates nothing: the chunks then find no filter. A corrupt
/// header keeps its own error (`Invalid header` for CF).
#[test]
fn loadchunk_header_refused_for_memory_answers_bad_data() {
    for k in &KINDS {
        for limit in ["bf.max-filter-bytes", "maxmemory"] {
            let what = format!("{}, {limit}", k.name);
            let s = Server::start();
            let mut con = s.conn();
            // 117 KB of Bloom layer, 128 KiB of cuckoo table, against 10 000 bytes or about
            // 50 KB left under maxmemory.
            let dump = dump_of(&mut con, k, "src", 100_000);
            match limit {
                "maxmemory" => {
                    // Once, so that the server's first-call allocations (its latency histogram
                    // of each command) are made before the reading.
                    config_set(&mut con, "maxmemory-policy", "noeviction");
                    let _ = redis::cmd(&k.cmd("LOADCHUNK"))
                        .arg("dst")
                        .arg(1)
                        .arg("x")
                        .query::<Value>(&mut con);
                    let max = used_memory(&mut con) + 100_000;
                    config_set(&mut con, "maxmemory", &max.to_string());
                }
                _ => config_set(&mut con, limit, "10000"),
            }
            let loadchunk = k.cmd("LOADCHUNK");
            let e = error_text(
                redis::cmd(&loadchunk)
                    .arg("dst")
                    .arg(dump[0].0)
                    .arg(&dump[0].1)
                    .query(&mut con),
            );
            assert!(
                e == k.header_refused && !e.contains(NO_MEMORY),
                "{what}: {e}"
            );
            // (Under maxmemory a 117 KB chunk is itself refused by Redis, `OOM`, before the
            // module sees it.)
            let chunks = if limit == "maxmemory" {
                &[][..]
            } else {
                &dump[1..]
            };
            for (iter, data) in chunks {
                let e = error_text(
                    redis::cmd(&loadchunk)
                        .arg("dst")
                        .arg(iter)
                        .arg(data)
                        .query(&mut con),
                );
                assert!(e.contains("not found"), "{what}: {e}");
            }
            let exists: i64 = common::cmd("EXISTS dst").query(&mut con).unwrap();
            assert_eq!(exists, 0, "{what}");
            // A corrupt header still says so.
            let mut bad = dump[0].1.clone();
            bad.pop();
            let e = error_text(
                redis::cmd(&loadchunk)
                    .arg("dst")
                    .arg(1)
                    .arg(&bad)
                    .query(&mut con),
            );
            assert_eq!(e, k.header_corrupt, "{what}");
        }
    }
}

#[test]
fn loadchunk_of_a_large_dump_on_a_full_cache_succeeds() {
    // volatile-lru: only the fillers (which have a TTL) are evicted, never the filter being
    // restored (under allkeys-* Redis may legitimately evict `dst` itself between chunks).
    let (_s, mut con, _) = full_cache("volatile-lru");
    config_set(&mut con, "maxmemory", "0");
    let dump = dump_of(&mut con, &KINDS[0], "src", 2_000_000);
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

/// An add that creates its filter (BF.ADD, CF.ADD on a missing key) holds the item once: the
/// query buffer's (a copy for replication made the peak twice the item).
#[test]
fn implicit_creation_does_not_copy_a_big_item() {
    for k in &KINDS {
        let s = Server::start();
        let mut con = s.conn();
        let pid = info_num(&mut con, "server", "process_id");
        let item = vec![b'i'; 64 << 20];
        // Warm up the allocator and the query buffer path with the same size once.
        let _: i64 = k.line(k.add, "warm", 0).arg(&item).query(&mut con).unwrap();
        let _: () = common::cmd("MEMORY PURGE").query(&mut con).unwrap();
        let before = current_rss(pid);
        reset_peak_rss(pid);
        let r: i64 = k.line(k.add, "new", 0).arg(&item).query(&mut con).unwrap();
        assert_eq!(r, 1);
        let peak = peak_rss(pid).saturating_sub(before);
        println!(
            "{}: implicit creation with a 64 MiB item: peak RSS +{} MiB",
            k.name,
            peak >> 20
        );
        // The query buffer holds the item once (64 MiB); a copy for replication made it 128 MiB.
        assert!(
            peak < 96 << 20,
            "{}: peak RSS grew by {} MiB for a 64 MiB item",
            k.name,
            peak >> 20
        );
    }
}

/// BF.MADD / CF.INSERT of 1 000 000 items into a filter made for 2 000 000: the peak RSS is
/// what Redis itself holds (arguments, query buffer, reply) and the filter's pages, with no
/// value, hash or reply kept per item for the whole batch.
#[test]
fn a_million_item_madd_holds_no_per_item_copies() {
    let items: Vec<String> = (0..1_000_000).map(|i| format!("item:{i}")).collect();
    for k in &KINDS {
        let s = Server::start();
        let mut con = s.conn();
        let pid = info_num(&mut con, "server", "process_id");
        let _: String = k.line(k.reserve, "k", 2_000_000).query(&mut con).unwrap();
        let _: () = common::cmd("MEMORY PURGE").query(&mut con).unwrap();
        let before = current_rss(pid);
        reset_peak_rss(pid);
        let r: Vec<i64> = k
            .line(k.add_many, "k", 0)
            .arg(&items)
            .query(&mut con)
            .unwrap();
        assert_eq!(r.len(), 1_000_000);
        assert!(
            r.iter().filter(|&&v| v == 1).count() > 990_000,
            "{}",
            k.name
        );
        let peak = peak_rss(pid).saturating_sub(before);
        let command = k.add_many.replace(" {k}", "");
        println!("{command} of 1 000 000 items: peak RSS +{} MiB", peak >> 20);
        // Redis' own argument vector and query buffer, the reply and the filter's pages (about
        // 45 MiB with RedisBloom's BF.MADD), the command wrapper's vector of arguments (16 MiB);
        // no value, hash or reply held per item for the whole batch (those made it 180 MiB).
        assert!(
            peak < 120 << 20,
            "{}: peak RSS grew by {} MiB for 1 000 000 items",
            k.name,
            peak >> 20
        );
    }
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
