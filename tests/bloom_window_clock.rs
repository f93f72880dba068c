//! Time is the primary's clock: replicas whose clocks are five minutes ahead or behind, and
//! an AOF replay on a server whose clock is off, reach byte-identical window filters, and the
//! replicas answer present every item their primary holds.
//!
//! Servers are given a skewed clock through `REDIS_BF_CLOCK_OFFSET_MS`, which the child
//! process inherits from this test process; this file holds a single test so that no other
//! server started concurrently inherits it.

mod common;

use std::time::Duration;

use common::{scandump, Server};
use redis::Connection;

fn start_skewed(offset_ms: i64, extra: &[(&str, &str)]) -> Server {
    std::env::set_var("REDIS_BF_CLOCK_OFFSET_MS", offset_ms.to_string());
    let s = Server::start_with(&[], extra);
    std::env::remove_var("REDIS_BF_CLOCK_OFFSET_MS");
    s
}

fn wait_replicas(con: &mut Connection, n: i64) {
    for _ in 0..300 {
        let got: i64 = redis::cmd("WAIT").arg(n).arg(100).query(con).unwrap();
        if got >= n {
            return;
        }
    }
    panic!("replicas did not catch up");
}

#[test]
fn skewed_replicas_and_aof_replay_stay_identical() {
    let mut primary = Server::start_with(&[], &[("appendonly", "yes")]);
    let mut pc = primary.conn();
    let pport = primary.port.to_string();
    let ahead = start_skewed(300_000, &[("replicaof 127.0.0.1", pport.as_str())]);
    let behind = start_skewed(-300_000, &[("replicaof 127.0.0.1", pport.as_str())]);
    wait_replicas(&mut pc, 2);
    let _: String = common::cmd("BF.RESERVE w 0.01 400 WINDOW 1000")
        .query(&mut pc)
        .unwrap();
    for g in 0..8 {
        let items: Vec<String> = (0..150).map(|i| format!("{g}:{i}")).collect();
        let _: Vec<i64> = common::cmd("BF.MADD w").arg(&items).query(&mut pc).unwrap();
        let _: Vec<i64> = common::cmd("BF.INSERT implicit WINDOW 600 ITEMS")
            .arg(&items[..20])
            .query(&mut pc)
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_replicas(&mut pc, 2);
    let expected: Vec<_> = ["w", "implicit"]
        .iter()
        .map(|k| scandump(&mut pc, k.as_bytes()))
        .collect();
    assert!(
        expected[0].len() >= 5,
        "several generations: {}",
        expected[0].len()
    );
    for (name, server) in [("ahead", &ahead), ("behind", &behind)] {
        let mut rc = server.conn();
        for (k, e) in ["w", "implicit"].iter().zip(&expected) {
            assert_eq!(&scandump(&mut rc, k.as_bytes()), e, "{name}: {k}");
        }
    }
    // Replicas read at the generation their primary last wrote, whatever their own clocks
    // say: the one five minutes ahead (by whose clock every item has aged out) and the one
    // behind both hold every item the primary holds. (They may forget later than the primary,
    // which reads its own clock between writes: never earlier.)
    let all: Vec<String> = (0..8)
        .flat_map(|g| (0..150).map(move |i| format!("{g}:{i}")))
        .collect();
    let on_primary: Vec<i64> = common::cmd("BF.MEXISTS w")
        .arg(&all)
        .query(&mut pc)
        .unwrap();
    let primary_card: i64 = common::cmd("BF.CARD w").query(&mut pc).unwrap();
    let present = on_primary.iter().filter(|&&v| v == 1).count();
    assert!(
        present >= 150,
        "the primary holds the last generation: {present}"
    );
    for (name, server) in [("ahead", &ahead), ("behind", &behind)] {
        let mut rc = server.conn();
        let on_replica: Vec<i64> = common::cmd("BF.MEXISTS w")
            .arg(&all)
            .query(&mut rc)
            .unwrap();
        let lost: Vec<&String> = all
            .iter()
            .zip(on_primary.iter().zip(&on_replica))
            .filter(|(_, (p, r))| **p == 1 && **r == 0)
            .map(|(item, _)| item)
            .collect();
        assert!(
            lost.is_empty(),
            "{name}: false negatives on the replica: {lost:?}"
        );
        let card: i64 = common::cmd("BF.CARD w").query(&mut rc).unwrap();
        assert!(
            card >= primary_card,
            "{name}: BF.CARD {card} < {primary_card}"
        );
    }
    // AOF replay by a server whose clock is ten minutes behind.
    std::env::set_var("REDIS_BF_CLOCK_OFFSET_MS", "-600000");
    primary.restart(&[]);
    std::env::remove_var("REDIS_BF_CLOCK_OFFSET_MS");
    let mut pc = primary.conn();
    for (k, e) in ["w", "implicit"].iter().zip(&expected) {
        assert_eq!(&scandump(&mut pc, k.as_bytes()), e, "AOF replay: {k}");
    }
}
