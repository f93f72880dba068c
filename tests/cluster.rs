//! Redis Cluster never loses an item: three primaries with the module,
//! created with `redis-cli --cluster create`; a cluster client (the `redis` crate's
//! `ClusterClient`) writes 1000 Bloom filters, 200 cuckoo filters and 40 Ribbon filters (half
//! built by RF.BUILD, half left staging) spread over all slots (the
//! cuckoo ones made by CF.RESERVE in two shapes, one small enough to grow sub-filters under the
//! writes, or implicitly by CF.INSERT CAPACITY / CF.ADD); then slots holding filters move between the
//! nodes three times with `redis-cli --cluster reshard` (MIGRATE, i.e. DUMP/RESTORE of the
//! `MBbloom--` and `MBbloomCF` types) while a writer thread keeps adding items through the
//! cluster client (BF.ADD, CF.ADD, CF.INSERT; MOVED/ASK redirections). Afterwards every
//! acknowledged item is present (BF.MEXISTS / CF.MEXISTS), through the cluster client and
//! directly on the node that owns the key's slot (CLUSTER KEYSLOT + CLUSTER NODES), no other
//! node holds keys of that slot, and every cuckoo filter is byte-identical (its CF.SCANDUMP
//! walk) to a twin the core built from the acknowledged writes, so no add was lost or applied
//! twice by a move; every Ribbon key, built or staging, shows its owner the very state, RF.CARD,
//! `DEBUG DIGEST-VALUE` and RF.MEXISTS answers it had before the moves. Also: COMMAND GETKEYS
//! names the key of every BF, every CF and every RF command
//! (checked against `COMMAND LIST FILTERBY PATTERN`) and COMMAND INFO gives the (1, 1, 1) key
//! triple and a key spec at index 1, so cluster clients route correctly.
//!
//! Runs in ~10–25 s. `cargo test --release --test cluster -- --nocapture` prints the figures.

mod common;
mod robust;

use common::{cf_core_walk, cf_scandump_walk, cmd, slot_owners, Rng, Server};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Connection, Value};
use robust::{
    assert_all_present, assert_present, assert_ribbon_as_made, cluster_client, cluster_ok,
    create_cluster, info_field, raw, reshard, ribbon_create, ribbon_view, value_error, wait_until,
    CfShape, CfTwins, CfWrite, Expected,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILTERS: usize = 1000;
const ITEMS_PER_FILTER: usize = 50;
const SLOTS_PER_MOVE: usize = 1500;
/// Cuckoo filters, created as [`cuckoo_writes`] says.
const CF_FILTERS: usize = 200;
/// Ribbon filters: the even ones built, the odd ones left staging ([`ribbon_key`]).
const RIBBON: usize = 40;
/// The small shape: 32 slots, then 64, 128, … as it grows.
const SMALL_CF: CfShape = CfShape {
    capacity: 32,
    bucket_size: 2,
    max_iterations: 20,
    expansion: 2,
};

fn key(i: usize) -> Vec<u8> {
    format!("cl:{i}").into_bytes()
}

fn item(i: usize, n: usize) -> Vec<u8> {
    format!("cl{i}:{n}").into_bytes()
}

fn cf_key(i: usize) -> Vec<u8> {
    format!("clc:{i}").into_bytes()
}

/// Ribbon filter `i`: its key, whether it is built (`i` even), and its staged items.
fn ribbon_key(i: usize) -> (Vec<u8>, bool, Vec<Vec<u8>>) {
    let items = (0..ITEMS_PER_FILTER)
        .map(|n| format!("clr{i}:{n}").into_bytes())
        .collect();
    (format!("clr:{i}").into_bytes(), i % 2 == 0, items)
}

/// The probes of Ribbon filter `i`: its items, then as many never staged.
fn ribbon_probes(i: usize) -> Vec<Vec<u8>> {
    let (_, _, mut probes) = ribbon_key(i);
    probes.extend((0..ITEMS_PER_FILTER).map(|n| format!("clrx{i}:{n}").into_bytes()));
    probes
}

/// The node (index into `ports`) that `owners` ([`slot_owners`]) says owns `slot`.
fn owner_of(ports: &[u16], owners: &[u16], slot: usize) -> usize {
    ports.iter().position(|&p| p == owners[slot]).unwrap()
}

/// The writes that create cuckoo filter `i` and add its first items, by its shape (`i % 4`):
/// the small shape, implicit CF.INSERT, bucket size 4, implicit CF.ADD one item at a time.
fn cuckoo_writes(i: usize) -> Vec<CfWrite> {
    let items: Vec<Vec<u8>> = (0..ITEMS_PER_FILTER)
        .map(|n| format!("clc{i}:{n}").into_bytes())
        .collect();
    let reserve = |shape| {
        vec![
            CfWrite::Reserve(shape),
            CfWrite::Insert(None, items.clone()),
        ]
    };
    match i % 4 {
        0 => reserve(SMALL_CF),
        1 => vec![CfWrite::Insert(Some(500), items)],
        2 => reserve(CfShape {
            capacity: 200,
            bucket_size: 4,
            max_iterations: 50,
            expansion: 1,
        }),
        _ => items.into_iter().map(CfWrite::Add).collect(),
    }
}

/// Sends `w` to `key`, asserting the reply; replays it on the twins and records its items.
fn cuckoo_write(
    con: &mut ClusterConnection,
    key: &[u8],
    w: &CfWrite,
    twins: &mut CfTwins,
    expected: &mut Expected,
) {
    let reply = raw(con, &w.command(key));
    w.check_reply(&reply).unwrap();
    twins.apply(key, w);
    expected
        .entry(key.to_vec())
        .or_default()
        .extend_from_slice(w.added());
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

/// Outcome of the writer thread: acknowledged (key, item) pairs, acknowledged cuckoo writes in
/// order, and the errors it saw.
struct Written {
    acked: Vec<(Vec<u8>, Vec<u8>)>,
    cuckoo: Vec<(Vec<u8>, CfWrite)>,
    errors: Vec<String>,
}

/// A cuckoo write of the writer's `n`th step: CF.ADD or CF.INSERT of 2–4 items to an existing
/// cuckoo filter, sometimes (every 150th step) CF.ADD to a new key.
fn writer_cuckoo(rng: &mut Rng, n: usize) -> (Vec<u8>, CfWrite) {
    let k = if n % 150 == 0 {
        format!("clcw:new:{n}").into_bytes()
    } else {
        cf_key(rng.below(CF_FILTERS as u64) as usize)
    };
    let items: Vec<Vec<u8>> = (0..1 + rng.below(4))
        .map(|j| format!("wc:{n}:{j}").into_bytes())
        .collect();
    let w = if items.len() == 1 {
        CfWrite::Add(items[0].clone())
    } else {
        CfWrite::Insert(None, items)
    };
    (k, w)
}

fn writer(client: ClusterClient, stop: Arc<AtomicBool>, seed: u64) -> Written {
    let mut con = client.get_connection().expect("cluster connection");
    let mut rng = Rng::new(seed);
    let mut out = Written {
        acked: Vec::new(),
        cuckoo: Vec::new(),
        errors: Vec::new(),
    };
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        if n % 3 == 0 {
            let (k, w) = writer_cuckoo(&mut rng, n);
            match w.check_reply(&raw(&mut con, &w.command(&k))) {
                Ok(()) => out.cuckoo.push((k, w)),
                Err(e) => out.errors.push(e),
            }
            continue;
        }
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
    let mut twins = CfTwins::default();
    for i in 0..CF_FILTERS {
        for w in cuckoo_writes(i) {
            cuckoo_write(&mut con, &cf_key(i), &w, &mut twins, &mut expected);
        }
    }
    for i in 0..RIBBON {
        let (k, built, items) = ribbon_key(i);
        ribbon_create(&mut con, &k, &items, built);
        expected.insert(k, items);
    }
    // Sub-filters of the small-shape filters before the writer starts.
    let small_before: Vec<usize> = (0..CF_FILTERS)
        .step_by(4)
        .map(|i| twins.0[&cf_key(i)].filters.len())
        .collect();
    let before = dbsizes(&nodes);
    assert_eq!(
        before.iter().sum::<i64>(),
        (FILTERS + CF_FILTERS + RIBBON) as i64
    );
    assert!(
        before.iter().all(|&n| n > 200),
        "filters spread over the nodes: {before:?}"
    );
    println!(
        "{FILTERS} Bloom, {CF_FILTERS} cuckoo and {RIBBON} Ribbon filters, {} items written \
         through the cluster client; keys per node {before:?}",
        (FILTERS + CF_FILTERS + RIBBON) * ITEMS_PER_FILTER
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
    // Slot of every original filter (Bloom, cuckoo, then Ribbon), and the owners of all slots
    // before each step.
    let mut direct0 = nodes[0].conn();
    let filter_slots: Vec<usize> = (0..FILTERS)
        .map(key)
        .chain((0..CF_FILTERS).map(cf_key))
        .chain((0..RIBBON).map(|i| ribbon_key(i).0))
        .map(|k| cmd("CLUSTER KEYSLOT").arg(k).query(&mut direct0).unwrap())
        .collect();
    let ribbon_slots = &filter_slots[FILTERS + CF_FILTERS..];
    let mut owners = slot_owners(&mut direct0);
    // What every Ribbon key shows on its owner before the moves: built or staging as made,
    // every item present, and on a staging key every other probe absent.
    let mut direct: Vec<Connection> = nodes.iter().map(|n| n.conn()).collect();
    let ribbon_before: Vec<_> = (0..RIBBON)
        .map(|i| {
            let (k, built, _) = ribbon_key(i);
            let owner = owner_of(&ports, &owners, ribbon_slots[i]);
            let view = ribbon_view(&mut direct[owner], &k, &ribbon_probes(i));
            assert_ribbon_as_made(&view, built, ITEMS_PER_FILTER);
            view
        })
        .collect();
    // Ribbon filters (index) that moved at least once.
    let mut ribbon_moved = std::collections::BTreeSet::new();
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
        // Original filters (Bloom, cuckoo) whose slot went from `from` to `to` in this step.
        let went = |slot: &&usize| owners[**slot] == ports[from] && now[**slot] == ports[to];
        let moved_bloom = filter_slots[..FILTERS].iter().filter(went).count();
        let moved_cuckoo = filter_slots[FILTERS..FILTERS + CF_FILTERS]
            .iter()
            .filter(went)
            .count();
        ribbon_moved.extend((0..RIBBON).filter(|&i| went(&&ribbon_slots[i])));
        owners = now;
        filters_moved.push((moved_bloom, moved_cuckoo));
        println!(
            "reshard node{from}→node{to}: {moved} slots in {:?}, carrying {moved_bloom} Bloom and \
             {moved_cuckoo} cuckoo filters of the original ones (MIGRATE = DUMP/RESTORE); keys \
             per node {:?}",
            t.elapsed(),
            sizes.last().unwrap()
        );
        assert!(moved >= SLOTS_PER_MOVE, "redis-cli moved {moved} slots");
    }
    stop.store(true, Ordering::SeqCst);
    let written = w.join().expect("writer");
    println!(
        "writer: {} BF.ADD and {} CF.ADD / CF.INSERT acknowledged during the reshards, {} errors \
         {:?}",
        written.acked.len(),
        written.cuckoo.len(),
        written.errors.len(),
        written.errors.iter().take(5).collect::<Vec<_>>()
    );
    assert!(
        written.errors.is_empty(),
        "writer errors: {:?}",
        written.errors
    );
    assert!(written.acked.len() > 1000, "the writer made progress");
    assert!(written.cuckoo.len() > 500, "the writer made progress");
    // Every step moved filters of both types.
    assert!(
        filters_moved.iter().all(|&(b, c)| b > 0 && c > 0),
        "(Bloom, cuckoo) filters moved per step: {filters_moved:?}"
    );
    // Built and staging Ribbon filters moved.
    let built_moved = ribbon_moved.iter().filter(|&&i| ribbon_key(i).1).count();
    assert!(
        built_moved > 0 && built_moved < ribbon_moved.len(),
        "Ribbon filters moved: {ribbon_moved:?}"
    );
    for (k, it) in written.acked {
        expected.entry(k).or_default().push(it);
    }
    for (k, w) in &written.cuckoo {
        twins.apply(k, w);
        expected
            .entry(k.clone())
            .or_default()
            .extend_from_slice(w.added());
    }
    let small_after: Vec<usize> = (0..CF_FILTERS)
        .step_by(4)
        .map(|i| twins.0[&cf_key(i)].filters.len())
        .collect();
    let grew = small_before
        .iter()
        .zip(&small_after)
        .filter(|(b, a)| a > b)
        .count();
    println!(
        "small cuckoo filters: {grew} of {} grew sub-filters under the writes (now {}–{} \
         sub-filters)",
        small_after.len(),
        small_after.iter().min().unwrap(),
        small_after.iter().max().unwrap()
    );
    assert!(grew > 0, "sub-filters {small_before:?} → {small_after:?}");

    // Every item is present through the cluster client…
    let mut con = client.get_connection().unwrap();
    let checked = assert_all_present(&mut con, "through the cluster client", &expected, 1000);
    // …and directly on the owner of the key's slot; no other node has keys in that slot.
    let owners = slot_owners(&mut direct[0]);
    for (i, d) in direct.iter_mut().enumerate().skip(1) {
        assert_eq!(slot_owners(d), owners, "node{i} agrees on slot ownership");
    }
    let mut per_node = [0usize; 3];
    for (k, its) in &expected {
        let slot: usize = cmd("CLUSTER KEYSLOT").arg(k).query(&mut direct[0]).unwrap();
        let owner = owner_of(&ports, &owners, slot);
        per_node[owner] += 1;
        let exists: i64 = cmd("EXISTS").arg(k).query(&mut direct[owner]).unwrap();
        assert_eq!(exists, 1, "{} on its owner", String::from_utf8_lossy(k));
        assert_present(&mut direct[owner], "on the owner node", k, its, 1000);
        if let Some(twin) = twins.0.get(k) {
            assert_eq!(
                cf_scandump_walk(&mut direct[owner], k),
                cf_core_walk(twin),
                "{} on its owner differs from its twin",
                String::from_utf8_lossy(k)
            );
        }
        for (n, d) in direct.iter_mut().enumerate() {
            if n != owner {
                let c: i64 = cmd("CLUSTER COUNTKEYSINSLOT").arg(slot).query(d).unwrap();
                assert_eq!(c, 0, "node{n} still holds keys of slot {slot}");
            }
        }
    }
    // Every Ribbon key shows its owner what it showed before the moves.
    for (i, before) in ribbon_before.iter().enumerate() {
        let (k, _, _) = ribbon_key(i);
        let owner = owner_of(&ports, &owners, ribbon_slots[i]);
        assert_eq!(
            &ribbon_view(&mut direct[owner], &k, &ribbon_probes(i)),
            before,
            "{} after the moves",
            String::from_utf8_lossy(&k)
        );
    }
    println!(
        "Ribbon: {} of {RIBBON} filters moved ({built_moved} built, {} staging), each with the \
         same state, RF.CARD, DEBUG DIGEST-VALUE and RF.MEXISTS answers as before",
        ribbon_moved.len(),
        ribbon_moved.len() - built_moved
    );
    let total: i64 = dbsizes(&nodes).iter().sum();
    assert_eq!(total as usize, expected.len());
    let twin_bytes: u64 = twins.0.values().map(|t| t.table_bytes()).sum();
    println!(
        "verified: {} keys ({per_node:?} per owner node), {checked} items present, 0 missing; \
         {} cuckoo filters byte-identical to their twins ({twin_bytes} table bytes); \
         {moved_slots} slots moved in 3 reshards; {:?}",
        expected.len(),
        twins.0.len(),
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

/// Asserts that COMMAND GETKEYS names `{k}1` as the key of each call (a `HEADER` argument is
/// replaced by `header`), that the calls cover every command whose name matches `pattern`
/// (`COMMAND LIST FILTERBY PATTERN`), and that COMMAND INFO gives each first key 1, last key 1,
/// step 1 and a key spec starting at index 1. Returns the number of commands.
fn assert_every_command_names_its_key(
    con: &mut Connection,
    pattern: &str,
    calls: &[&[&str]],
    header: &[u8],
) -> usize {
    let mut names = std::collections::BTreeSet::new();
    for call in calls {
        let args: Vec<&[u8]> = call
            .iter()
            .map(|a| if *a == "HEADER" { header } else { a.as_bytes() })
            .collect();
        let keys: Vec<Vec<u8>> = cmd("COMMAND GETKEYS")
            .arg(&args)
            .query(con)
            .unwrap_or_else(|e| panic!("GETKEYS {}: {e}", call[0]));
        assert_eq!(keys, vec![b"{k}1".to_vec()], "{}", call[0]);
        names.insert(call[0].to_ascii_lowercase());
    }
    let listed: std::collections::BTreeSet<String> = cmd("COMMAND LIST FILTERBY PATTERN")
        .arg(pattern)
        .query(con)
        .unwrap();
    assert_eq!(names, listed, "the calls cover every {pattern} command");
    for name in &names {
        let info = raw(con, cmd("COMMAND INFO").arg(name));
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
        "COMMAND GETKEYS: {} calls over the {} {pattern} commands all name the key; COMMAND INFO \
         key triple (1, 1, 1) for all (server {})",
        calls.len(),
        names.len(),
        info_field(con, "server", "redis_version")
    );
    names.len()
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
    let calls: &[&[&str]] = &[
        &["BF.RESERVE", "{k}1", "0.01", "100"],
        &["BF.RESERVE", "{k}1", "0.01", "100", "EXPANSION", "4"],
        &["BF.ADD", "{k}1", "item"],
        &["BF.MADD", "{k}1", "a", "b", "c"],
        &["BF.INSERT", "{k}1", "CAPACITY", "10", "ITEMS", "a", "b"],
        &["BF.INSERT", "{k}1", "NOCREATE", "ITEMS", "a"],
        &["BF.EXISTS", "{k}1", "item"],
        &["BF.MEXISTS", "{k}1", "a", "b"],
        &["BF.INFO", "{k}1"],
        &["BF.INFO", "{k}1", "CAPACITY"],
        &["BF.CARD", "{k}1"],
        &["BF.DEBUG", "{k}1"],
        &["BF.SCANDUMP", "{k}1", "0"],
        &["BF.LOADCHUNK", "{k}1", "1", "HEADER"],
    ];
    let n = assert_every_command_names_its_key(&mut con, "bf.*", calls, &header);
    assert_eq!(n, 11, "all eleven commands");
}

/// The same for every CF command: a cluster client routes each to the node of its key.
#[test]
fn every_cf_command_names_its_key() {
    let s = Server::start();
    let mut con = s.conn();
    let _: i64 = cmd("CF.ADD gk a").query(&mut con).unwrap();
    let (_, header): (i64, Vec<u8>) = cmd("CF.SCANDUMP gk 0").query(&mut con).unwrap();
    let calls: &[&[&str]] = &[
        &["CF.RESERVE", "{k}1", "100"],
        &[
            "CF.RESERVE",
            "{k}1",
            "100",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "2",
        ],
        &["CF.ADD", "{k}1", "item"],
        &["CF.ADDNX", "{k}1", "item"],
        &["CF.INSERT", "{k}1", "CAPACITY", "10", "ITEMS", "a", "b"],
        &["CF.INSERT", "{k}1", "NOCREATE", "ITEMS", "a"],
        &["CF.INSERTNX", "{k}1", "ITEMS", "a", "b"],
        &["CF.EXISTS", "{k}1", "item"],
        &["CF.MEXISTS", "{k}1", "a", "b"],
        &["CF.COUNT", "{k}1", "item"],
        &["CF.DEL", "{k}1", "item"],
        &["CF.COMPACT", "{k}1"],
        &["CF.INFO", "{k}1"],
        &["CF.DEBUG", "{k}1"],
        &["CF.SCANDUMP", "{k}1", "0"],
        &["CF.LOADCHUNK", "{k}1", "1", "HEADER"],
        &["CF.LOADCHUNK", "{k}1", "39", "chunk"],
    ];
    let n = assert_every_command_names_its_key(&mut con, "cf.*", calls, &header);
    assert_eq!(n, 14, "all fourteen commands");
}

/// The same for every RF command.
#[test]
fn every_rf_command_names_its_key() {
    let s = Server::start();
    let mut con = s.conn();
    let _: () = cmd("RF.BUILD gk ITEMS a b").query(&mut con).unwrap();
    let (_, header): (i64, Vec<u8>) = cmd("RF.SCANDUMP gk 0").query(&mut con).unwrap();
    let calls: &[&[&str]] = &[
        &["RF.ADD", "{k}1", "item"],
        &["RF.MADD", "{k}1", "a", "b"],
        &["RF.BUILD", "{k}1"],
        &["RF.BUILD", "{k}1", "ERROR", "0.001", "ITEMS", "a", "b"],
        &["RF.EXISTS", "{k}1", "item"],
        &["RF.MEXISTS", "{k}1", "a", "b"],
        &["RF.CARD", "{k}1"],
        &["RF.INFO", "{k}1"],
        &["RF.INFO", "{k}1", "STATE"],
        &["RF.SCANDUMP", "{k}1", "0"],
        &["RF.LOADCHUNK", "{k}1", "1", "HEADER"],
    ];
    let n = assert_every_command_names_its_key(&mut con, "rf.*", calls, &header);
    assert_eq!(n, 9, "all nine commands");
}
