//! Filters that forget (`BF.RESERVE … WINDOW ms`) on a real server, with windows of a few
//! seconds. Assertions about time are window semantics only, checked against times measured
//! around each command (the server and the test share the machine's clock): an item must be
//! present while `check end ≤ add start + W`, and gone (apart from false positives) once
//! `check start ≥ add end + 1.25 W`. A slow machine makes fewer of these conditions hold; it
//! never makes a correct filter fail.

mod common;
mod robust;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{scandump, Server};
use redis::{Connection, Value};

/// Milliseconds since the Unix epoch (the clock the server's window filter reads).
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn sleep_until(t: u64) {
    let n = now();
    if t > n {
        std::thread::sleep(Duration::from_millis(t - n));
    }
}

fn items(prefix: &str, r: std::ops::Range<usize>) -> Vec<String> {
    r.map(|i| format!("{prefix}:{i}")).collect()
}

fn madd(con: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    redis::cmd("BF.MADD")
        .arg(key)
        .arg(items)
        .query(con)
        .expect("BF.MADD")
}

fn mexists(con: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    redis::cmd("BF.MEXISTS")
        .arg(key)
        .arg(items)
        .query(con)
        .expect("BF.MEXISTS")
}

fn digest(con: &mut Connection, key: &str) -> String {
    common::cmd("DEBUG DIGEST-VALUE")
        .arg(key)
        .query::<Vec<String>>(con)
        .expect("DIGEST-VALUE")
        .remove(0)
}

fn reserve(con: &mut Connection, key: &str, error: f64, capacity: u64, window: u64) {
    let r: String = redis::cmd("BF.RESERVE")
        .arg(key)
        .arg(error)
        .arg(capacity)
        .arg("WINDOW")
        .arg(window)
        .query(con)
        .expect("BF.RESERVE WINDOW");
    assert_eq!(r, "OK");
}

/// A server holding the window filter `key` (`BF.RESERVE key error capacity WINDOW window`).
fn window_filter(key: &str, error: f64, capacity: u64, window: u64) -> (Server, Connection) {
    let server = Server::start();
    let mut con = server.conn();
    reserve(&mut con, key, error, capacity, window);
    (server, con)
}

/// 100 000 items in 20 batches over several generations of a 2 s window: no false negative
/// while an item is inside its window, forgotten (false positives aside) by 1.25 × window.
#[test]
fn no_false_negatives_inside_the_window_and_forgotten_after() {
    const W: u64 = 2000;
    let (_server, mut con) = window_filter("w", 0.01, 100_000, W);
    let mut batches: Vec<(Vec<String>, u64, u64)> = Vec::new();
    let (mut present_checks, mut forgotten_checks) = (0, 0);
    for b in 0..20 {
        let batch = items(&format!("b{b}"), 0..5000);
        let t0 = now();
        let replies = madd(&mut con, "w", &batch);
        let t1 = now();
        assert_eq!(replies.len(), 5000);
        assert!(replies.iter().filter(|r| **r == 1).count() > 4900);
        batches.push((batch, t0, t1));
        for (items, t0, t1) in &batches {
            let c0 = now();
            let answers = mexists(&mut con, "w", items);
            let c1 = now();
            let present = answers.iter().filter(|a| **a == 1).count();
            if c1 <= t0 + W {
                present_checks += 1;
                assert_eq!(present, items.len(), "false negatives inside the window");
            } else if c0 > t1 + W * 5 / 4 {
                forgotten_checks += 1;
                assert!(present <= items.len() / 100, "{present} still present");
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(
        present_checks >= 20,
        "only {present_checks} presence checks"
    );
    assert!(
        forgotten_checks >= 1,
        "only {forgotten_checks} forget checks"
    );
    // After 1.25 × window from the last add, everything is gone, for reads and for BF.CARD.
    sleep_until(batches.last().unwrap().2 + W * 5 / 4 + 50);
    let card: i64 = common::cmd("BF.CARD w").query(&mut con).unwrap();
    assert_eq!(card, 0);
    for (items, _, _) in &batches {
        let present = mexists(&mut con, "w", items)
            .iter()
            .filter(|a| **a == 1)
            .count();
        assert_eq!(present, 0);
    }
    // The memory of dropped generations is freed by the next write; reads changed nothing.
    let before: i64 = common::cmd("BF.INFO w SIZE")
        .query::<Vec<i64>>(&mut con)
        .unwrap()[0];
    assert_eq!(madd(&mut con, "w", &items("b0", 0..1)), vec![1]);
    let after: i64 = common::cmd("BF.INFO w SIZE")
        .query::<Vec<i64>>(&mut con)
        .unwrap()[0];
    assert!(after < before, "{after} >= {before}");
}

/// At `capacity` distinct items per window (steady arrivals), the measured false-positive
/// rate is at most the requested one.
#[test]
fn false_positive_rate_within_requested() {
    const W: u64 = 2000;
    let (_server, mut con) = window_filter("fp", 0.01, 20_000, W);
    // 5 000 items per quarter window = 20 000 per window, for two windows.
    for g in 0..8 {
        madd(&mut con, "fp", &items(&format!("g{g}"), 0..5000));
        std::thread::sleep(Duration::from_millis(W / 4));
    }
    let probes = items("absent", 0..100_000);
    let fp = mexists(&mut con, "fp", &probes)
        .iter()
        .filter(|a| **a == 1)
        .count();
    let rate = fp as f64 / probes.len() as f64;
    assert!(rate <= 0.01, "false-positive rate {rate}");
    assert!(
        rate > 0.0005,
        "rate {rate}: the filter holds almost nothing"
    );
    let filters: Vec<i64> = common::cmd("BF.INFO fp FILTERS").query(&mut con).unwrap();
    assert!(filters[0] <= 5, "{filters:?} layers");
}

/// A re-add answers 0 and keeps the item for another window; BF.ADD answers 1 again once the
/// item was forgotten.
#[test]
fn re_add_refreshes_the_age() {
    const W: u64 = 4000;
    let (_server, mut con) = window_filter("r", 0.0001, 1000, W);
    let others = items("other", 0..20);
    let t0 = now();
    let first: i64 = common::cmd("BF.ADD r x").query(&mut con).unwrap();
    assert_eq!(first, 1);
    madd(&mut con, "r", &others);
    let again: i64 = common::cmd("BF.ADD r x").query(&mut con).unwrap();
    assert_eq!(again, 0);
    std::thread::sleep(Duration::from_millis(2500));
    let t1 = now();
    let refresh: i64 = common::cmd("BF.ADD r x").query(&mut con).unwrap();
    assert_eq!(refresh, 0, "x was added 2.5 s ago: still present");
    // Past 1.25 × W after the first adds, inside W after the refresh.
    sleep_until(now().max(t0 + W * 5 / 4 + 100));
    let c0 = now();
    let x: i64 = common::cmd("BF.EXISTS r x").query(&mut con).unwrap();
    let rest = mexists(&mut con, "r", &others);
    let c1 = now();
    assert!(
        c1 <= t1 + W,
        "machine too slow for this test: {} ms",
        c1 - t1
    );
    assert_eq!(x, 1, "the re-add must keep x");
    if c0 > t0 + W * 5 / 4 {
        assert_eq!(rest.iter().sum::<i64>(), 0, "items added once must be gone");
    }
    sleep_until(t1 + W * 5 / 4 + 100);
    let back: i64 = common::cmd("BF.ADD r x").query(&mut con).unwrap();
    assert_eq!(back, 1, "forgotten, so new again");
}

/// BF.INFO keeps the five RedisBloom fields; WINDOW answers the window; errors are clean.
#[test]
fn info_and_errors() {
    let server = Server::start();
    let mut con = server.conn();
    reserve(&mut con, "i", 0.01, 1000, 86_400_000);
    let _: Value = common::cmd("BF.MADD i")
        .arg(&["a", "b", "a"])
        .query(&mut con)
        .unwrap();
    let info: Vec<Value> = common::cmd("BF.INFO i").query(&mut con).unwrap();
    let names: Vec<String> = info
        .iter()
        .step_by(2)
        .map(|v| redis::from_redis_value(v.clone()).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Capacity",
            "Size",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate"
        ]
    );
    let values: Vec<i64> = info
        .iter()
        .skip(1)
        .step_by(2)
        .map(|v| redis::from_redis_value(v.clone()).unwrap())
        .collect();
    assert_eq!(values[0], 1000);
    assert_eq!(values[2], 1);
    assert_eq!(values[3], 2);
    assert_eq!(values[4], 2);
    let w: Vec<i64> = common::cmd("BF.INFO i window").query(&mut con).unwrap();
    assert_eq!(w, vec![86_400_000]);
    let ty: String = common::cmd("TYPE i").query(&mut con).unwrap();
    assert_eq!(ty, "bf-window");
    let err = |con: &mut Connection, args: &[&str]| -> String {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        match c.query::<Value>(con) {
            Err(e) => e.to_string(),
            Ok(v) => panic!("{args:?} answered {v:?}"),
        }
    };
    for (args, text) in [
        (
            &["BF.RESERVE", "i", "0.01", "10", "WINDOW", "5"][..],
            "item exists",
        ),
        // A plain RESERVE over a window filter: the key holds a filter already.
        (&["BF.RESERVE", "i", "0.01", "10"][..], "item exists"),
        (
            &["BF.RESERVE", "n", "0.01", "10", "WINDOW", "0"][..],
            "bad window",
        ),
        (
            &["BF.RESERVE", "n", "0.01", "10", "WINDOW", "x"][..],
            "bad window",
        ),
        // WINDOW without its value must not quietly make a plain filter (which never forgets).
        (
            &["BF.RESERVE", "n", "0.01", "10", "WINDOW"][..],
            "no window",
        ),
        (
            &[
                "BF.RESERVE",
                "n",
                "0.01",
                "10",
                "WINDOW",
                "5",
                "GENERATION",
                "9",
            ][..],
            "unknown argument",
        ),
        (
            &["BF.INSERT", "n", "WINDOW", "-1", "ITEMS", "a"][..],
            "Bad window",
        ),
        (
            &[
                "BF.INSERT",
                "i",
                "NOCREATE",
                "GENERATION",
                "99999999999",
                "ITEMS",
                "a",
            ][..],
            "Unknown argument",
        ),
        (
            &["BF.INSERT", "n", "NOCREATE", "WINDOW", "10", "ITEMS", "a"][..],
            "not found",
        ),
        (&["BF.INFO", "i", "BOGUS"][..], "Invalid information value"),
    ] {
        // Errors without an `ERR` prefix come back as "First": rest from the client.
        let e = err(&mut con, args);
        assert!(text.split(' ').all(|w| e.contains(w)), "{args:?}: {e}");
    }
    let exists: i64 = common::cmd("EXISTS n").query(&mut con).unwrap();
    assert_eq!(exists, 0, "failed commands create nothing");
    // Non-scaling: a quarter-window generation holds ⌈capacity / 4⌉ items.
    let ok: String = common::cmd("BF.RESERVE ns 0.01 8 WINDOW 86400000 NONSCALING")
        .query(&mut con)
        .unwrap();
    assert_eq!(ok, "OK");
    let raw = common::raw_command(
        server.port,
        false,
        &[b"BF.MADD", b"ns", b"a", b"b", b"c", b"d"],
    );
    assert_eq!(
        String::from_utf8_lossy(&raw),
        "*3\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n",
        "stops after the full error"
    );
    // BF.INSERT with WINDOW creates; a plain BF.INSERT on a window key adds to it.
    let r: Vec<i64> = common::cmd("BF.INSERT ins ERROR 0.001 WINDOW 60000 ITEMS")
        .arg(&["p", "q"])
        .query(&mut con)
        .unwrap();
    assert_eq!(r, vec![1, 1]);
    let r: Vec<i64> = common::cmd("BF.INSERT ins ITEMS")
        .arg(&["q", "s"])
        .query(&mut con)
        .unwrap();
    assert_eq!(r, vec![0, 1]);
    let card: i64 = common::cmd("BF.CARD ins").query(&mut con).unwrap();
    assert_eq!(card, 3);
}

/// A server started with `options` and window filter `key` on it (0.01, capacity 400, window
/// 1200 ms) after six 300 ms generations of `per_generation` items each (more than capacity /
/// 4 = 100, so generations grow) and 50 more items; a connection and the filter's SCANDUMP
/// walk.
fn grown_window(
    options: &[(&str, &str)],
    key: &str,
    per_generation: usize,
) -> (Server, Connection, Vec<(i64, Vec<u8>)>) {
    let server = Server::start_with(&[], options);
    let mut con = server.conn();
    reserve(&mut con, key, 0.01, 400, 1200);
    for g in 0..6 {
        madd(
            &mut con,
            key,
            &items(&format!("{key}{g}"), 0..per_generation),
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    madd(&mut con, key, &items("last", 0..50));
    let dump = scandump(&mut con, key.as_bytes());
    (server, con, dump)
}

/// The state is byte-identical after DEBUG RELOAD, an AOF rewrite + reload and a restart,
/// and after DUMP/RESTORE and COPY; SCANDUMP → LOADCHUNK rebuilds it exactly.
#[test]
fn persistence_is_byte_identical() {
    let (mut server, mut con, dump) = grown_window(&[("appendonly", "yes")], "p", 250);
    let n = dump.len();
    assert!(n >= 4, "several generations and layers: {n}");
    let d = digest(&mut con, "p");
    let check = |con: &mut Connection, what: &str| {
        assert_eq!(scandump(con, b"p"), dump, "{what}");
        assert_eq!(digest(con, "p"), d, "{what}");
    };
    let _: String = common::cmd("DEBUG RELOAD").query(&mut con).unwrap();
    check(&mut con, "DEBUG RELOAD");
    let _: Value = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    for _ in 0..200 {
        let info: String = common::cmd("INFO persistence").query(&mut con).unwrap();
        if info.contains("aof_rewrite_in_progress:0") && !info.contains("aof_rewrite_scheduled:1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _: String = common::cmd("DEBUG LOADAOF").query(&mut con).unwrap();
    check(&mut con, "AOF rewrite + reload");
    server.restart(&[]);
    let mut con = server.conn();
    check(&mut con, "restart from AOF");
    let _: String = redis::cmd("SAVE").query(&mut con).unwrap();
    server.restart(&[("appendonly", "no")]);
    let mut con = server.conn();
    check(&mut con, "restart from RDB");
    // DUMP / RESTORE and COPY.
    let payload: Vec<u8> = common::cmd("DUMP p").query(&mut con).unwrap();
    let _: String = common::cmd("RESTORE p2 0")
        .arg(&payload)
        .query(&mut con)
        .unwrap();
    let _: i64 = common::cmd("COPY p p3").query(&mut con).unwrap();
    for k in ["p2", "p3"] {
        assert_eq!(scandump(&mut con, k.as_bytes()), dump, "{k}");
    }
    // SCANDUMP → LOADCHUNK.
    for (iter, data) in &dump {
        let _: String = common::cmd("BF.LOADCHUNK p4")
            .arg(*iter)
            .arg(data)
            .query(&mut con)
            .unwrap();
    }
    assert_eq!(scandump(&mut con, b"p4"), dump);
    assert_eq!(digest(&mut con, "p4"), d);
    // Everything aged out while nothing was written: reads forget it; the state is untouched.
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(
        mexists(&mut con, "p", &items("last", 0..50))
            .iter()
            .sum::<i64>(),
        0
    );
    check(&mut con, "reads do not change the state");
}

/// Writes spread over several generations (including a replica that attaches late and gets
/// the rest as a stream) give the replica exactly the primary's bytes.
#[test]
fn replica_is_byte_identical() {
    let primary = Server::start();
    let mut pc = primary.conn();
    reserve(&mut pc, "r", 0.01, 1000, 1000);
    madd(&mut pc, "r", &items("before", 0..300));
    let pport = primary.port.to_string();
    let replica = Server::start_with(&[], &[("replicaof 127.0.0.1", pport.as_str())]);
    let mut rc = replica.conn();
    for g in 0..10 {
        madd(&mut pc, "r", &items(&format!("g{g}"), 0..200));
        let _: i64 = common::cmd("BF.ADD r before:1").query(&mut pc).unwrap();
        // From a script too (effects replication of the rewritten command).
        let _: i64 = redis::cmd("EVAL")
            .arg("return redis.call('BF.ADD', KEYS[1], ARGV[1])")
            .arg(1)
            .arg("r")
            .arg(format!("lua:{g}"))
            .query(&mut pc)
            .unwrap();
        let _: Vec<i64> = redis::cmd("BF.INSERT")
            .arg(format!("ins{}", g % 3))
            .arg("WINDOW")
            .arg(700)
            .arg("ITEMS")
            .arg(items(&format!("i{g}"), 0..50))
            .query(&mut pc)
            .unwrap();
        std::thread::sleep(Duration::from_millis(120));
    }
    let mut synced = false;
    for _ in 0..200 {
        let n: i64 = common::cmd("WAIT 1 100").query(&mut pc).unwrap();
        if n == 1 {
            synced = true;
            break;
        }
    }
    assert!(synced, "replica did not catch up");
    for k in ["r", "ins0", "ins1", "ins2"] {
        let p = scandump(&mut pc, k.as_bytes());
        assert!(!p.is_empty());
        let r = scandump(&mut rc, k.as_bytes());
        assert_eq!(p, r, "{k}");
    }
}

/// A window dump as older builds wrote it (an AOF rewritten without the RDB preamble holds
/// one): header version 1, chunks addressed by offset into all generations' arrays together.
/// It still loads, to the same bytes, so an upgrade keeps every item.
#[test]
fn older_builds_window_dumps_still_load() {
    let (_server, mut con) = window_filter("src", 0.01, 100, 60_000);
    // Several layers: the first generation grows.
    madd(&mut con, "src", &items("src", 0..200));
    let dump = scandump(&mut con, b"src");
    let mut header = dump[0].1.clone();
    header[12..16].copy_from_slice(&1u32.to_le_bytes());
    let mut steps = vec![(1i64, header)];
    let mut at = 0i64;
    for (_, data) in &dump[1..] {
        // Cut in 100-byte pieces, as no chunk of this build is, so that the offsets are all
        // the old addressing has to go by.
        for piece in data.chunks(100) {
            at += piece.len() as i64;
            steps.push((at + 1, piece.to_vec()));
        }
    }
    for (iter, data) in &steps {
        let r: String = common::cmd("BF.LOADCHUNK old")
            .arg(*iter)
            .arg(data)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("LOADCHUNK old {iter}: {e}"));
        assert_eq!(r, "OK");
    }
    assert_eq!(scandump(&mut con, b"old"), dump);
    assert_eq!(
        mexists(&mut con, "old", &items("src", 0..200)),
        vec![1; 200]
    );
}

/// Hostile window headers and RDB payloads are refused with an error and create nothing.
#[test]
fn hostile_window_dumps_are_refused() {
    let (_server, mut con) = window_filter("h", 0.01, 100, 60_000);
    madd(&mut con, "h", &items("h", 0..50));
    let dump = scandump(&mut con, b"h");
    let header = dump[0].1.clone();
    let mut bad_headers: Vec<Vec<u8>> = vec![
        header[..header.len() - 1].to_vec(),
        [&header[..], b"x"].concat(),
    ];
    for (at, v) in [(12, 9u8), (12, 0), (44, 7), (56, 200), (60, 1), (16, 0)] {
        let mut b = header.clone();
        b[at] = v;
        if at == 16 {
            b[16..24].fill(0);
        }
        bad_headers.push(b);
    }
    for b in &bad_headers {
        let r: redis::RedisResult<String> =
            common::cmd("BF.LOADCHUNK bad 1").arg(b).query(&mut con);
        let e = r.expect_err("hostile header accepted").to_string();
        assert!(e.contains("received bad data"), "{e}");
    }
    // A generation announcing 2^60 bytes (a consistent layer): refused before any allocation,
    // as too big for memory, as a plain header is (`ERR received bad data`, as RedisBloom).
    let mut huge = header.clone();
    huge[64 + 12 + 20..64 + 12 + 28].copy_from_slice(&(1u64 << 60).to_le_bytes());
    huge[64 + 12 + 28..64 + 12 + 36].copy_from_slice(&(1u64 << 63).to_le_bytes());
    let r: redis::RedisResult<String> =
        common::cmd("BF.LOADCHUNK bad 1").arg(&huge).query(&mut con);
    let e = r.expect_err("huge header accepted").to_string();
    assert!(e.contains("received bad data"), "{e}");
    let exists: i64 = common::cmd("EXISTS bad").query(&mut con).unwrap();
    assert_eq!(exists, 0);
    // Chunks out of range.
    let _: String = common::cmd("BF.LOADCHUNK ok 1")
        .arg(&header)
        .query(&mut con)
        .unwrap();
    // (Iterators name a generation: bits 0–35 the 1-based position just past the chunk,
    // 36–43 its generation mod 256, 44–51 the walk's newest generation mod 256.)
    let r: redis::RedisResult<String> = common::cmd("BF.LOADCHUNK ok 3 abc").query(&mut con);
    assert!(r.unwrap_err().to_string().contains("invalid offset"));
    let (next, chunk) = dump[1].clone();
    let pos = next & ((1 << 36) - 1);
    let gen_bits = next & !((1 << 36) - 1);
    for (iter, data, want) in [
        (-1, &b"a"[..], "received bad data"),
        (1 << 52, b"a", "received bad data"),
        (gen_bits | 1, b"ab", "received bad data"),
        (
            gen_bits | (pos + 1),
            &chunk[..],
            "Too big for current filter",
        ),
        (next ^ (1 << 36), b"ab", CHANGED),
        (next ^ (1 << 44), b"ab", CHANGED),
        (gen_bits | ((1 << 36) - 1), b"ab", CHANGED),
    ] {
        let r: redis::RedisResult<String> = common::cmd("BF.LOADCHUNK ok")
            .arg(iter)
            .arg(data)
            .query(&mut con);
        let e = r
            .map(|_| format!("{iter}: accepted"))
            .unwrap_or_else(|e| e.to_string());
        assert!(e.contains(want), "{iter}: {e}");
    }
    let copy = scandump(&mut con, b"ok");
    assert_eq!(copy[0], dump[0]);
    assert!(
        copy[1..].iter().all(|(_, d)| d.iter().all(|b| *b == 0)),
        "refused chunks changed the copy"
    );
    // SCANDUMP with iterators that no walk of this filter gives.
    for iter in [
        next ^ (1 << 36),
        next ^ (1 << 44),
        gen_bits | ((1 << 36) - 1),
    ] {
        let r: redis::RedisResult<(i64, Vec<u8>)> =
            common::cmd("BF.SCANDUMP h").arg(iter).query(&mut con);
        let e = r.expect_err("hostile iterator answered").to_string();
        assert!(e.contains(CHANGED), "{iter}: {e}");
    }
    for iter in [-1i64, 1 << 52, i64::MAX] {
        let r: (i64, Vec<u8>) = common::cmd("BF.SCANDUMP h")
            .arg(iter)
            .query(&mut con)
            .unwrap();
        assert_eq!(r, (0, vec![]), "{iter}");
    }
    // Corrupted DUMP payloads with a valid checksum: every byte of the first 200 and every
    // 7th after changed in turn; each is refused or restores a filter that then works.
    let payload: Vec<u8> = common::cmd("DUMP h").query(&mut con).unwrap();
    let body_len = payload.len() - 10;
    let (mut refused, mut accepted) = (0, 0);
    let positions = (0..body_len.min(200)).chain((200..body_len).step_by(7));
    for i in positions {
        let mut body = payload[..body_len].to_vec();
        body[i] ^= 0x5a;
        body.extend_from_slice(&payload[body_len..body_len + 2]);
        let crc = common::crc64(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        let r: redis::RedisResult<String> = common::cmd("RESTORE x 0")
            .arg(&body)
            .arg("REPLACE")
            .query(&mut con);
        match r {
            Err(e) => {
                refused += 1;
                assert!(e.to_string().contains("Bad data format"), "{e}");
            }
            Ok(_) => {
                accepted += 1;
                let _: Value = common::cmd("BF.MADD x")
                    .arg(&["a", "b"])
                    .query(&mut con)
                    .unwrap();
                let _: Vec<i64> = common::cmd("BF.MEXISTS x")
                    .arg(&["a", "z"])
                    .query(&mut con)
                    .unwrap();
                let _ = scandump(&mut con, b"x");
            }
        }
    }
    assert!(
        refused > 50 && accepted > 0,
        "{refused} refused, {accepted} accepted"
    );
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

/// `INFO bf` counts window filters (one filter, every kept generation's layers, items and
/// bytes) and forgets them when the key goes.
#[test]
fn info_bf_counts_window_filters() {
    let server = Server::start();
    let mut con = server.conn();
    let field = |con: &mut Connection, name: &str| -> i64 {
        let info: String = common::cmd("INFO bf").query(con).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("bf_{name}:")))
            .unwrap_or_else(|| panic!("no bf_{name} in {info}"))
            .trim()
            .parse()
            .unwrap()
    };
    reserve(&mut con, "w", 0.01, 1000, 86_400_000);
    madd(&mut con, "w", &items("a", 0..3));
    assert_eq!(field(&mut con, "filters"), 1);
    assert_eq!(field(&mut con, "layers"), 1);
    assert_eq!(field(&mut con, "items"), 3);
    // 250 items at 0.01 / 6: 3 328 bits by the formula, raised to the minimum of 64 / 0.01.
    assert_eq!(field(&mut con, "bytes"), 800);
    let _: i64 = common::cmd("COPY w w2").query(&mut con).unwrap();
    assert_eq!(field(&mut con, "filters"), 2);
    let _: i64 = redis::cmd("DEL").arg(&["w", "w2"]).query(&mut con).unwrap();
    for name in ["filters", "layers", "items", "bytes"] {
        assert_eq!(field(&mut con, name), 0, "{name}");
    }
}

/// A fresh server and a stepper on it.
fn stepper() -> (Server, common::Steps) {
    let server = Server::start();
    let t = common::Steps::new(&server);
    (server, t)
}

/// The module configs apply to window filters as to plain ones: BF.INSERT … WINDOW without
/// CAPACITY / ERROR / EXPANSION takes `bf.initial-size`, `bf.error-rate` and
/// `bf.expansion-factor` (0: non-scaling), and `bf.max-filter-bytes` refuses a window whose
/// generation array would be larger.
#[test]
fn module_configs_apply_to_window_filters() {
    let (_server, mut t) = stepper();
    // Each generation's first layer takes a quarter of the capacity at a sixth of the error.
    t.steps(
        r#"
        CONFIG SET bf.initial-size 400                      -> OK
        CONFIG SET bf.error-rate 0.001                      -> OK
        CONFIG SET bf.expansion-factor 4                    -> OK
        BF.INSERT wc WINDOW 60000 ITEMS a                   -> [1]
        BF.INFO wc CAPACITY                                 -> [400]
        BF.INFO wc EXPANSION                                -> [4]
        BF.INFO wc WINDOW                                   -> [60000]
        CONFIG SET bf.expansion-factor 0                    -> OK
        BF.INSERT wn WINDOW 60000 ITEMS a                   -> [1]
        BF.INFO wn EXPANSION                                -> [nil]
        # Room for the five generations of 800 bytes (6 400 bits, the minimum at 0.01) of "small".
        CONFIG SET bf.max-filter-bytes 4000                 -> OK
        BF.RESERVE big 0.01 100000 WINDOW 1000              -> (error) ERR Insufficient memory to create filter
        BF.INSERT big WINDOW 1000 CAPACITY 100000 ITEMS a   -> (error) ERR Insufficient memory to create filter
        EXISTS big                                          -> 0
        BF.RESERVE small 0.01 100 WINDOW 1000               -> OK
        "#,
    );
    let debug = common::reply_text(&t.run("BF.DEBUG wc"));
    assert!(
        debug.contains(" capacity:100 ") && debug.contains(" ratio:0.000166667"),
        "{debug}"
    );
}

/// A window filter is admitted against all its generations at capacity, a repeated WINDOW is
/// an arity error, and an error rate no layer can be sized for is refused as a config.
#[test]
fn admission_and_edges() {
    let (server, mut t) = stepper();
    t.steps(
        r#"
        BF.RESERVE probe 0.01 400000 WINDOW 60000                      -> OK
        BF.ADD probe x                                                 -> 1
        BF.INSERT n WINDOW 1000 WINDOW 5 ITEMS a                       -> (error) ERR wrong number of arguments for 'bf.insert' command
        BF.INSERT n WINDOW 1000 CAPACITY 9 window 1000 ITEMS a         -> (error) ERR wrong number of arguments for 'bf.insert' command
        EXISTS n                                                       -> 0
        CONFIG SET bf.error-rate 5e-324                                -> (error) ERR CONFIG SET failed (possibly related to argument 'bf.error-rate') - error rate too small: no filter layer can be sized for it
        CONFIG GET bf.error-rate                                       -> ["bf.error-rate","0.01"]
        CONFIG SET bf.error-rate 2e-323                                -> (error) ERR CONFIG SET failed (possibly related to argument 'bf.error-rate') - error rate too small: no filter layer can be sized for it
        CONFIG SET bf.error-rate 1e-300                                -> OK
        "#,
    );
    // One generation's bit array, from BF.DEBUG's layer line.
    let debug = common::reply_text(&t.run("BF.DEBUG probe"));
    let bytes: u64 = debug
        .split(" bytes:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("{debug}"));
    let mut con = server.conn();
    let (_, header): (i64, Vec<u8>) = common::cmd("BF.SCANDUMP probe 0").query(&mut con).unwrap();
    // A header from far in the future (a generation a client may not set with GENERATION,
    // and a filter that would never forget) is refused; an hour ahead is a clock's skew.
    // (A filter with no generation yet, so that only the header's own number changes.)
    t.ok("BF.RESERVE empty 0.01 100 WINDOW 60000");
    let (_, empty): (i64, Vec<u8>) = common::cmd("BF.SCANDUMP empty 0").query(&mut con).unwrap();
    for (lead_ms, want) in [(1u64 << 40, Some("received bad data")), (3_000_000, None)] {
        let mut h = empty.clone();
        let now: u64 = common::cmd("TIME")
            .query::<Vec<u64>>(&mut con)
            .map(|t| t[0] * 1000 + t[1] / 1000)
            .unwrap();
        h[48..56].copy_from_slice(&((now + lead_ms) * 4 / 60_000).to_le_bytes());
        let r: redis::RedisResult<String> =
            common::cmd("BF.LOADCHUNK future 1").arg(&h).query(&mut con);
        match want {
            Some(e) => assert!(
                r.as_ref().is_err_and(|err| err.to_string().contains(e)),
                "{lead_ms}: {r:?}"
            ),
            None => assert_eq!(r.unwrap(), "OK", "{lead_ms}"),
        }
        let _: i64 = common::cmd("DEL future").query(&mut con).unwrap();
    }
    // With room for 2.5 generations the filter could never hold its capacity: refused (a
    // restored header too); with room for all five, admitted.
    t.ok(format!("CONFIG SET bf.max-filter-bytes {}", bytes * 5 / 2).as_str());
    let r: redis::RedisResult<String> = common::cmd("BF.LOADCHUNK copy 1")
        .arg(&header)
        .query(&mut con);
    assert!(
        r.as_ref()
            .is_err_and(|e| e.to_string().contains("received bad data")),
        "{r:?}"
    );
    t.err(
        "BF.RESERVE w 0.01 400000 WINDOW 60000",
        "ERR Insufficient memory to create filter",
    );
    t.err(
        "BF.INSERT w CAPACITY 400000 WINDOW 60000 ITEMS a",
        "ERR Insufficient memory to create filter",
    );
    t.ok(format!("CONFIG SET bf.max-filter-bytes {}", bytes * 5).as_str());
    t.ok("BF.RESERVE w 0.01 400000 WINDOW 60000");
}

/// Time stands still inside a Lua script and a MULTI/EXEC for window filters, as Redis'
/// own clock does for key expiry: an item added there is present for the rest of it, however
/// long it runs against a 1 ms window. On every supported server.
#[test]
fn time_stands_still_inside_scripts_and_transactions() {
    // Busy-waits 30 ms, then checks.
    let script = format!(
        "redis.call('BF.ADD', KEYS[1], 'x'); {HOLD} hold(30); \
        return redis.call('BF.EXISTS', KEYS[1], 'x')"
    );
    for (name, bin) in common::servers() {
        let server = Server::start_on(&bin, &[], &[]);
        let mut con = server.conn();
        for key in ["script", "multi", "nested", "between"] {
            reserve(&mut con, key, 0.01, 100, 1);
        }
        let r: i64 = redis::cmd("EVAL")
            .arg(&script)
            .arg(1)
            .arg("script")
            .query(&mut con)
            .unwrap();
        assert_eq!(r, 1, "{name}: inside a script");
        let (added, exists): (i64, i64) = redis::pipe()
            .atomic()
            .cmd("BF.ADD")
            .arg("multi")
            .arg("x")
            .cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.03")
            .ignore()
            .cmd("BF.EXISTS")
            .arg("multi")
            .arg("x")
            .query(&mut con)
            .unwrap();
        assert_eq!((added, exists), (1, 1), "{name}: inside MULTI/EXEC");
        // A script inside the transaction shares the transaction's time.
        let (added, exists): (i64, i64) = redis::pipe()
            .atomic()
            .cmd("BF.ADD")
            .arg("nested")
            .arg("x")
            .cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.03")
            .ignore()
            .cmd("EVAL")
            .arg("return redis.call('BF.EXISTS', KEYS[1], 'x')")
            .arg(1)
            .arg("nested")
            .query(&mut con)
            .unwrap();
        assert_eq!(
            (added, exists),
            (1, 1),
            "{name}: a script inside MULTI/EXEC"
        );
        // Between commands time moves: 30 ms is 120 generations of a 1 ms window.
        let _: i64 = common::cmd("BF.ADD between x").query(&mut con).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let r: i64 = common::cmd("BF.EXISTS between x").query(&mut con).unwrap();
        assert_eq!(r, 0, "{name}: outside a script the item ages out");
        for key in ["script", "multi", "nested"] {
            let r: i64 = common::cmd("BF.EXISTS")
                .arg(key)
                .arg("x")
                .query(&mut con)
                .unwrap();
            assert_eq!(r, 0, "{name}: {key}, after it");
        }
    }
}

/// Lua defining `hold(ms)`, which busy-waits at least `ms` milliseconds: on the process' CPU
/// time (`os.clock`, Redis ≥ 7.2 and Valkey) where scripts have it, else on the server's
/// `TIME`, which moves inside a script on Redis 7.0 (and stands still on later lines).
const HOLD: &str = "local has_clock, clock = pcall(function() return os.clock end); \
    local function us() if has_clock then return clock() * 1000000 end; \
    local t = redis.call('TIME'); return tonumber(t[1]) * 1000000 + tonumber(t[2]) end; \
    local function hold(ms) local start = us(); while us() - start < ms * 1000 do end end;";

/// A script that holds the server `ARGV[1]` ms.
fn busy_script() -> String {
    format!("{HOLD} hold(tonumber(ARGV[1])); return 1")
}

/// Adds `ARGV[1]` to the window filter `KEYS[1]`.
const ADD: &str = "return redis.call('BF.ADD', KEYS[1], ARGV[1])";

/// The library of the FCALL cases: `add` as [`ADD`].
const LIBRARY: &str = "#!lua name=wclock\n\
    redis.register_function('add', function(keys, args) \
    return redis.call('BF.ADD', keys[1], args[1]) end)";

/// A window of 100 ms, and a pause of 200 ms: past 1.25 windows, so an add recorded at the
/// time before the pause is forgotten right after it.
const SHORT_WINDOW: u64 = 100;
const PAUSE_MS: u64 = 200;

/// One step of a pipeline: an add of `item` to `w` by a transaction, a script or a function,
/// or holding the server for [`PAUSE_MS`].
#[derive(Clone, Copy, Debug)]
enum Step {
    Multi(&'static str),
    Eval(&'static str),
    Fcall(&'static str),
    DebugSleep,
    BusyScript,
}

/// Appends `step` to `p`, ignoring its reply unless it is an add.
fn push_step(p: &mut redis::Pipeline, step: Step) {
    match step {
        Step::Multi(item) => {
            p.cmd("MULTI").ignore();
            p.cmd("BF.ADD").arg("w").arg(item).ignore();
            p.cmd("EXEC");
        }
        Step::Eval(item) => {
            p.cmd("EVAL").arg(ADD).arg(1).arg("w").arg(item);
        }
        Step::Fcall(item) => {
            p.cmd("FCALL").arg("add").arg(1).arg("w").arg(item);
        }
        Step::DebugSleep => {
            p.cmd("DEBUG")
                .arg("SLEEP")
                .arg(PAUSE_MS as f64 / 1000.0)
                .ignore();
        }
        Step::BusyScript => {
            p.cmd("EVAL")
                .arg(busy_script())
                .arg(0)
                .arg(PAUSE_MS)
                .ignore();
        }
    }
}

/// The answer of an add step: `EXEC`'s `[1]` or a script's `1`.
fn add_answer(v: &Value) -> i64 {
    match v {
        Value::Array(a) if a.len() == 1 => add_answer(&a[0]),
        Value::Int(n) => *n,
        other => panic!("unexpected add reply {other:?}"),
    }
}

/// A server with the window filter `w` (100 ms) and the library `wclock`.
fn clock_server(bin: &str) -> (Server, Connection) {
    let server = Server::start_on(bin, &[], &[]);
    let mut con = server.conn();
    reserve(&mut con, "w", 0.01, 1000, SHORT_WINDOW);
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIBRARY)
        .query(&mut con)
        .unwrap();
    (server, con)
}

/// Each script, function or transaction takes the time afresh, even when they arrive in one
/// pipeline (one event-loop iteration) with the server held between them: an add is present
/// right after it, however long ago the previous one froze its time. On every server.
#[test]
fn each_script_and_transaction_takes_the_time_afresh() {
    use Step::*;
    let cases: &[(&str, [Step; 3])] = &[
        (
            "MULTI/EXEC, DEBUG SLEEP",
            [Multi("a"), DebugSleep, Multi("b")],
        ),
        (
            "MULTI/EXEC, busy script",
            [Multi("a"), BusyScript, Multi("b")],
        ),
        ("three EVALs", [Eval("a"), BusyScript, Eval("b")]),
        ("FCALL, DEBUG SLEEP", [Fcall("a"), DebugSleep, Fcall("b")]),
        ("EVAL then MULTI/EXEC", [Eval("a"), DebugSleep, Multi("b")]),
    ];
    let mut wrong = Vec::new();
    for (name, bin) in common::servers() {
        let (_server, mut con) = clock_server(&bin);
        for (case, steps) in cases {
            let _: i64 = common::cmd("DEL w").query(&mut con).unwrap();
            reserve(&mut con, "w", 0.01, 1000, SHORT_WINDOW);
            let mut p = redis::pipe();
            for step in steps {
                push_step(&mut p, *step);
            }
            p.cmd("BF.EXISTS").arg("w").arg("b");
            let replies: Vec<Value> = p.query(&mut con).unwrap();
            let answers: Vec<i64> = replies[..2].iter().map(add_answer).collect();
            let exists = add_answer(&replies[2]);
            if (&answers[..], exists) != (&[1, 1][..], 1) {
                wrong.push(format!(
                    "{name}: {case}: adds {answers:?}, then BF.EXISTS w b {exists} (want 1)"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A window read early in a script or transaction does not fix its time: an add made after
/// the server was held for twice the window counts from when it was made, not from the read,
/// so it is present right after. On every server.
#[test]
fn a_read_before_a_wait_does_not_age_a_later_add() {
    let script = format!(
        "redis.call('BF.EXISTS', KEYS[1], 'q'); {HOLD} hold(tonumber(ARGV[2])); \
        return redis.call('BF.ADD', KEYS[1], ARGV[1])"
    );
    let mut wrong = Vec::new();
    for (name, bin) in common::servers() {
        let (_server, mut con) = clock_server(&bin);
        for case in ["MULTI/EXEC", "EVAL"] {
            let _: i64 = common::cmd("DEL w").query(&mut con).unwrap();
            reserve(&mut con, "w", 0.01, 1000, SHORT_WINDOW);
            let mut p = redis::pipe();
            if case == "EVAL" {
                p.cmd("EVAL")
                    .arg(&script)
                    .arg(1)
                    .arg("w")
                    .arg("b")
                    .arg(PAUSE_MS);
            } else {
                p.cmd("MULTI").ignore();
                p.cmd("BF.EXISTS").arg("w").arg("q").ignore();
                push_step(&mut p, Step::DebugSleep);
                p.cmd("BF.ADD").arg("w").arg("b").ignore();
                p.cmd("EXEC");
            }
            p.cmd("BF.EXISTS").arg("w").arg("b");
            let replies: Vec<Value> = p.query(&mut con).unwrap();
            // EXEC answers [0, OK, add]; the script, the add alone.
            let added = match &replies[0] {
                Value::Array(a) => add_answer(a.last().unwrap()),
                v => add_answer(v),
            };
            let answers = (added, add_answer(&replies[1]));
            if answers != (1, 1) {
                wrong.push(format!(
                    "{name}: {case}: add {}, then BF.EXISTS w b {} (want 1, 1)",
                    answers.0, answers.1
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Waits (up to 10 s) until client `id` is held by `CLIENT PAUSE` (flag `b` in CLIENT LIST).
fn wait_postponed(control: &mut Connection, id: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let line: String = common::cmd("CLIENT LIST ID")
            .arg(id)
            .query(control)
            .unwrap();
        let flags = line
            .split(' ')
            .find_map(|f| f.strip_prefix("flags="))
            .unwrap_or("");
        if flags.contains('b') {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "client {id} not held: {line}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Scripts, functions and transactions of several clients that run in one event-loop
/// iteration (held by `CLIENT PAUSE … WRITE`, then released together by `CLIENT UNPAUSE`),
/// with a client's busy script between them: each takes the time afresh. A held script is
/// run again on release without passing the command filter (Redis ≥ 7.2, Valkey). On every
/// server.
#[test]
fn clients_released_together_take_the_time_afresh() {
    use Step::*;
    let cases: &[(&str, Step, Step)] = &[
        ("transactions", Multi("a"), Multi("b")),
        ("scripts", Eval("a"), Eval("b")),
        ("functions", Fcall("a"), Fcall("b")),
        ("script then transaction", Eval("a"), Multi("b")),
    ];
    let mut wrong = Vec::new();
    for (name, bin) in common::servers() {
        let (server, mut control) = clock_server(&bin);
        for (case, first, last) in cases {
            let _: i64 = common::cmd("DEL w").query(&mut control).unwrap();
            reserve(&mut control, "w", 0.01, 1000, SHORT_WINDOW);
            let mut clients: Vec<(Connection, i64)> = (0..3)
                .map(|_| {
                    let mut c = server.conn();
                    let id: i64 = common::cmd("CLIENT ID").query(&mut c).unwrap();
                    (c, id)
                })
                .collect();
            let _: String = common::cmd("CLIENT PAUSE 20000 WRITE")
                .query(&mut control)
                .unwrap();
            for ((c, id), step) in clients.iter_mut().zip([*first, BusyScript, *last]) {
                let mut p = redis::pipe();
                push_step(&mut p, step);
                p.cmd("BF.EXISTS").arg("w").arg("b");
                c.send_packed_command(&p.get_packed_pipeline()).unwrap();
                wait_postponed(&mut control, *id);
            }
            let _: String = common::cmd("CLIENT UNPAUSE").query(&mut control).unwrap();
            // The last client's replies: (MULTI's OK, QUEUED,) the add's, then BF.EXISTS'.
            let n = if matches!(last, Multi(_)) { 4 } else { 2 };
            let con = &mut clients[2].0;
            let replies: Vec<i64> = (0..n)
                .map(|_| con.recv_response().unwrap())
                .skip(n - 2)
                .map(|v| add_answer(&v))
                .collect();
            if replies != [1, 1] {
                wrong.push(format!(
                    "{name}: {case}: add of b, then BF.EXISTS w b: {replies:?} (want [1, 1])"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The server's `TIME` reply in microseconds.
fn time_us(v: &Value) -> u64 {
    match v {
        Value::Array(a) if a.len() == 2 => {
            let part = |v: &Value| match v {
                Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse::<u64>().unwrap(),
                other => panic!("unexpected TIME part {other:?}"),
            };
            part(&a[0]) * 1_000_000 + part(&a[1])
        }
        other => panic!("unexpected TIME reply {other:?}"),
    }
}

/// Random interleavings, in pipelines, of plain adds, adds by transactions, scripts and
/// functions, checks by plain commands and inside transactions, and the server held for 0–1.5
/// windows (`DEBUG SLEEP` or a busy script), with the server's `TIME` around each: no
/// acknowledged add is ever missing from a check that ended within the window after the add
/// started (`check end ≤ add start + W`, both from `TIME`). On every server.
#[test]
fn random_interleavings_never_lose_an_add_within_its_window() {
    let seed = robust::seed_from_env("BF_WINDOW_CLOCK_SEED");
    let mut rng = common::Rng::new(seed);
    let w_us = SHORT_WINDOW * 1000;
    for (name, bin) in common::servers() {
        let (_server, mut con) = clock_server(&bin);
        let mut checked = 0;
        for round in 0..4 {
            // What each reply of the pipeline is, in order.
            enum Slot {
                Ignored,
                Time,
                Added(Vec<String>),
                Checked(Vec<String>),
            }
            let mut p = redis::pipe();
            let mut slots = Vec::new();
            let mut items: Vec<String> = Vec::new();
            for block in 0..14 {
                let item = format!("{round}:{block}");
                p.cmd("TIME");
                slots.push(Slot::Time);
                match rng.below(7) {
                    0 => {
                        p.cmd("BF.ADD").arg("w").arg(&item);
                        slots.push(Slot::Added(vec![item.clone()]));
                    }
                    1 => {
                        p.cmd("MULTI").ignore();
                        p.cmd("BF.ADD").arg("w").arg(&item).ignore();
                        p.cmd("BF.MEXISTS").arg("w").arg(&items).arg(&item).ignore();
                        p.cmd("EXEC");
                        // EXEC's reply: [add, [checks…, item]].
                        let mut checks = items.clone();
                        checks.push(item.clone());
                        slots.push(Slot::Checked(checks));
                    }
                    2 => {
                        p.cmd("EVAL").arg(ADD).arg(1).arg("w").arg(&item);
                        slots.push(Slot::Added(vec![item.clone()]));
                    }
                    3 => {
                        p.cmd("FCALL").arg("add").arg(1).arg("w").arg(&item);
                        slots.push(Slot::Added(vec![item.clone()]));
                    }
                    4 => {
                        let ms = rng.below(SHORT_WINDOW * 3 / 2);
                        if rng.chance(50) {
                            p.cmd("DEBUG").arg("SLEEP").arg(ms as f64 / 1000.0);
                        } else {
                            p.cmd("EVAL").arg(busy_script()).arg(0).arg(ms);
                        }
                        slots.push(Slot::Ignored);
                    }
                    _ => {
                        if items.is_empty() {
                            p.cmd("PING");
                            slots.push(Slot::Ignored);
                        } else {
                            p.cmd("BF.MEXISTS").arg("w").arg(&items);
                            slots.push(Slot::Checked(items.clone()));
                        }
                    }
                }
                if matches!(slots.last(), Some(Slot::Added(_))) {
                    items.push(item);
                } else if let Some(Slot::Checked(c)) = slots.last() {
                    if c.last() == Some(&item) {
                        items.push(item);
                    }
                }
            }
            p.cmd("TIME");
            slots.push(Slot::Time);
            let replies: Vec<Value> = p.query(&mut con).unwrap();
            assert_eq!(replies.len(), slots.len(), "{name}: replies");
            // The latest add start of each item (TIME before its block), and checks against
            // it with the TIME after theirs.
            let mut added_at: std::collections::HashMap<String, u64> = Default::default();
            let mut last_time = 0;
            let mut pending: Option<(Vec<String>, Vec<i64>)> = None;
            for (slot, reply) in slots.iter().zip(&replies) {
                match slot {
                    Slot::Ignored => {}
                    Slot::Time => {
                        let t = time_us(reply);
                        if let Some((names, answers)) = pending.take() {
                            for (item, answer) in names.iter().zip(answers) {
                                if t <= added_at[item] + w_us {
                                    checked += 1;
                                    assert_eq!(
                                        answer,
                                        1,
                                        "{name}: {item} missing {} µs after its add \
                                         (BF_WINDOW_CLOCK_SEED={seed})",
                                        t - added_at[item]
                                    );
                                }
                            }
                        }
                        last_time = t;
                    }
                    Slot::Added(names) => {
                        assert_eq!(add_answer(reply), 1, "{name}: add of {names:?}");
                        for n in names {
                            added_at.insert(n.clone(), last_time);
                        }
                    }
                    Slot::Checked(names) => {
                        let answers: Vec<i64> = match reply {
                            // EXEC: [add, [checks…]]; the add is the last name.
                            Value::Array(a) if a.len() == 2 && matches!(a[1], Value::Array(_)) => {
                                added_at.insert(names.last().unwrap().clone(), last_time);
                                redis::from_redis_value(a[1].clone()).unwrap()
                            }
                            other => redis::from_redis_value(other.clone()).unwrap(),
                        };
                        pending = Some((names.clone(), answers));
                    }
                }
            }
        }
        assert!(
            checked > 0,
            "{name}: nothing checked (BF_WINDOW_CLOCK_SEED={seed})"
        );
    }
}

/// The error of a window SCANDUMP walk that a write made inconsistent, at either end.
const CHANGED: &str = "window filter changed during SCANDUMP, start again from iterator 0";

/// One SCANDUMP → LOADCHUNK walk of `key` from `src` into `copy` on `dst` (deleted first),
/// running `between(step, src)` after every chunk step. Ok(chunks), or Err(the error) when a
/// step answered the start-over error; any other error fails the test.
fn copy_walk(
    src: &mut Connection,
    dst: &mut Connection,
    key: &str,
    copy: &str,
    mut between: impl FnMut(usize, &mut Connection),
) -> Result<usize, String> {
    let _: i64 = redis::cmd("DEL").arg(copy).query(dst).unwrap();
    let (one, header): (i64, Vec<u8>) = common::cmd("BF.SCANDUMP")
        .arg(key)
        .arg(0)
        .query(src)
        .unwrap();
    assert_eq!(one, 1);
    let ok: String = common::cmd("BF.LOADCHUNK")
        .arg(copy)
        .arg(1)
        .arg(&header)
        .query(dst)
        .unwrap();
    assert_eq!(ok, "OK");
    let mut iter = 1i64;
    for step in 0.. {
        assert!(step < 1000, "endless walk");
        let r: redis::RedisResult<(i64, Vec<u8>)> =
            common::cmd("BF.SCANDUMP").arg(key).arg(iter).query(src);
        let (next, data) = match r {
            Ok((0, _)) => return Ok(step),
            Ok(c) => c,
            Err(e) if e.to_string().contains(CHANGED) => return Err(format!("source: {e}")),
            Err(e) => panic!("BF.SCANDUMP {key} {iter}: {e}"),
        };
        assert!(next > 0 && next < 1 << 53, "iterator {next}");
        let r: redis::RedisResult<String> = common::cmd("BF.LOADCHUNK")
            .arg(copy)
            .arg(next)
            .arg(&data)
            .query(dst);
        match r {
            Ok(_) => {}
            Err(e) if e.to_string().contains(CHANGED) => return Err(format!("copy: {e}")),
            Err(e) => panic!("BF.LOADCHUNK {copy} {next}: {e}"),
        }
        iter = next;
        between(step, src);
    }
    unreachable!()
}

/// Sleeps into the next generation of a `window`-ms filter (30 ms past its start).
fn next_generation(window: u64) {
    let quarter = window / 4;
    sleep_until((now() / quarter + 1) * quarter + 30);
}

/// Every item of `items` that `busy` holds on `src`, `copy` holds on `dst` too.
fn assert_none_lost(src: &mut Connection, dst: &mut Connection, items: &[String]) {
    let l = lost(src, dst, "busy", "copy", items);
    assert!(
        l.is_empty(),
        "{} lost, first {:?}",
        l.len(),
        &l[..l.len().min(5)]
    );
}

/// Items of `items` that `src` holds but the copy does not (a false negative of the copy).
fn lost(
    src: &mut Connection,
    dst: &mut Connection,
    key: &str,
    copy: &str,
    items: &[String],
) -> Vec<String> {
    let s = mexists(src, key, items);
    let c = mexists(dst, copy, items);
    items
        .iter()
        .zip(s.iter().zip(&c))
        .filter(|(_, (s, c))| **s == 1 && **c == 0)
        .map(|(i, _)| i.clone())
        .collect()
}

/// A SCANDUMP walk of a busy window filter, interleaved with adds across generation changes
/// (the oldest generation dropped behind the walk and a new one created; the walk's own
/// generation dropped under it; a growth layer of the newest generation), into another
/// server: every walk either gives a copy holding every item the source held when the walk
/// began and still holds, or answers the start-over error, and a walk started again
/// completes into an exact copy. (Chunks addressed by global offset gave a copy shifted by a
/// generation: items 1.65–1.97 s old were missing from it.)
#[test]
fn scandump_walk_of_a_changing_window_filter() {
    const W: u64 = 2000;
    let (_server, mut src) = window_filter("busy", 0.01, 1000, W);
    let other = Server::start();
    let mut dst = other.conn();
    // Five generations of 200 items each (a quarter holds 250: one layer each, equal sizes).
    let mut pre = Vec::new();
    for g in 0..5 {
        next_generation(W);
        let batch = items(&format!("pre{g}"), 0..200);
        madd(&mut src, "busy", &batch);
        pre.extend(batch);
    }

    // 1. The oldest generation dropped (and a new one made) once the walk is past it.
    let mut later = Vec::new();
    let r = copy_walk(&mut src, &mut dst, "busy", "copy", |step, src| {
        if step == 1 {
            next_generation(W);
            later = items("later", 0..200);
            madd(src, "busy", &later);
        }
    });
    match &r {
        Ok(chunks) => assert_eq!(*chunks, 5, "one chunk per generation"),
        // Only when the machine slept past two generation starts (the walk's own dropped too).
        Err(e) => assert!(e.starts_with("source"), "{e}"),
    }
    if r.is_ok() {
        let held = mexists(&mut src, "busy", &pre[200..]).iter().sum::<i64>();
        assert!(
            held >= 800,
            "the source still holds generations 1–4: {held}"
        );
        assert_none_lost(&mut src, &mut dst, &pre);
    }

    // 2. The generation the walk is in dropped under it: the source refuses the next step.
    let r = copy_walk(&mut src, &mut dst, "busy", "copy", |step, src| {
        if step == 0 {
            next_generation(W);
            madd(src, "busy", &items("drop", 0..10));
        }
    });
    let e = r.expect_err("a walk whose generation was dropped");
    assert!(e.starts_with("source: ") && e.contains(CHANGED), "{e}");

    // 3. A burst grows the newest generation during the walk: the copy refuses its new layer
    //    (or, if a generation started meanwhile, the source refuses the dropped one).
    let r = copy_walk(&mut src, &mut dst, "busy", "copy", |step, src| {
        if step == 0 {
            madd(src, "busy", &items("burst", 0..400));
        }
    });
    let e = r.expect_err("a walk that met a layer its header lacks");
    assert!(e.contains(CHANGED), "{e}");

    // 4. Started again (the documented retry), the walk completes: an exact copy.
    let mut done = false;
    for _ in 0..10 {
        if copy_walk(&mut src, &mut dst, "busy", "copy", |_, _| {}).is_ok() {
            done = true;
            break;
        }
    }
    assert!(done, "no walk completed in 10 attempts");
    let all: Vec<String> = [pre, later, items("drop", 0..10), items("burst", 0..400)].concat();
    assert_none_lost(&mut src, &mut dst, &all);
    assert!(mexists(&mut dst, "copy", &items("burst", 0..400))
        .iter()
        .all(|x| *x == 1));
    assert_eq!(scandump(&mut dst, b"copy"), scandump(&mut src, b"busy"));
}

/// An AOF rewrite without the RDB preamble writes each window filter as its SCANDUMP walk of
/// LOADCHUNK commands (generation-addressed iterators): reloading it and restarting from it
/// give the same bytes.
#[test]
fn aof_rewrite_without_preamble_replays_window_walks() {
    let (mut server, mut con, dump) = grown_window(common::AOF_NO_PREAMBLE, "a", 150);
    let n = dump.len();
    assert!(n >= 6, "several generations and layers: {n}");
    assert!(
        dump[1..].iter().any(|(it, _)| *it >= 1 << 36),
        "generation-tagged iterators"
    );
    let d = digest(&mut con, "a");
    let _: Value = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    let mut idle = false;
    for _ in 0..200 {
        let info: String = common::cmd("INFO persistence").query(&mut con).unwrap();
        if info.contains("aof_rewrite_in_progress:0") && !info.contains("aof_rewrite_scheduled:1") {
            idle = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(idle, "AOF rewrite did not finish");
    // The base file is commands: the header, then every chunk with its SCANDUMP iterator.
    let base = std::fs::read_dir(server.dir.path().join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".base.aof"))
        .expect("a base AOF file");
    let text = std::fs::read(&base).unwrap();
    let loadchunks = text.windows(12).filter(|w| w == b"BF.LOADCHUNK").count();
    assert_eq!(loadchunks, dump.len(), "header and every chunk");
    for (it, _) in &dump[1..] {
        let needle = format!("\r\n{it}\r\n");
        assert!(
            text.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "iterator {it} in the rewrite"
        );
    }
    let _: String = common::cmd("DEBUG LOADAOF").query(&mut con).unwrap();
    assert_eq!(scandump(&mut con, b"a"), dump, "AOF reload");
    assert_eq!(digest(&mut con, "a"), d, "AOF reload");
    server.restart(&[]);
    let mut con = server.conn();
    assert_eq!(
        scandump(&mut con, b"a"),
        dump,
        "restart from the rewritten AOF"
    );
    assert_eq!(digest(&mut con, "a"), d, "restart from the rewritten AOF");
}
