//! Time is the primary's clock: replicas whose clocks are five minutes ahead or behind, and
//! an AOF replay on a server whose clock is off, reach byte-identical window filters.
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
    // The replica five minutes ahead sees nothing as live (reads use its own clock), yet holds
    // the same bytes; the one behind sees the latest items.
    let mut ac = ahead.conn();
    let a: i64 = common::cmd("BF.EXISTS w 7:1").query(&mut ac).unwrap();
    assert_eq!(a, 0);
    let mut bc = behind.conn();
    let b: i64 = common::cmd("BF.EXISTS w 7:1").query(&mut bc).unwrap();
    assert_eq!(b, 1);
    // AOF replay by a server whose clock is ten minutes behind.
    std::env::set_var("REDIS_BF_CLOCK_OFFSET_MS", "-600000");
    primary.restart(&[]);
    std::env::remove_var("REDIS_BF_CLOCK_OFFSET_MS");
    let mut pc = primary.conn();
    for (k, e) in ["w", "implicit"].iter().zip(&expected) {
        assert_eq!(&scandump(&mut pc, k.as_bytes()), e, "AOF replay: {k}");
    }
}
