//! Replication and AOF replay must not depend on the replica's (or the replaying server's)
//! `bf.expansion-factor`: a primary replicates an implicit creation as `BF.INSERT … EXPANSION x
//! ITEMS …`, a Redis 8 `BF.RESERVE` without `EXPANSION` with it spelled out, and a
//! `BF.RESERVE … EXPANSION x` as sent. A replica or a replay whose factor is 0 (non-scaling
//! filters by default, and on Redis 8 "Nonscaling filters cannot expand" for a client's
//! `EXPANSION x`) must still build the primary's filter: same `BF.INFO`, same digest, every
//! item the primary holds. On every server of `common::servers()`.

mod common;

use common::{cmd, Server};
use std::time::{Duration, Instant};

/// The keys the primary writes, each with the command creating it, and the items added after.
const CREATIONS: &[(&str, &str)] = &[
    ("implicit-add", "BF.ADD implicit-add seed"),
    ("implicit-insert", "BF.INSERT implicit-insert ITEMS seed"),
    (
        "insert-error",
        "BF.INSERT insert-error ERROR 0.9 ITEMS seed",
    ),
    ("reserve-plain", "BF.RESERVE reserve-plain 0.01 100"),
    (
        "reserve-expansion",
        "BF.RESERVE reserve-expansion 0.01 100 EXPANSION 3",
    ),
];

fn info(con: &mut redis::Connection, key: &str) -> String {
    let v: redis::RedisResult<redis::Value> = cmd("BF.INFO").arg(key).query(con);
    common::reply_text(&v)
}

/// The 300 items every test adds to each filter after creating it.
fn items() -> Vec<String> {
    (0..300).map(|i| format!("item{i}")).collect()
}

/// Runs each creation of [`CREATIONS`] on `con` and adds `items` to the filter it made.
fn create_and_fill(con: &mut redis::Connection, items: &[String]) {
    for (key, line) in CREATIONS {
        let _: redis::Value = cmd(line).query(con).unwrap();
        for item in items {
            let _: redis::Value = cmd("BF.ADD").arg(*key).arg(item).query(con).unwrap();
        }
    }
}

/// How many of `items` BF.MEXISTS on `key` does not find (a false negative each), as a line of
/// the report (`line`: the creating command; `whose`: whose copy it is), or None when it finds
/// them all.
fn missing(
    con: &mut redis::Connection,
    key: &str,
    items: &[String],
    line: &str,
    whose: &str,
) -> Option<String> {
    let held: redis::RedisResult<Vec<i64>> = cmd("BF.MEXISTS").arg(key).arg(items).query(con);
    let missing = held.map(|held| held.iter().filter(|&&x| x != 1).count());
    (missing != Ok(0)).then(|| format!("{line}: {whose} misses {missing:?} of the 300 items"))
}

fn digest(con: &mut redis::Connection, key: &str) -> String {
    let v: redis::RedisResult<redis::Value> = cmd("DEBUG DIGEST-VALUE").arg(key).query(con);
    common::reply_text(&v)
}

/// `BF.INFO` and `DEBUG DIGEST-VALUE` of each filter of [`CREATIONS`] on `con`, in its order.
fn states(con: &mut redis::Connection) -> Vec<(String, String)> {
    CREATIONS
        .iter()
        .map(|(key, _)| (info(con, key), digest(con, key)))
        .collect()
}

/// How `con`'s filters (`whose` copies) differ from `want` (from [`states`] of the source,
/// `source` naming it): one line per filter whose `BF.INFO` or digest differs, and one per
/// filter that misses some of `items` (see [`missing`]); empty when they are the same.
fn differences(
    con: &mut redis::Connection,
    want: &[(String, String)],
    items: &[String],
    source: &str,
    whose: &str,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for ((key, line), (wi, wd)) in CREATIONS.iter().zip(want) {
        let (gi, gd) = (info(con, key), digest(con, key));
        if (&gi, &gd) != (wi, wd) {
            wrong.push(format!("{line}: {source} {wi} {wd}, {whose} {gi} {gd}"));
        }
        wrong.extend(missing(con, key, items, line, whose));
    }
    wrong
}

#[test]
fn a_replica_with_expansion_factor_0_builds_the_primarys_filters() {
    for (name, bin) in common::servers() {
        replica_with_factor_0(name, &bin);
    }
}

fn replica_with_factor_0(name: &str, bin: &str) {
    let primary = Server::start_on(bin, &[], &[("bf.expansion-factor", "2")]);
    let pport = primary.port.to_string();
    let replica = Server::start_on(
        bin,
        &[],
        &[
            ("bf.expansion-factor", "0"),
            ("replicaof 127.0.0.1", pport.as_str()),
        ],
    );
    let mut p = primary.conn();
    let mut r = replica.conn();
    let t0 = Instant::now();
    loop {
        let s: String = cmd("INFO replication").query(&mut r).unwrap();
        if s.contains("master_link_status:up") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "replica link");
        std::thread::sleep(Duration::from_millis(50));
    }
    // 300 items: every filter of capacity 100 has to scale on the primary.
    let items = items();
    create_and_fill(&mut p, &items);
    let _: i64 = cmd("WAIT 1 5000").query(&mut p).unwrap();
    let primary_states = states(&mut p);
    let wrong = differences(&mut r, &primary_states, &items, "primary", "replica");
    assert!(
        wrong.is_empty(),
        "{name}: replica differs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_aof_written_with_factor_2_replays_the_same_on_a_server_with_factor_0() {
    for (name, bin) in common::servers() {
        aof_replay_with_factor_0(name, &bin);
    }
}

fn aof_replay_with_factor_0(name: &str, bin: &str) {
    let mut extra = common::AOF_NO_PREAMBLE.to_vec();
    extra.push(("bf.expansion-factor", "2"));
    let mut s = Server::start_on(bin, &[], &extra);
    let mut con = s.conn();
    let items = items();
    create_and_fill(&mut con, &items);
    let before = states(&mut con);
    drop(con);
    s.restart(&[("bf.expansion-factor", "0")]);
    let mut con = s.conn();
    let wrong = differences(&mut con, &before, &items, "before", "the replay");
    assert!(
        wrong.is_empty(),
        "{name}: AOF replay differs:\n{}",
        wrong.join("\n")
    );
}
