//! One logical window filter spread over N keys on a 3-primary cluster, for a window too big
//! for one node: the client routes each item to shard `hash(item) mod N` (key `win:<shard>`;
//! the keys hash to different slots, so to different nodes), each shard sized for
//! `capacity / N` items per window. All slots of one node then move to another with
//! `redis-cli --cluster reshard` (MIGRATE = DUMP/RESTORE of the `bf-window` type): every item
//! is still present through the cluster client, and every shard's SCANDUMP is byte-identical
//! to what it was before the move.

mod common;
mod robust;

use common::{free_port, Server};
use redis::cluster::{ClusterClient, ClusterConnection};
use robust::wait_until;
use std::process::Command;
use std::time::Duration;

const SHARDS: u64 = 8;
const ITEMS: usize = 20_000;

fn start_node() -> Server {
    let bus = free_port().to_string();
    Server::start_with(
        &[],
        &[
            ("cluster-enabled", "yes"),
            ("cluster-config-file", "nodes.conf"),
            ("cluster-node-timeout", "5000"),
            ("cluster-port", bus.as_str()),
        ],
    )
}

fn redis_cli(args: &[String]) -> String {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("redis-cli (redis-tools) must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

fn cluster_ok(port: u16) -> bool {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
        .map(|mut c| {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
            info.contains("cluster_state:ok") && info.contains("cluster_slots_assigned:16384")
        })
        .unwrap_or(false)
}

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

fn dump(con: &mut ClusterConnection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(key)
            .arg(iter)
            .query(con)
            .unwrap();
        if next == 0 {
            return out;
        }
        out.push((next, data));
        iter = next;
    }
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
    let nodes: Vec<Server> = (0..3).map(|_| start_node()).collect();
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
    args.extend(ports.iter().map(|p| format!("127.0.0.1:{p}")));
    args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
    redis_cli(&args);
    for &p in &ports {
        wait_until("cluster_state:ok", Duration::from_secs(60), || {
            cluster_ok(p)
        });
    }
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| {
            redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut n.conn())
                .unwrap()
        })
        .collect();
    let urls: Vec<String> = ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}/"))
        .collect();
    let client = ClusterClient::new(urls).unwrap();
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
    let before: Vec<_> = (0..SHARDS).map(|s| dump(&mut con, &shard_key(s))).collect();
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
    redis_cli(&[
        "--cluster".into(),
        "reshard".into(),
        format!("127.0.0.1:{}", ports[from]),
        "--cluster-from".into(),
        ids[from].clone(),
        "--cluster-to".into(),
        ids[to].clone(),
        "--cluster-slots".into(),
        owned.to_string(),
        "--cluster-yes".into(),
    ]);
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
            dump(&mut con, &shard_key(s)),
            before[s as usize],
            "shard {s}"
        );
    }
}
