//! Redis Cluster never loses an item: three primaries with the module,
//! created with `redis-cli --cluster create`; a cluster client (the `redis` crate's
//! `ClusterClient`) writes 1000 filters spread over all slots; then slots holding filters move
//! between the nodes three times with `redis-cli --cluster reshard` (MIGRATE, i.e. DUMP/RESTORE
//! of the `MBbloom--` type) while a writer thread keeps adding items through the cluster client
//! (MOVED/ASK redirections). Afterwards every acknowledged item is present, through the cluster
//! client and directly on the node that owns the key's slot (CLUSTER KEYSLOT + CLUSTER NODES),
//! and no other node holds keys of that slot. Also: COMMAND GETKEYS names the key of every BF
//! command and COMMAND INFO gives the (1, 1, 1) key triple, so cluster clients route correctly.
//!
//! Runs in ~10–25 s. `cargo test --release --test cluster -- --nocapture` prints the figures.

mod common;
mod robust;

use common::{cmd, slot_owners, Rng, Server};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Connection, Value};
use robust::{
    assert_all_present, assert_present, cluster_client, cluster_ok, create_cluster, info_field,
    raw, reshard, value_error, wait_until, Expected,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILTERS: usize = 1000;
const ITEMS_PER_FILTER: usize = 50;
const SLOTS_PER_MOVE: usize = 1500;

fn key(i: usize) -> Vec<u8> {
    format!("cl:{i}").into_bytes()
}

fn item(i: usize, n: usize) -> Vec<u8> {
    format!("cl{i}:{n}").into_bytes()
}

fn dbsizes(nodes: &[Server]) -> Vec<i64> {
    nodes
        .iter()
        .map(|n| cmd("DBSIZE").query(&mut n.conn()).unwrap())
        .collect()
}

/// Creates the filter `i` the way its kind says and adds its first items.
fn create_filter(con: &mut ClusterConnection, i: usize) -> Vec<Vec<u8>> {
    let k = key(i);
    let items: Vec<Vec<u8>> = (0..ITEMS_PER_FILTER).map(|n| item(i, n)).collect();
    let reply = match i % 4 {
        0 => {
            let _: () = cmd("BF.RESERVE")
                .arg(&k)
                .arg(0.01)
                .arg(20)
                .query(con)
                .unwrap();
            raw(con, cmd("BF.MADD").arg(&k).arg(&items))
        }
        1 => raw(con, cmd("BF.MADD").arg(&k).arg(&items)),
        2 => raw(
            con,
            cmd("BF.INSERT")
                .arg(&k)
                .arg("CAPACITY")
                .arg(10)
                .arg("EXPANSION")
                .arg(3)
                .arg("ITEMS")
                .arg(&items),
        ),
        _ => {
            let _: () = cmd("BF.RESERVE")
                .arg(&k)
                .arg(0.001)
                .arg(1000)
                .arg("NONSCALING")
                .query(con)
                .unwrap();
            raw(con, cmd("BF.MADD").arg(&k).arg(&items))
        }
    };
    let Value::Array(r) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(r.len(), items.len());
    assert!(r.iter().all(|v| matches!(v, Value::Int(0 | 1))), "{r:?}");
    items
}

/// Outcome of the writer thread: acknowledged (key, item) pairs and the errors it saw.
struct Written {
    acked: Vec<(Vec<u8>, Vec<u8>)>,
    errors: Vec<String>,
}

fn writer(client: ClusterClient, stop: Arc<AtomicBool>, seed: u64) -> Written {
    let mut con = client.get_connection().expect("cluster connection");
    let mut rng = Rng::new(seed);
    let mut out = Written {
        acked: Vec::new(),
        errors: Vec::new(),
    };
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        // Mostly existing filters (which move between nodes), sometimes new implicit ones.
        let k = if n % 50 == 0 {
            format!("clw:new:{n}").into_bytes()
        } else {
            key(rng.below(FILTERS as u64) as usize)
        };
        let it = format!("w:{n}").into_bytes();
        let r: redis::RedisResult<i64> = cmd("BF.ADD").arg(&k).arg(&it).query(&mut con);
        match r {
            Ok(0 | 1) => out.acked.push((k, it)),
            Ok(v) => out.errors.push(format!("unexpected reply {v}")),
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    out
}

#[test]
fn resharding_under_writes_keeps_every_item() {
    let t0 = Instant::now();
    let (nodes, ports) = create_cluster(3);
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| cmd("CLUSTER MYID").query(&mut n.conn()).unwrap())
        .collect();
    println!("cluster of 3 primaries up in {:?}", t0.elapsed());

    let client = cluster_client(&ports);
    let mut con = client.get_connection().unwrap();
    let mut expected = Expected::new();
    for i in 0..FILTERS {
        expected.insert(key(i), create_filter(&mut con, i));
    }
    let before = dbsizes(&nodes);
    assert_eq!(before.iter().sum::<i64>(), FILTERS as i64);
    assert!(
        before.iter().all(|&n| n > 200),
        "filters spread over the nodes: {before:?}"
    );
    println!(
        "{FILTERS} filters, {} items written through the cluster client; keys per node {before:?}",
        FILTERS * ITEMS_PER_FILTER
    );

    // Reshard node0→node1, node2→node0, node0→node2 (redis-cli takes the lowest slots of the
    // source, so each step moves other slots) while a writer keeps adding.
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let client = client.clone();
        let stop = stop.clone();
        let seed = robust::seed_from_env("BF_CLUSTER_SEED");
        std::thread::spawn(move || writer(client, stop, seed))
    };
    let mut moved_slots = 0;
    let mut sizes = vec![before.clone()];
    // Slot of every original filter, and the owners of all slots before each step.
    let mut direct0 = nodes[0].conn();
    let filter_slots: Vec<usize> = (0..FILTERS)
        .map(|i| {
            cmd("CLUSTER KEYSLOT")
                .arg(key(i))
                .query(&mut direct0)
                .unwrap()
        })
        .collect();
    let mut owners = slot_owners(&mut direct0);
    let mut filters_moved = Vec::new();
    for (from, to) in [(0usize, 1usize), (2, 0), (0, 2)] {
        let t = Instant::now();
        let out = reshard(&ports, &ids, from, to, SLOTS_PER_MOVE);
        // The plan lists every slot once, the execution once more ("Moving slot N from
        // 127.0.0.1:p to 127.0.0.1:q: …"): count the executed moves.
        let moved = out
            .lines()
            .filter(|l| l.starts_with("Moving slot") && l.contains(" to 127.0.0.1:"))
            .count();
        moved_slots += moved;
        for &p in &ports {
            wait_until("cluster_state:ok", Duration::from_secs(60), || {
                cluster_ok(p)
            });
        }
        sizes.push(dbsizes(&nodes));
        let now = slot_owners(&mut direct0);
        // Original filters whose slot went from `from` to `to` in this step.
        let moved_filters = filter_slots
            .iter()
            .filter(|&&slot| owners[slot] == ports[from] && now[slot] == ports[to])
            .count();
        owners = now;
        filters_moved.push(moved_filters);
        println!(
            "reshard node{from}→node{to}: {moved} slots in {:?}, carrying {moved_filters} of the \
             original filters (MIGRATE = DUMP/RESTORE); keys per node {:?}",
            t.elapsed(),
            sizes.last().unwrap()
        );
        assert!(moved >= SLOTS_PER_MOVE, "redis-cli moved {moved} slots");
    }
    stop.store(true, Ordering::SeqCst);
    let written = w.join().expect("writer");
    println!(
        "writer: {} adds acknowledged during the reshards, {} errors {:?}",
        written.acked.len(),
        written.errors.len(),
        written.errors.iter().take(5).collect::<Vec<_>>()
    );
    assert!(
        written.errors.is_empty(),
        "writer errors: {:?}",
        written.errors
    );
    assert!(written.acked.len() > 1000, "the writer made progress");
    // Every step moved filters.
    assert!(
        filters_moved.iter().all(|&n| n > 0),
        "filters moved per step: {filters_moved:?}"
    );
    for (k, it) in written.acked {
        expected.entry(k).or_default().push(it);
    }

    // Every item is present through the cluster client…
    let mut con = client.get_connection().unwrap();
    let checked = assert_all_present(&mut con, "through the cluster client", &expected, 1000);
    // …and directly on the owner of the key's slot; no other node has keys in that slot.
    let mut direct: Vec<Connection> = nodes.iter().map(|n| n.conn()).collect();
    let owners = slot_owners(&mut direct[0]);
    for (i, d) in direct.iter_mut().enumerate().skip(1) {
        assert_eq!(slot_owners(d), owners, "node{i} agrees on slot ownership");
    }
    let mut per_node = [0usize; 3];
    for (k, its) in &expected {
        let slot: usize = cmd("CLUSTER KEYSLOT").arg(k).query(&mut direct[0]).unwrap();
        let owner = ports.iter().position(|&p| p == owners[slot]).unwrap();
        per_node[owner] += 1;
        let exists: i64 = cmd("EXISTS").arg(k).query(&mut direct[owner]).unwrap();
        assert_eq!(exists, 1, "{} on its owner", String::from_utf8_lossy(k));
        assert_present(&mut direct[owner], "on the owner node", k, its, 1000);
        for (n, d) in direct.iter_mut().enumerate() {
            if n != owner {
                let c: i64 = cmd("CLUSTER COUNTKEYSINSLOT").arg(slot).query(d).unwrap();
                assert_eq!(c, 0, "node{n} still holds keys of slot {slot}");
            }
        }
    }
    let total: i64 = dbsizes(&nodes).iter().sum();
    assert_eq!(total as usize, expected.len());
    println!(
        "verified: {} keys ({per_node:?} per owner node), {checked} items present, 0 missing; \
         {moved_slots} slots moved in 3 reshards; {:?}",
        expected.len(),
        t0.elapsed()
    );
    for n in &nodes {
        assert!(!n.log().contains("panicked"));
        assert!(
            !n.log().contains("Bad data format"),
            "a MIGRATE payload was refused"
        );
    }
}

/// The scalar leaves of a reply, in order, as text.
fn flatten(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(a) | Value::Set(a) => a.iter().for_each(|x| flatten(x, out)),
        Value::Map(m) => m.iter().for_each(|(k, x)| {
            flatten(k, out);
            flatten(x, out);
        }),
        Value::BulkString(b) => out.push(String::from_utf8_lossy(b).to_string()),
        Value::SimpleString(s) => out.push(s.clone()),
        Value::Int(i) => out.push(i.to_string()),
        other => out.push(format!("{other:?}")),
    }
}

/// COMMAND GETKEYS names the key of every BF command; COMMAND INFO gives first key 1, last key
/// 1, step 1 and a key spec starting at index 1.
#[test]
fn every_bf_command_names_its_key() {
    let s = Server::start();
    let mut con = s.conn();
    let _: () = cmd("BF.RESERVE gk")
        .arg(0.01)
        .arg(100)
        .query(&mut con)
        .unwrap();
    let (_, header): (i64, Vec<u8>) = cmd("BF.SCANDUMP gk 0").query(&mut con).unwrap();
    let calls: Vec<Vec<Vec<u8>>> = [
        vec!["BF.RESERVE", "{k}1", "0.01", "100"],
        vec!["BF.RESERVE", "{k}1", "0.01", "100", "EXPANSION", "4"],
        vec!["BF.ADD", "{k}1", "item"],
        vec!["BF.MADD", "{k}1", "a", "b", "c"],
        vec!["BF.INSERT", "{k}1", "CAPACITY", "10", "ITEMS", "a", "b"],
        vec!["BF.INSERT", "{k}1", "NOCREATE", "ITEMS", "a"],
        vec!["BF.EXISTS", "{k}1", "item"],
        vec!["BF.MEXISTS", "{k}1", "a", "b"],
        vec!["BF.INFO", "{k}1"],
        vec!["BF.INFO", "{k}1", "CAPACITY"],
        vec!["BF.CARD", "{k}1"],
        vec!["BF.DEBUG", "{k}1"],
        vec!["BF.SCANDUMP", "{k}1", "0"],
        vec!["BF.LOADCHUNK", "{k}1", "1", "HEADER"],
    ]
    .into_iter()
    .map(|v| {
        v.into_iter()
            .map(|a| {
                if a == "HEADER" {
                    header.clone()
                } else {
                    a.as_bytes().to_vec()
                }
            })
            .collect()
    })
    .collect();
    let mut names = std::collections::BTreeSet::new();
    for call in &calls {
        let keys: Vec<Vec<u8>> = cmd("COMMAND GETKEYS")
            .arg(call)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("GETKEYS {:?}: {e}", String::from_utf8_lossy(&call[0])));
        assert_eq!(
            keys,
            vec![b"{k}1".to_vec()],
            "{}",
            String::from_utf8_lossy(&call[0])
        );
        names.insert(String::from_utf8_lossy(&call[0]).to_string());
    }
    assert_eq!(names.len(), 11, "all eleven commands: {names:?}");
    for name in &names {
        let info = raw(&mut con, cmd("COMMAND INFO").arg(name));
        assert!(value_error(&info).is_none());
        let Value::Array(outer) = info else {
            panic!("{info:?}")
        };
        let Some(Value::Array(entry)) = outer.first() else {
            panic!("COMMAND INFO {name}: {outer:?}")
        };
        // [name, arity, flags, first key, last key, step, acl categories, tips, key specs, …]
        assert_eq!(entry[3], Value::Int(1), "{name} first key");
        assert_eq!(entry[4], Value::Int(1), "{name} last key");
        assert_eq!(entry[5], Value::Int(1), "{name} key step");
        // Key specs: begin_search {type index, spec {index 1}}.
        let mut flat = Vec::new();
        flatten(entry.get(8).expect("key specs"), &mut flat);
        let begins_at_1 = flat
            .windows(4)
            .any(|w| w == ["type", "index", "spec", "index"])
            && flat.windows(2).any(|w| w == ["index", "1"]);
        assert!(begins_at_1, "{name} key spec: {flat:?}");
    }
    println!(
        "COMMAND GETKEYS: {} calls over {} commands all name the key; COMMAND INFO key triple \
         (1, 1, 1) for all (server {})",
        calls.len(),
        names.len(),
        info_field(&mut con, "server", "redis_version")
    );
}
