//! Replication never loses an item: a primary and two replicas, 200 000
//! items across 50 filters written with every add path (BF.ADD, BF.MADD, BF.INSERT, implicit
//! creation, scaling and NONSCALING filters, LOADCHUNK restores of core-built and server-built
//! dumps). Every replica must answer every item present (BF.MEXISTS in batches of 4000) and
//! return a SCANDUMP byte-identical to the primary's.
//!
//! Covered: a replica attached before the writes whose module defaults differ from the
//! primary's (`INITIAL_SIZE 7 ERROR_RATE 0.2`, `docs/commands.md` ("Replication and AOF")); that replica shut down and
//! restarted while writes go on (partial resynchronisation, checked with the primary's
//! `sync_partial_ok`), then killed with SIGKILL and restarted without its RDB while writes go on
//! (full resynchronisation under load); a replica attached after all writes (full sync); and
//! promotion (`REPLICAOF NO ONE`, the other replica re-pointed to it, writes continue).
//!
//! Runs in ~5–10 s. `cargo test --release --test bloom_replication -- --nocapture` prints the figures.

mod common;
mod robust;

use common::{scandump, Server};
use redis::{Connection, Value};
use redis_bf::bloom::dump::{chunk_at, encode_header};
use redis_bf::bloom::Chain;
use robust::{
    assert_all_present, info_field, info_u64, loadchunks, raw, raw_pipe, value_error, wait_until,
    Expected,
};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILTERS: usize = 50;
const PER_FILTER: usize = 4000;
/// Items per filter written before the replica restarts (the rest is written during them).
const PHASE_A: usize = PER_FILTER / 2;
/// Items per filter added on the promoted replica.
const PHASE_C: usize = 200;
/// Filters created on the promoted replica.
const NEW_FILTERS: usize = 5;
/// Items restored with LOADCHUNK in the dump-restored filters.
const RESTORED: usize = 1000;
/// The replica whose defaults differ from the primary's (100, 0.01).
const OTHER_DEFAULTS: [&str; 4] = ["INITIAL_SIZE", "7", "ERROR_RATE", "0.2"];

fn key(f: usize) -> Vec<u8> {
    if f % 10 == 3 {
        // Binary key names replicate too.
        let mut k = b"rep:\xff\x00".to_vec();
        k.extend_from_slice(format!("{f:02}").as_bytes());
        k
    } else {
        format!("rep:{f:02}").into_bytes()
    }
}

fn item(f: usize, i: usize) -> Vec<u8> {
    if i % 7 == 0 {
        let mut v = vec![0xfe, f as u8, 0];
        v.extend_from_slice(&(i as u32).to_le_bytes());
        v
    } else {
        format!("f{f}:item:{i}").into_bytes()
    }
}

fn items(f: usize, r: Range<usize>) -> Vec<Vec<u8>> {
    r.map(|i| item(f, i)).collect()
}

fn connect(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(10))
        .expect("connect")
}

/// Every reply of an add must be 1 or 0.
fn assert_acks(replies: &[Value], what: &str) {
    for r in replies {
        match r {
            Value::Int(0 | 1) => {}
            Value::Array(a) => assert_acks(a, what),
            other => panic!("{what}: unexpected reply {other:?}"),
        }
    }
}

fn query(con: &mut Connection, cmd: &redis::Cmd, what: &str) -> Value {
    let v = raw(con, cmd);
    assert!(value_error(&v).is_none(), "{what}: {v:?}");
    v
}

/// Builds a filter with the pure core and returns its dump as SCANDUMP would give it.
fn core_dump(f: usize) -> Vec<(i64, Vec<u8>)> {
    let mut chain = Chain::new(300, 0.01, 2, false, u64::MAX).unwrap();
    for i in 0..RESTORED {
        chain.add(&item(f, i), u64::MAX).unwrap();
    }
    let mut dump = vec![(1i64, encode_header(&chain))];
    let mut iter = 1;
    loop {
        let (next, chunk) = chunk_at(&chain, iter);
        if next == 0 {
            break;
        }
        dump.push((next, chunk.to_vec()));
        iter = next;
    }
    dump
}

/// Writes items `r` of filter `f` with the add path of its kind (`f % 10`); the first write of a
/// filter also creates it the kind's way.
fn write(con: &mut Connection, f: usize, r: Range<usize>) {
    let k = key(f);
    let mut start = r.start;
    if start == 0 {
        match f % 10 {
            0 => {
                query(
                    con,
                    common::cmd("BF.RESERVE").arg(&k).arg(0.01).arg(500),
                    "RESERVE",
                );
            }
            1 => {
                query(
                    con,
                    common::cmd("BF.RESERVE")
                        .arg(&k)
                        .arg(0.001)
                        .arg(1000)
                        .arg("EXPANSION")
                        .arg(4),
                    "RESERVE",
                );
            }
            6 => {
                query(
                    con,
                    common::cmd("BF.RESERVE")
                        .arg(&k)
                        .arg(0.02)
                        .arg(5000)
                        .arg("NONSCALING"),
                    "RESERVE",
                );
            }
            8 => {
                query(
                    con,
                    common::cmd("BF.RESERVE")
                        .arg(&k)
                        .arg(0.05)
                        .arg(100)
                        .arg("EXPANSION")
                        .arg(1),
                    "RESERVE",
                );
            }
            7 => {
                loadchunks(con, &k, &core_dump(f));
                start = RESTORED;
            }
            9 => {
                // A server-built dump restored under another name (the scratch key's DEL is
                // replicated too).
                let scratch = [k.as_slice(), b":scratch"].concat();
                query(
                    con,
                    common::cmd("BF.RESERVE").arg(&scratch).arg(0.01).arg(200),
                    "RESERVE",
                );
                for group in items(f, 0..RESTORED).chunks(250) {
                    let v = query(con, common::cmd("BF.MADD").arg(&scratch).arg(group), "MADD");
                    assert_acks(&[v], "scratch MADD");
                }
                let dump = scandump(con, &scratch);
                let _: i64 = common::cmd("DEL").arg(&scratch).query(con).unwrap();
                loadchunks(con, &k, &dump);
                start = RESTORED;
            }
            _ => {}
        }
    }
    let all = items(f, start..r.end);
    for (n, group) in all.chunks(200).enumerate() {
        match f % 10 {
            3 | 8 => {
                let mut p = redis::pipe();
                for it in group {
                    p.cmd("BF.ADD").arg(&k).arg(it);
                }
                let v = raw_pipe(con, &p, group.len());
                assert_acks(&v, "BF.ADD");
            }
            // BF.INSERT with these options (kind 1: on every other group).
            kind @ (1 | 4 | 5) if kind != 1 || n % 2 == 1 => {
                for (with, options) in [
                    (1, "NOCREATE ITEMS"),
                    (4, "CAPACITY 300 ERROR 0.005 EXPANSION 3 ITEMS"),
                    (5, "CAPACITY 5000 ERROR 0.01 NONSCALING ITEMS"),
                ] {
                    if kind == with {
                        let mut insert = common::cmd("BF.INSERT");
                        insert.arg(&k).arg(common::split_args(options)).arg(group);
                        let v = query(con, &insert, options);
                        assert_acks(&[v], &format!("BF.INSERT {options}"));
                    }
                }
            }
            _ => {
                let v = query(con, common::cmd("BF.MADD").arg(&k).arg(group), "MADD");
                assert_acks(&[v], "BF.MADD");
            }
        }
    }
}

/// A non-scaling filter that fills up: the items accepted before the "full" errors.
fn write_full_filter(con: &mut Connection) -> Vec<Vec<u8>> {
    let k = b"rep:full";
    query(
        con,
        common::cmd("BF.RESERVE")
            .arg(k)
            .arg(0.01)
            .arg(1000)
            .arg("NONSCALING"),
        "RESERVE full",
    );
    let mut accepted = Vec::new();
    let mut errors = 0;
    let all: Vec<Vec<u8>> = (0..1500)
        .map(|i| format!("full:{i}").into_bytes())
        .collect();
    for group in all.chunks(100) {
        let v = raw(con, common::cmd("BF.MADD").arg(k).arg(group));
        let Value::Array(replies) = v else {
            panic!("MADD reply {v:?}")
        };
        for (it, r) in group.iter().zip(&replies) {
            match r {
                Value::Int(0 | 1) => accepted.push(it.clone()),
                other => {
                    assert_eq!(
                        value_error(other).as_deref(),
                        Some("ERR non scaling filter is full")
                    );
                    errors += 1;
                }
            }
        }
    }
    assert!(errors > 0 && accepted.len() >= 1000);
    accepted
}

fn expected(filters: Range<usize>, upto: usize, into: &mut Expected) {
    for f in filters {
        into.entry(key(f)).or_default().extend(items(f, 0..upto));
    }
}

fn keys(con: &mut Connection) -> Vec<Vec<u8>> {
    let mut k: Vec<Vec<u8>> = common::cmd("KEYS *").query(con).unwrap();
    k.sort();
    k
}

/// Same keys and byte-identical SCANDUMP walks; returns the bytes compared.
fn verify_dumps(primary: &mut Connection, replica: &mut Connection, who: &str) -> usize {
    let pk = keys(primary);
    assert_eq!(keys(replica), pk, "{who}: key sets differ");
    let mut bytes = 0;
    for k in &pk {
        let a = scandump(primary, k);
        let b = scandump(replica, k);
        assert!(
            a == b,
            "{who}: SCANDUMP of {:?} differs ({} vs {} chunks; headers equal: {})",
            String::from_utf8_lossy(k),
            a.len(),
            b.len(),
            a.first() == b.first()
        );
        bytes += a.iter().map(|(_, d)| d.len()).sum::<usize>();
    }
    bytes
}

/// WAIT until `n` replicas acknowledged everything written on `con`.
fn wait_replicas(con: &mut Connection, n: i64) {
    let acked: i64 = common::cmd("WAIT").arg(n).arg(60_000).query(con).unwrap();
    assert!(acked >= n, "WAIT: {acked} of {n} replicas acknowledged");
}

/// Restarts replica `a` and waits (30 s at most) until its link to the primary is up.
fn restart_and_relink(a: &mut Server, what: &str) {
    a.restart(&[]);
    wait_until(what, Duration::from_secs(30), || link_up(a.port));
}

fn link_up(port: u16) -> bool {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
        .map(|mut c| info_field(&mut c, "replication", "master_link_status") == "up")
        .unwrap_or(false)
}

fn replicaof(port: u16, primary: u16) {
    let mut c = connect(port);
    let _: () = common::cmd("REPLICAOF 127.0.0.1")
        .arg(primary)
        .query(&mut c)
        .unwrap();
}

#[test]
fn replicas_hold_every_item_through_resync_restart_and_promotion() {
    let t0 = Instant::now();
    let cfg = [
        ("repl-backlog-size", "64mb"),
        ("repl-diskless-sync-delay", "0"),
    ];
    let primary = Server::start_with(&[], &cfg);
    let pport = primary.port.to_string();
    // Replica A: other module defaults, attached before the writes, restarted mid-stream.
    let mut a = Server::start_with(
        &OTHER_DEFAULTS,
        &[
            ("repl-diskless-sync-delay", "0"),
            // `--replicaof 127.0.0.1 <port>`: the harness passes one value per option.
            ("replicaof 127.0.0.1", pport.as_str()),
        ],
    );
    wait_until("replica A link", Duration::from_secs(30), || {
        link_up(a.port)
    });
    let mut pc = primary.conn();

    // Phase A: half of every filter, with the replica online.
    for f in 0..FILTERS {
        write(&mut pc, f, 0..PHASE_A);
    }
    let full_items = write_full_filter(&mut pc);
    wait_replicas(&mut pc, 1);
    let mut exp = Expected::new();
    expected(0..FILTERS, PHASE_A, &mut exp);
    exp.insert(b"rep:full".to_vec(), full_items.clone());
    let checked = assert_all_present(&mut a.conn(), "replica A (phase A)", &exp, 4000);
    println!("phase A: {checked} items on replica A, {:?}", t0.elapsed());

    // Phase B: the other half, written by another client while replica A is shut down,
    // restarted (partial resync), killed and restarted without its RDB (full sync).
    let progress = Arc::new(AtomicUsize::new(0));
    let writer = {
        let progress = progress.clone();
        let port = primary.port;
        std::thread::spawn(move || {
            let mut con = connect(port);
            for f in 0..FILTERS {
                write(&mut con, f, PHASE_A..PER_FILTER);
                progress.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(40));
            }
        })
    };
    let at = |n: usize| {
        wait_until("writer progress", Duration::from_secs(120), || {
            progress.load(Ordering::SeqCst) >= n
        });
        progress.load(Ordering::SeqCst)
    };
    let partial_before = info_u64(&mut pc, "stats", "sync_partial_ok");
    let full_before = info_u64(&mut pc, "stats", "sync_full");

    let p1 = at(8);
    // SHUTDOWN SAVE writes the replica's RDB with its replication id and offset.
    let _ = common::cmd("SHUTDOWN SAVE").query::<()>(&mut a.conn());
    let p2 = at(16);
    restart_and_relink(&mut a, "replica A link after restart");
    let partial_after = info_u64(&mut pc, "stats", "sync_partial_ok");
    let p3 = at(26);
    a.kill();
    let _ = std::fs::remove_file(a.dir.path().join("dump.rdb"));
    let p4 = at(34);
    restart_and_relink(&mut a, "replica A link after crash");
    let full_after = info_u64(&mut pc, "stats", "sync_full");
    let p5 = progress.load(Ordering::SeqCst);
    writer.join().expect("writer");
    println!(
        "phase B: writer at {p1}/{FILTERS} filters at SHUTDOWN, {p2} at restart, {p3} at kill -9, \
         {p4} at restart, {p5} when linked; primary sync_partial_ok {partial_before}->{partial_after}, \
         sync_full {full_before}->{full_after}"
    );
    assert_eq!(
        partial_after,
        partial_before + 1,
        "the restarted replica did a partial resync"
    );
    assert!(
        full_after > full_before,
        "the replica restarted without RDB did a full sync"
    );
    // Redis says "with master", Valkey "with primary".
    let log = a.log();
    assert!(
        ["master", "primary"]
            .iter()
            .any(|p| log.contains(&format!("Successful partial resynchronization with {p}"))),
        "replica log shows the partial resync"
    );
    wait_replicas(&mut pc, 1);

    // Replica B: default module arguments, attached after all writes (full sync).
    let b = Server::start_with(&[], &[("repl-diskless-sync-delay", "0")]);
    replicaof(b.port, primary.port);
    wait_until("replica B link", Duration::from_secs(30), || {
        link_up(b.port)
    });
    wait_replicas(&mut pc, 2);

    let mut exp = Expected::new();
    expected(0..FILTERS, PER_FILTER, &mut exp);
    exp.insert(b"rep:full".to_vec(), full_items.clone());
    let mut ac = a.conn();
    let mut bc = b.conn();
    let on_primary = assert_all_present(&mut pc, "primary", &exp, 4000);
    let on_a = assert_all_present(&mut ac, "replica A", &exp, 4000);
    let on_b = assert_all_present(&mut bc, "replica B", &exp, 4000);
    let bytes_a = verify_dumps(&mut pc, &mut ac, "replica A");
    let bytes_b = verify_dumps(&mut pc, &mut bc, "replica B");
    // `docs/commands.md` ("Replication and AOF"): an implicitly created filter has the primary's defaults (100, 0.01) on replica A
    // although its own are (7, 0.2).
    let debug: Vec<String> = common::cmd("BF.DEBUG").arg(key(2)).query(&mut ac).unwrap();
    assert!(
        debug[1].contains("capacity:100 ") && debug[1].ends_with("ratio:0.005"),
        "{debug:?}"
    );
    println!(
        "after phase B: {} keys; items present: primary {on_primary}, replica A {on_a}, replica B \
         {on_b}; SCANDUMP bytes identical: A {bytes_a}, B {bytes_b}; {:?}",
        exp.len(),
        t0.elapsed()
    );
    assert!(on_a >= FILTERS * PER_FILTER && on_b >= FILTERS * PER_FILTER);

    // Promotion: B becomes the primary, A follows B, writes continue on B.
    let _: () = common::cmd("REPLICAOF NO ONE").query(&mut bc).unwrap();
    let b_partial_before = info_u64(&mut bc, "stats", "sync_partial_ok");
    replicaof(a.port, b.port);
    wait_until("replica A follows B", Duration::from_secs(30), || {
        link_up(a.port)
            && info_field(&mut connect(a.port), "replication", "master_port") == b.port.to_string()
    });
    for f in 0..FILTERS {
        write(&mut bc, f, PER_FILTER..PER_FILTER + PHASE_C);
    }
    for f in FILTERS..FILTERS + NEW_FILTERS {
        write(&mut bc, f, 0..PHASE_A);
    }
    wait_replicas(&mut bc, 1);
    let b_partial_after = info_u64(&mut bc, "stats", "sync_partial_ok");
    let mut exp_c = Expected::new();
    expected(0..FILTERS, PER_FILTER + PHASE_C, &mut exp_c);
    expected(FILTERS..FILTERS + NEW_FILTERS, PHASE_A, &mut exp_c);
    exp_c.insert(b"rep:full".to_vec(), full_items);
    let on_b = assert_all_present(&mut bc, "promoted B", &exp_c, 4000);
    let on_a = assert_all_present(&mut ac, "replica A of B", &exp_c, 4000);
    let bytes = verify_dumps(&mut bc, &mut ac, "replica A of B");
    // The old primary never saw the new writes.
    let old: Vec<i64> = common::cmd("BF.MEXISTS")
        .arg(key(0))
        .arg(item(0, PER_FILTER + 1))
        .arg(item(0, PER_FILTER + 2))
        .query(&mut pc)
        .unwrap();
    println!(
        "after promotion: {} keys; items present: B {on_b}, A {on_a}; SCANDUMP bytes identical \
         {bytes}; B sync_partial_ok {b_partial_before}->{b_partial_after}; old primary answers \
         {old:?} for two new items; total {:?}",
        exp_c.len(),
        t0.elapsed()
    );
    assert_eq!(
        b_partial_after,
        b_partial_before + 1,
        "A continued from B with a partial resync"
    );
    for s in [&primary, &a, &b] {
        assert!(!s.log().contains("panicked"), "panic in a server log");
    }
}
