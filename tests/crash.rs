//! Crash safety: with `appendonly yes` and `appendfsync always`, a
//! writer adds items (BF.ADD, BF.MADD, BF.INSERT, implicit creation) and records every
//! acknowledged reply; the server is killed with SIGKILL at a pseudo-random moment and
//! restarted on the same directory; every acknowledged add must be present. Three plain
//! crashes, then a crash while BGREWRITEAOF is in progress and one while BGSAVE is in progress
//! (`aof_rewrite_in_progress:1` / `rdb_bgsave_in_progress:1` checked just before the kill), with
//! three filters of ~50 MB each in the dataset; after those, a rewrite that completes and one more
//! restart. The orphaned fork child of a killed server is killed by its pid.
//!
//! The seed of the crash moments is printed (`BF_CRASH_SEED=…`); set it to repeat a run.
//! `BF_SOAK=1` runs 20 plain crashes instead of 3. Runs in ~5–10 s.

mod common;
mod robust;

use common::{Rng, Server};
use redis::{Connection, ConnectionLike, Value};
use robust::{
    assert_all_present, children_of, info_u64, kill_pid, raw, value_error, wait_until, Expected,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Acknowledged (key, item) pairs.
type Acked = Vec<(Vec<u8>, Vec<u8>)>;

/// Big filters (~51 MB of bits each: 20 M items at 0.0001) so that a background save takes time.
const BIG_FILTERS: usize = 3;
const BIG_CAPACITY: u64 = 20_000_000;
/// Per-key delay of the fork child (Redis' `rdb-key-save-delay`, µs), so the kill lands while
/// the background job is certainly running.
const KEY_SAVE_DELAY_US: u64 = 100_000;

fn connect(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(10))
        .expect("connect")
}

/// Adds until the connection fails (the server was killed) or `stop` is set; returns the
/// acknowledged (key, item) pairs and the number of commands acknowledged.
fn writer(port: u16, round: usize, seed: u64, stop: Arc<AtomicBool>) -> (Acked, usize) {
    let mut con = connect(port);
    let mut rng = Rng::new(seed);
    let mut acked = Vec::new();
    let mut commands = 0;
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let k = format!("cr:{}", rng.below(24)).into_bytes();
        let count = match rng.below(100) {
            0..=59 => 1,
            _ => 2 + rng.below(9) as usize,
        };
        let its: Vec<Vec<u8>> = (0..count)
            .map(|j| {
                n += 1;
                if j % 5 == 4 {
                    let mut b = vec![0u8, 0xff, round as u8];
                    b.extend_from_slice(&(n as u64).to_le_bytes());
                    b
                } else {
                    format!("r{round}:{n}").into_bytes()
                }
            })
            .collect();
        let mut cmd;
        if count == 1 {
            cmd = common::cmd("BF.ADD");
            cmd.arg(&k).arg(&its[0]);
        } else if rng.below(3) == 0 {
            cmd = common::cmd("BF.INSERT");
            cmd.arg(&k)
                .arg("CAPACITY")
                .arg(40)
                .arg("ERROR")
                .arg(0.01)
                .arg("ITEMS")
                .arg(&its);
        } else {
            cmd = common::cmd("BF.MADD");
            cmd.arg(&k).arg(&its);
        }
        let reply = match con.req_command(&cmd) {
            Ok(v) => v,
            Err(_) => break, // killed
        };
        commands += 1;
        let replies = match reply {
            Value::Array(a) => a,
            v => vec![v],
        };
        assert_eq!(replies.len(), its.len(), "one reply per item");
        for (it, r) in its.into_iter().zip(replies) {
            match r {
                Value::Int(0 | 1) => acked.push((k.clone(), it)),
                other => panic!("unexpected reply {other:?}"),
            }
        }
    }
    (acked, commands)
}

/// What runs alongside the writer before the kill.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Moment {
    Plain,
    DuringRewrite,
    DuringBgsave,
}

struct Crash {
    acked_items: usize,
    commands: usize,
    delay_ms: u64,
    orphans: usize,
}

/// One crash: writer running, maybe a background job, SIGKILL after a pseudo-random delay,
/// restart, every acknowledged item checked.
fn crash_once(
    s: &mut Server,
    exp: &mut Expected,
    round: usize,
    rng: &mut Rng,
    moment: Moment,
) -> Crash {
    let stop = Arc::new(AtomicBool::new(false));
    let port = s.port;
    let seed = rng.next();
    let w = {
        let stop = stop.clone();
        std::thread::spawn(move || writer(port, round, seed, stop))
    };
    let mut con = s.conn();
    let pid = info_u64(&mut con, "server", "process_id") as u32;
    let delay_ms = 150 + rng.below(1200);
    let mut orphans = Vec::new();
    match moment {
        Moment::Plain => std::thread::sleep(Duration::from_millis(delay_ms)),
        Moment::DuringRewrite | Moment::DuringBgsave => {
            let (cmd, flag) = if moment == Moment::DuringRewrite {
                ("BGREWRITEAOF", "aof_rewrite_in_progress")
            } else {
                ("BGSAVE", "rdb_bgsave_in_progress")
            };
            std::thread::sleep(Duration::from_millis(100));
            let _: () = common::cmd("CONFIG SET rdb-key-save-delay")
                .arg(KEY_SAVE_DELAY_US)
                .query(&mut con)
                .unwrap();
            let v = raw(&mut con, &redis::cmd(cmd));
            assert!(value_error(&v).is_none(), "{cmd}: {v:?}");
            wait_until(flag, Duration::from_secs(10), || {
                info_u64(&mut con, "persistence", flag) == 1
            });
            std::thread::sleep(Duration::from_millis(delay_ms));
            assert_eq!(
                info_u64(&mut con, "persistence", flag),
                1,
                "{flag} still 1 at the kill"
            );
            orphans = children_of(pid);
            assert!(!orphans.is_empty(), "the fork child is running");
        }
    }
    s.kill();
    for &child in &orphans {
        kill_pid(child);
    }
    stop.store(true, Ordering::SeqCst);
    let (acked, commands) = w.join().expect("writer");
    let acked_items = acked.len();
    for (k, it) in acked {
        exp.entry(k).or_default().push(it);
    }
    s.restart(&[]);
    let mut con = s.conn();
    assert_all_present(
        &mut con,
        &format!("after crash {round} ({moment:?})"),
        exp,
        2000,
    );
    Crash {
        acked_items,
        commands,
        delay_ms,
        orphans: orphans.len(),
    }
}

#[test]
fn acknowledged_adds_survive_kill_9() {
    let t0 = Instant::now();
    let mut rng = Rng::new(robust::seed_from_env("BF_CRASH_SEED"));
    let plain_rounds = if std::env::var_os("BF_SOAK").is_some() {
        20
    } else {
        3
    };
    let mut s = Server::start_with(&[], &[("appendonly", "yes"), ("appendfsync", "always")]);
    let mut con = s.conn();
    // A few filters created explicitly; the writer creates the rest implicitly.
    for i in 0..4 {
        let _: () = common::cmd("BF.RESERVE")
            .arg(format!("cr:{i}"))
            .arg(0.001)
            .arg(30)
            .arg("EXPANSION")
            .arg(1 + i)
            .query(&mut con)
            .unwrap();
    }
    let mut exp = Expected::new();
    let mut round = 0;
    let mut total_checked = 0;
    for _ in 0..plain_rounds {
        round += 1;
        let c = crash_once(&mut s, &mut exp, round, &mut rng, Moment::Plain);
        let n: usize = exp.values().map(Vec::len).sum();
        total_checked += n;
        println!(
            "crash {round} (plain) after {} ms: {} commands / {} items acknowledged in the round; \
             {n} acknowledged items present after restart",
            c.delay_ms, c.commands, c.acked_items
        );
    }

    // Big filters, then crashes during the background jobs.
    let mut con = s.conn();
    for b in 0..BIG_FILTERS {
        let k = format!("crbig:{b}").into_bytes();
        let _: () = common::cmd("BF.RESERVE")
            .arg(&k)
            .arg(0.0001)
            .arg(BIG_CAPACITY)
            .query(&mut con)
            .unwrap();
        let its: Vec<Vec<u8>> = (0..20_000)
            .map(|i| format!("big{b}:{i}").into_bytes())
            .collect();
        for g in its.chunks(5000) {
            let _: Vec<i64> = common::cmd("BF.MADD")
                .arg(&k)
                .arg(g)
                .query(&mut con)
                .unwrap();
        }
        exp.insert(k, its);
    }
    let used: u64 = info_u64(&mut con, "memory", "used_memory");
    println!("dataset: {} keys, used_memory {used} bytes", exp.len());
    assert!(used > 150_000_000, "big filters in memory");
    for moment in [Moment::DuringRewrite, Moment::DuringBgsave] {
        round += 1;
        let c = crash_once(&mut s, &mut exp, round, &mut rng, moment);
        let n: usize = exp.values().map(Vec::len).sum();
        total_checked += n;
        println!(
            "crash {round} ({moment:?}) {} ms into the job, {} fork child(ren) killed: {} commands / \
             {} items acknowledged in the round; {n} acknowledged items present after restart",
            c.delay_ms, c.orphans, c.commands, c.acked_items
        );
    }

    // A rewrite that completes, then a clean restart: still everything.
    let mut con = s.conn();
    let _: Value = common::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    wait_until("rewrite done", Duration::from_secs(60), || {
        info_u64(&mut con, "persistence", "aof_rewrite_in_progress") == 0
            && info_u64(&mut con, "persistence", "aof_rewrite_scheduled") == 0
    });
    assert_eq!(
        robust::info_field(&mut con, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    s.restart(&[]);
    let n = assert_all_present(&mut s.conn(), "after a completed rewrite", &exp, 2000);
    total_checked += n;
    assert!(!s.log().contains("panicked"));
    println!(
        "{round} crashes injected (kill -9), 0 acknowledged adds lost; {n} items present at the \
         end, {total_checked} item checks in all; {:?}",
        t0.elapsed()
    );
}
