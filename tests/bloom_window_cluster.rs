//! One logical window filter spread over N keys on a 3-primary cluster, for a window too big
//! for one node: the client routes each item to shard `hash(item) mod N` (key `win:<shard>`;
//! the keys hash to different slots, so to different nodes), each shard sized for
//! `capacity / N` items per window. All slots of one node then move to another with
//! `redis-cli --cluster reshard` (MIGRATE = DUMP/RESTORE of the `bf-window` type): every item
//! is still present through the cluster client, and every shard's SCANDUMP is byte-identical
//! to what it was before the move.

mod common;
mod robust;

use common::scandump;
use redis::cluster::ClusterConnection;
use robust::{cluster_client, cluster_ok, create_cluster, reshard, wait_until};
use std::time::Duration;

const SHARDS: u64 = 8;
const ITEMS: usize = 20_000;

/// The client-side router: FNV-1a of the item, modulo the shard count.
fn shard_of(item: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in item.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h % SHARDS
}

fn shard_key(s: u64) -> String {
    format!("win:{s}")
}

fn all_present(con: &mut ClusterConnection, items: &[String]) -> usize {
    let mut present = 0;
    for s in 0..SHARDS {
        let mine: Vec<&String> = items.iter().filter(|i| shard_of(i) == s).collect();
        let answers: Vec<i64> = redis::cmd("BF.MEXISTS")
            .arg(shard_key(s))
            .arg(&mine)
            .query(con)
            .unwrap();
        present += answers.iter().filter(|a| **a == 1).count();
    }
    present
}

#[test]
fn spread_window_filter_survives_a_reshard() {
    let (nodes, ports) = create_cluster(3);
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| {
            redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut n.conn())
                .unwrap()
        })
        .collect();
    let client = cluster_client(&ports);
    let mut con = client.get_connection().unwrap();
    // One hour window, 20 000 items per window spread over 8 shards.
    for s in 0..SHARDS {
        let _: String = redis::cmd("BF.RESERVE")
            .arg(shard_key(s))
            .arg(0.01)
            .arg(ITEMS as u64 / SHARDS)
            .arg("WINDOW")
            .arg(3_600_000)
            .query(&mut con)
            .unwrap();
    }
    let items: Vec<String> = (0..ITEMS).map(|i| format!("user:{i}")).collect();
    for s in 0..SHARDS {
        let mine: Vec<&String> = items.iter().filter(|i| shard_of(i) == s).collect();
        let _: Vec<i64> = redis::cmd("BF.MADD")
            .arg(shard_key(s))
            .arg(&mine)
            .query(&mut con)
            .unwrap();
    }
    let per_node: Vec<i64> = nodes
        .iter()
        .map(|n| redis::cmd("DBSIZE").query(&mut n.conn()).unwrap())
        .collect();
    assert!(
        per_node.iter().filter(|&&n| n > 0).count() >= 2,
        "shards on several nodes: {per_node:?}"
    );
    assert_eq!(all_present(&mut con, &items), ITEMS);
    let before: Vec<_> = (0..SHARDS)
        .map(|s| scandump(&mut con, shard_key(s).as_bytes()))
        .collect();
    // Move every slot of the node holding the most shards to another node.
    let from = (0..3).max_by_key(|&i| per_node[i]).unwrap();
    let to = (from + 1) % 3;
    let owned: usize = {
        let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut nodes[0].conn())
            .unwrap();
        slots
            .iter()
            .filter(|r| {
                let port: i64 = match &r[2] {
                    redis::Value::Array(a) => redis::from_redis_value(a[1].clone()).unwrap(),
                    _ => 0,
                };
                port == i64::from(ports[from])
            })
            .map(|r| {
                let lo: i64 = redis::from_redis_value(r[0].clone()).unwrap();
                let hi: i64 = redis::from_redis_value(r[1].clone()).unwrap();
                (hi - lo + 1) as usize
            })
            .sum()
    };
    reshard(&ports, &ids, from, to, owned);
    for &p in &ports {
        wait_until("cluster_state:ok", Duration::from_secs(60), || {
            cluster_ok(p)
        });
    }
    let emptied: i64 = redis::cmd("DBSIZE").query(&mut nodes[from].conn()).unwrap();
    assert_eq!(emptied, 0, "every shard left node {from}");
    let mut con = client.get_connection().unwrap();
    assert_eq!(
        all_present(&mut con, &items),
        ITEMS,
        "no false negative after the move"
    );
    for s in 0..SHARDS {
        assert_eq!(
            scandump(&mut con, shard_key(s).as_bytes()),
            before[s as usize],
            "shard {s}"
        );
    }
}
