//! Crash safety: with `appendonly yes` and `appendfsync always`, a
//! writer adds items (BF.ADD, BF.MADD, BF.INSERT, implicit creation) to Bloom filters and
//! writes to cuckoo filters (CF.ADD, CF.INSERT, implicit creation, CF.DEL of an item it added
//! once) and records every acknowledged reply; the server is killed with SIGKILL at a
//! pseudo-random moment and restarted on the same directory; every acknowledged add must be
//! present (BF.MEXISTS / CF.MEXISTS). With `appendfsync always` a write is in the AOF before
//! its reply, so an acknowledged CF.DEL stays done too: every cuckoo filter must be
//! byte-identical (its CF.SCANDUMP walk) to a twin the core built from the acknowledged writes
//! (plus the one write in flight at the kill, when the restarted server has it), and each
//! deleted item the twin no longer finds (no other item shares its fingerprint and buckets) is
//! answered 0. Three plain crashes, then a crash while BGREWRITEAOF is in progress and one while
//! BGSAVE is in progress (`aof_rewrite_in_progress:1` / `rdb_bgsave_in_progress:1` checked just
//! before the kill), with three Bloom filters of ~50 MB each and a cuckoo filter of 32 MiB in
//! the dataset; after those, a rewrite that completes and one more restart. The orphaned fork
//! child of a killed server is killed by its pid.
//!
//! Also a crash while RF.BUILD runs: the key is staging after the restart, from the AOF and from
//! an RDB saved during the build.
//!
//! The seed of the crash moments is printed (`BF_CRASH_SEED=…`); set it to repeat a run.
//! `BF_SOAK=1` runs 20 plain crashes instead of 3. Runs in ~5–10 s.

mod common;
mod robust;

use common::{Rng, Server};
use redis::{Connection, ConnectionLike, Value};
use robust::{
    assert_all_present, children_of, info_u64, kill_pid, raw, value_error, wait_until, CfShape,
    CfTwins, CfWrite, Expected,
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
/// Cuckoo keys `crc:0` … `crc:7`: the first ones made by CF.RESERVE with these shapes (small
/// ones, which grow sub-filters under the writes), the others implicitly by the writer.
const CF_KEYS: u64 = 8;
const CF_SHAPES: [CfShape; 4] = [
    CfShape {
        capacity: 64,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 2,
    },
    CfShape {
        capacity: 16,
        bucket_size: 1,
        max_iterations: 5,
        expansion: 4,
    },
    CfShape {
        capacity: 500,
        bucket_size: 4,
        max_iterations: 50,
        expansion: 1,
    },
    CfShape {
        capacity: 200,
        bucket_size: 8,
        max_iterations: 10,
        expansion: 2,
    },
];
/// The big cuckoo filter: 2^24 buckets of 2, one 32 MiB sub-filter (two AOF chunks).
const CF_BIG_CAPACITY: u64 = 1 << 25;

fn connect(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(10))
        .expect("connect")
}

/// What a writer did: acknowledged Bloom adds, acknowledged cuckoo writes in order, the cuckoo
/// write in flight when the connection failed (the restarted server may or may not have it),
/// and the number of commands acknowledged.
struct Written {
    acked: Acked,
    cuckoo: Vec<(Vec<u8>, CfWrite)>,
    in_flight: Option<(Vec<u8>, CfWrite)>,
    commands: usize,
}

/// A cuckoo write of the writer: CF.DEL of an item it added (`added`, taken out of it) one time
/// in six, else CF.ADD or CF.INSERT (2–10 items, sometimes with CAPACITY 1000) to `crc:*`.
fn cuckoo_write(
    rng: &mut Rng,
    round: usize,
    n: &mut usize,
    added: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> (Vec<u8>, CfWrite) {
    if !added.is_empty() && rng.below(6) == 0 {
        let (k, it) = added.swap_remove(rng.below(added.len() as u64) as usize);
        return (k, CfWrite::Del(it));
    }
    let k = format!("crc:{}", rng.below(CF_KEYS)).into_bytes();
    let count = if rng.below(2) == 0 {
        1
    } else {
        2 + rng.below(9) as usize
    };
    let its: Vec<Vec<u8>> = (0..count)
        .map(|_| {
            *n += 1;
            format!("c{round}:{n}").into_bytes()
        })
        .collect();
    let w = match (count, rng.below(4)) {
        (1, _) => CfWrite::Add(its[0].clone()),
        (_, 0) => CfWrite::Insert(Some(1000), its),
        _ => CfWrite::Insert(None, its),
    };
    (k, w)
}

/// Adds until the connection fails (the server was killed) or `stop` is set.
fn writer(port: u16, round: usize, seed: u64, stop: Arc<AtomicBool>) -> Written {
    let mut con = connect(port);
    let mut rng = Rng::new(seed);
    let mut acked = Vec::new();
    let mut cuckoo = Vec::new();
    let mut added = Vec::new();
    let mut commands = 0;
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        if rng.below(100) < 30 {
            let (k, w) = cuckoo_write(&mut rng, round, &mut n, &mut added);
            let Ok(reply) = con.req_command(&w.command(&k)) else {
                return Written {
                    acked,
                    cuckoo,
                    in_flight: Some((k, w)),
                    commands,
                };
            };
            commands += 1;
            w.check_reply(&reply).unwrap();
            added.extend(w.added().iter().map(|it| (k.clone(), it.clone())));
            cuckoo.push((k, w));
            continue;
        }
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
    Written {
        acked,
        cuckoo,
        in_flight: None,
        commands,
    }
}

/// The cuckoo filters' expected state: their twins and the deleted (key, item) pairs.
#[derive(Default)]
struct Cuckoos {
    twins: CfTwins,
    deleted: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Cuckoos {
    /// Records a write the server applied: on the twin, and in `exp` (its items added, the
    /// deleted one taken out).
    fn record(&mut self, exp: &mut Expected, key: &[u8], w: &CfWrite) {
        self.twins.apply(key, w);
        let items = exp.entry(key.to_vec()).or_default();
        items.extend_from_slice(w.added());
        if let CfWrite::Del(it) = w {
            let at = items
                .iter()
                .position(|x| x == it)
                .expect("a deleted item was added");
            items.swap_remove(at);
            self.deleted.push((key.to_vec(), it.clone()));
        }
    }

    /// After a restart: the write in flight at the kill (if any) counts when the server has it
    /// (its key differs from the twin without it and matches the twin with it). Returns
    /// whether it was applied.
    fn settle(
        &mut self,
        con: &mut Connection,
        exp: &mut Expected,
        w: Option<(Vec<u8>, CfWrite)>,
    ) -> bool {
        let Some((k, w)) = w else { return false };
        let without = match self.twins.0.get(&k) {
            Some(_) => self.twins.matches(con, &k),
            None => common::cmd("EXISTS").arg(&k).query::<i64>(con).unwrap() == 0,
        };
        if !without {
            self.record(exp, &k, &w);
        }
        !without
    }

    /// Every filter byte-identical to its twin; every deleted item the twin no longer finds is
    /// answered 0 by CF.MEXISTS. Returns the number of such deleted items.
    fn check(&self, con: &mut Connection, who: &str) -> usize {
        self.twins.assert_identical(con, who);
        let mut gone = 0;
        for (k, it) in &self.deleted {
            if !self.twins.0[k].contains(it) {
                let r: Vec<i64> = common::cmd("CF.MEXISTS").arg(k).arg(it).query(con).unwrap();
                assert_eq!(
                    r,
                    [0],
                    "{who}: deleted {:?} still found",
                    String::from_utf8_lossy(it)
                );
                gone += 1;
            }
        }
        gone
    }
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
    cuckoo_writes: usize,
    in_flight_applied: bool,
    deleted_gone: usize,
    commands: usize,
    delay_ms: u64,
    orphans: usize,
}

/// One crash: writer running, maybe a background job, SIGKILL after a pseudo-random delay,
/// restart, every acknowledged item checked.
fn crash_once(
    s: &mut Server,
    exp: &mut Expected,
    cf: &mut Cuckoos,
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
    let written = w.join().expect("writer");
    let acked_items = written.acked.len();
    for (k, it) in written.acked {
        exp.entry(k).or_default().push(it);
    }
    for (k, w) in &written.cuckoo {
        cf.record(exp, k, w);
    }
    s.restart(&[]);
    let mut con = s.conn();
    let who = format!("after crash {round} ({moment:?})");
    let in_flight_applied = cf.settle(&mut con, exp, written.in_flight);
    assert_all_present(&mut con, &who, exp, 2000);
    let deleted_gone = cf.check(&mut con, &who);
    Crash {
        acked_items,
        cuckoo_writes: written.cuckoo.len(),
        in_flight_applied,
        deleted_gone,
        commands: written.commands,
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
    let mut cf = Cuckoos::default();
    for (i, shape) in CF_SHAPES.iter().enumerate() {
        let (k, w) = (format!("crc:{i}").into_bytes(), CfWrite::Reserve(*shape));
        w.check_reply(&raw(&mut con, &w.command(&k))).unwrap();
        cf.record(&mut exp, &k, &w);
    }
    let mut round = 0;
    let mut total_checked = 0;
    for _ in 0..plain_rounds {
        round += 1;
        let c = crash_once(&mut s, &mut exp, &mut cf, round, &mut rng, Moment::Plain);
        let n: usize = exp.values().map(Vec::len).sum();
        total_checked += n;
        println!(
            "crash {round} (plain) after {} ms: {} commands / {} Bloom items and {} cuckoo \
             writes acknowledged in the round (write in flight applied: {}); {n} acknowledged \
             items present after restart, {} cuckoo filters byte-identical to their twins, {} \
             deleted items absent",
            c.delay_ms,
            c.commands,
            c.acked_items,
            c.cuckoo_writes,
            c.in_flight_applied,
            cf.twins.0.len(),
            c.deleted_gone
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
    let big = b"crcbig".to_vec();
    let reserve = CfWrite::Reserve(CfShape {
        capacity: CF_BIG_CAPACITY,
        ..CF_SHAPES[0]
    });
    for w in std::iter::once(reserve).chain((0..20).map(|g| {
        CfWrite::Insert(
            None,
            (0..1000)
                .map(|i| format!("cbig{g}:{i}").into_bytes())
                .collect(),
        )
    })) {
        w.check_reply(&raw(&mut con, &w.command(&big))).unwrap();
        cf.record(&mut exp, &big, &w);
    }
    let used: u64 = info_u64(&mut con, "memory", "used_memory");
    println!("dataset: {} keys, used_memory {used} bytes", exp.len());
    assert!(used > 150_000_000, "big filters in memory");
    for moment in [Moment::DuringRewrite, Moment::DuringBgsave] {
        round += 1;
        let c = crash_once(&mut s, &mut exp, &mut cf, round, &mut rng, moment);
        let n: usize = exp.values().map(Vec::len).sum();
        total_checked += n;
        println!(
            "crash {round} ({moment:?}) {} ms into the job, {} fork child(ren) killed: {} commands / \
             {} Bloom items and {} cuckoo writes acknowledged in the round (write in flight \
             applied: {}); {n} acknowledged items present after restart, cuckoo filters \
             byte-identical, {} deleted items absent",
            c.delay_ms,
            c.orphans,
            c.commands,
            c.acked_items,
            c.cuckoo_writes,
            c.in_flight_applied,
            c.deleted_gone
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
    let gone = cf.check(&mut s.conn(), "after a completed rewrite");
    assert!(
        gone > 0,
        "deleted items checked: {} deletions",
        cf.deleted.len()
    );
    let grown = cf.twins.0.values().filter(|t| t.filters.len() > 1).count();
    assert!(grown > 0, "some cuckoo filter grew sub-filters");
    assert!(!s.log().contains("panicked"));
    println!(
        "{round} crashes injected (kill -9), 0 acknowledged adds lost; {n} items present at the \
         end, {total_checked} item checks in all; {} cuckoo filters ({grown} grown to several \
         sub-filters) byte-identical to their twins, {gone} of {} deleted items absent (the \
         others share a fingerprint and buckets with a present item); {:?}",
        cf.twins.0.len(),
        cf.deleted.len(),
        t0.elapsed()
    );
}

/// Extra `--name value` configs of a server.
type Configs<'a> = &'a [(&'a str, &'a str)];

/// Items staged in the Ribbon key that is building at the crash: enough for a build of a few
/// hundred milliseconds, so the kill lands while it runs.
const RF_BUILD_ITEMS: u64 = 2_000_000;

/// A crash while RF.BUILD runs on its worker thread leaves the key staging after the restart,
/// from the AOF (`appendfsync always`: the staged items were acknowledged, the build was not)
/// and from an RDB written by `SAVE` while the build ran: the same set, every item present, and
/// a new RF.BUILD then builds it.
#[test]
fn a_crash_during_rf_build_leaves_the_key_staging() {
    // (persistence, configs, command run while the build runs before the kill)
    let cases: &[(&str, Configs, Option<&str>)] = &[
        (
            "AOF",
            &[("appendonly", "yes"), ("appendfsync", "always")],
            None,
        ),
        ("RDB", &[], Some("SAVE")),
    ];
    for &(name, configs, during) in cases {
        let t0 = Instant::now();
        let mut s = Server::start_with(&[], configs);
        let mut con = s.conn();
        let item = |i: u64| format!("rfc:{i}").into_bytes();
        for from in (0..RF_BUILD_ITEMS).step_by(20_000) {
            let batch: Vec<Vec<u8>> = (from..from + 20_000).map(item).collect();
            let _: Vec<i64> = common::cmd("RF.MADD")
                .arg("rfk")
                .arg(batch)
                .query(&mut con)
                .unwrap();
        }
        let mut builder = s.conn();
        builder
            .send_packed_command(&common::cmd("RF.BUILD rfk").get_packed_command())
            .unwrap();
        // The build runs once a write to the key is refused for it.
        let mut polls = 0;
        wait_until("RF.BUILD running", Duration::from_secs(30), || {
            polls += 1;
            let r = raw(&mut con, &common::cmd("RF.ADD rfk x"));
            value_error(&r).as_deref() == Some("ERR RF.BUILD is running on this key")
        });
        let state: Vec<String> = common::cmd("RF.INFO rfk STATE").query(&mut con).unwrap();
        assert_eq!(state, ["staging"], "{name}: while the build runs");
        if let Some(c) = during {
            let _: () = common::cmd(c).query(&mut con).unwrap();
        }
        s.kill();
        assert!(
            builder.recv_response().is_err(),
            "{name}: the building client got no reply"
        );
        s.restart(&[]);
        let mut con = s.conn();
        let state: Vec<String> = common::cmd("RF.INFO rfk STATE").query(&mut con).unwrap();
        assert_eq!(state, ["staging"], "{name}: after the restart");
        let card: u64 = common::cmd("RF.CARD rfk").query(&mut con).unwrap();
        assert_eq!(card, RF_BUILD_ITEMS, "{name}: the staged set");
        // Every item present while staging, then in the filter a new RF.BUILD makes.
        let sample: Vec<Vec<u8>> = (0..RF_BUILD_ITEMS).step_by(997).map(item).collect();
        for want in ["staging", "built"] {
            if want == "built" {
                let ok: String = common::cmd("RF.BUILD rfk").query(&mut con).unwrap();
                assert_eq!(ok, "OK", "{name}: a new build");
            }
            let state: Vec<String> = common::cmd("RF.INFO rfk STATE").query(&mut con).unwrap();
            assert_eq!(state, [want], "{name}");
            let present: Vec<i64> = common::cmd("RF.MEXISTS")
                .arg("rfk")
                .arg(&sample)
                .query(&mut con)
                .unwrap();
            assert_eq!(present, vec![1; sample.len()], "{name}: {want} items");
        }
        assert!(!s.log().contains("panicked"));
        println!(
            "{name}: killed while RF.BUILD of {RF_BUILD_ITEMS} items ran ({polls} polls until \
             it ran{}); restarted staging with all {card} items, then built; {:?}",
            during
                .map(|c| format!(", {c} during it"))
                .unwrap_or_default(),
            t0.elapsed()
        );
    }
}
