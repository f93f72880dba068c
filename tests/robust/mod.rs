//! Helpers shared by the robustness suites (`bloom_replication.rs`, `cluster.rs`, `crash.rs`,
//! `hostile.rs`): deterministic randomness, INFO fields, waiting, SCANDUMP walks, batched
//! membership checks and exact error texts.
#![allow(dead_code)]

use redis::{ConnectionLike, Value};
use redis_bf::bloom::cuckoo::{Cuckoo, Insert};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What must be present: key → items (acknowledged adds).
pub type Expected = BTreeMap<Vec<u8>, Vec<Vec<u8>>>;

/// A seed from the environment variable `name` (decimal), or from the clock; printed so a run
/// can be repeated.
pub fn seed_from_env(name: &str) -> u64 {
    let seed = std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("{name}={seed}");
    seed
}

/// One field of `INFO <section>` (empty when absent).
pub fn info_field(con: &mut impl ConnectionLike, section: &str, field: &str) -> String {
    let info: String = crate::common::cmd("INFO")
        .arg(section)
        .query(con)
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// `info_field` parsed as an integer (0 when absent).
pub fn info_u64(con: &mut impl ConnectionLike, section: &str, field: &str) -> u64 {
    info_field(con, section, field).parse().unwrap_or(0)
}

/// Polls `f` until it is true; panics with `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Replays a SCANDUMP walk with BF.LOADCHUNK into `key`.
pub fn loadchunks(con: &mut impl ConnectionLike, key: &[u8], dump: &[(i64, Vec<u8>)]) {
    for (iter, data) in dump {
        let _: () = crate::common::cmd("BF.LOADCHUNK")
            .arg(key)
            .arg(*iter)
            .arg(data.as_slice())
            .query(con)
            .expect("BF.LOADCHUNK");
    }
}

/// The type name of a cuckoo filter (`TYPE key`).
pub const CUCKOO_TYPE: &str = "MBbloomCF";

/// The type name of a Ribbon filter (`TYPE key`).
pub const RIBBON_TYPE: &str = "bf-ribbon";

/// The membership command for `key`'s type: CF.MEXISTS for a cuckoo filter (`MBbloomCF`),
/// RF.MEXISTS for a Ribbon filter (`bf-ribbon`, built or staging), else BF.MEXISTS
/// (`MBbloom--`, a window filter, or a missing key, which answers 0 for every item and so is
/// reported as missing them).
pub fn mexists_for(con: &mut impl ConnectionLike, key: &[u8]) -> &'static str {
    let t: String = crate::common::cmd("TYPE")
        .arg(key)
        .query(con)
        .expect("TYPE");
    match t.as_str() {
        CUCKOO_TYPE => "CF.MEXISTS",
        RIBBON_TYPE => "RF.MEXISTS",
        _ => "BF.MEXISTS",
    }
}

/// Creates the Ribbon key `key` holding `items`: staged by RF.MADD, then, when `built`, built
/// by `RF.BUILD key ERROR 0.01` (asserting its `OK`).
pub fn ribbon_create(con: &mut impl ConnectionLike, key: &[u8], items: &[Vec<u8>], built: bool) {
    let added: Vec<i64> = crate::common::cmd("RF.MADD")
        .arg(key)
        .arg(items)
        .query(con)
        .expect("RF.MADD");
    assert_eq!(added, vec![1; items.len()], "RF.MADD of distinct items");
    if built {
        let ok: String = crate::common::cmd("RF.BUILD")
            .arg(key)
            .arg("ERROR")
            .arg(0.01)
            .query(con)
            .expect("RF.BUILD");
        assert_eq!(ok, "OK");
    }
}

/// What a Ribbon key shows a reader: its `RF.INFO key STATE` (`built` / `staging`), `RF.CARD`,
/// `DEBUG DIGEST-VALUE` (hex) and the RF.MEXISTS answers for some probes. Two nodes holding
/// the same value show equal views.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct RibbonView {
    pub state: String,
    pub card: i64,
    pub digest: String,
    pub answers: Vec<i64>,
}

/// Asserts that `view` is that of a Ribbon key made by [`ribbon_create`] from `items` distinct
/// items (its probes: those items first, then never-staged ones): built or staging as made, its
/// RF.CARD `items`, every item present, and on a staging key (which answers exactly) every
/// other probe absent.
pub fn assert_ribbon_as_made(view: &RibbonView, built: bool, items: usize) {
    assert_eq!(view.state, if built { "built" } else { "staging" });
    assert_eq!(view.card, items as i64);
    assert!(view.answers[..items].iter().all(|&a| a == 1), "{view:?}");
    if !built {
        assert!(view.answers[items..].iter().all(|&a| a == 0), "{view:?}");
    }
}

/// The [`RibbonView`] of `key` on `con`, asking RF.MEXISTS for `probes` in one call.
pub fn ribbon_view(con: &mut impl ConnectionLike, key: &[u8], probes: &[Vec<u8>]) -> RibbonView {
    let info = raw(con, crate::common::cmd("RF.INFO").arg(key).arg("STATE"));
    let state = match &info {
        Value::Array(a) if a.len() == 1 => match &a[0] {
            Value::SimpleString(s) => s.clone(),
            v => panic!("RF.INFO STATE answered {v:?}"),
        },
        v => panic!("RF.INFO STATE answered {v:?}"),
    };
    let card: i64 = crate::common::cmd("RF.CARD")
        .arg(key)
        .query(con)
        .expect("RF.CARD");
    let mut digest: Vec<String> = crate::common::cmd("DEBUG DIGEST-VALUE")
        .arg(key)
        .query(con)
        .expect("DEBUG DIGEST-VALUE");
    let answers: Vec<i64> = crate::common::cmd("RF.MEXISTS")
        .arg(key)
        .arg(probes)
        .query(con)
        .expect("RF.MEXISTS");
    RibbonView {
        state,
        card,
        digest: digest.remove(0),
        answers,
    }
}

/// Asks BF.MEXISTS or CF.MEXISTS ([`mexists_for`]) for `items` in batches of `batch`; returns
/// the items answered 0.
fn missing(
    con: &mut impl ConnectionLike,
    key: &[u8],
    items: &[Vec<u8>],
    batch: usize,
) -> Vec<Vec<u8>> {
    let command = mexists_for(con, key);
    let mut out = Vec::new();
    for group in items.chunks(batch) {
        let answers: Vec<i64> = crate::common::cmd(command)
            .arg(key)
            .arg(group)
            .query(con)
            .unwrap_or_else(|e| panic!("{command}: {e}"));
        assert_eq!(answers.len(), group.len());
        out.extend(
            group
                .iter()
                .zip(answers)
                .filter(|(_, a)| *a != 1)
                .map(|(i, _)| i.clone()),
        );
    }
    out
}

/// Asserts that BF.MEXISTS, or CF.MEXISTS for a cuckoo filter (`batch` items a call), reports
/// every one of `items` present in `key` on `con`: no false negative. `who` names the server or the moment in the failure message.
pub fn assert_present(
    con: &mut impl ConnectionLike,
    who: &str,
    key: &[u8],
    items: &[Vec<u8>],
    batch: usize,
) {
    let miss = missing(con, key, items, batch);
    assert!(
        miss.is_empty(),
        "{who}: {} of {} items of {:?} missing (first {:?})",
        miss.len(),
        items.len(),
        String::from_utf8_lossy(key),
        miss.first().map(|m| String::from_utf8_lossy(m).to_string())
    );
}

/// [`assert_present`] for every key of `exp`; returns the number of items checked.
pub fn assert_all_present(
    con: &mut impl ConnectionLike,
    who: &str,
    exp: &Expected,
    batch: usize,
) -> usize {
    for (key, items) in exp {
        assert_present(con, who, key, items, batch);
    }
    exp.values().map(Vec::len).sum()
}

/// The exact wire text of a server error (what follows the `-`).
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// The exact wire text of an error reply inside a pipeline or array result, if it is one.
pub fn value_error(v: &Value) -> Option<String> {
    match v {
        Value::ServerError(e) => Some(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        _ => None,
    }
}

/// Sends one command and returns its reply with error replies kept as `Value::ServerError`,
/// also inside arrays (`Cmd::query` turns any nested error into an `Err`). Panics on I/O errors.
pub fn raw(con: &mut impl ConnectionLike, cmd: &redis::Cmd) -> Value {
    match con.req_command(cmd) {
        Ok(v) => v,
        Err(e) if e.code().is_some() => {
            Value::ServerError(redis::ServerError::try_from(e).expect("server error"))
        }
        Err(e) => panic!("I/O error: {e}"),
    }
}

/// Sends a pipeline and returns every reply as `raw` would.
pub fn raw_pipe(con: &mut impl ConnectionLike, pipe: &redis::Pipeline, n: usize) -> Vec<Value> {
    con.req_packed_commands(&pipe.get_packed_pipeline(), 0, n)
        .expect("pipeline I/O")
}

/// Runs one command and returns its reply or its exact error text.
pub fn try_cmd(con: &mut impl ConnectionLike, args: &[&[u8]]) -> Result<Value, String> {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap_or("BF.ADD"));
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query::<Value>(con).map_err(|e| error_text(&e))
}

/// Pids of the live processes whose parent is `ppid` (from /proc).
pub fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ..." — comm may contain spaces; split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(ppid) {
            out.push(pid);
        }
    }
    out
}

/// Sends SIGKILL to one process we started (by its id) and waits until it is gone.
pub fn kill_pid(pid: u32) {
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        // A zombie reparented to init disappears once reaped; a stat of "Z" is as good as gone.
        if std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .ok()
            .flatten()
            .unwrap_or(true)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True when the node on `port` answers and reports a healthy cluster with all 16384 slots
/// assigned.
pub fn cluster_ok(port: u16) -> bool {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
        .map(|mut c| {
            let info: String = crate::common::cmd("CLUSTER INFO").query(&mut c).unwrap();
            info.contains("cluster_state:ok") && info.contains("cluster_slots_assigned:16384")
        })
        .unwrap_or(false)
}

/// Starts `n` cluster-mode servers with the module, joins them into one cluster of primaries
/// (`redis-cli --cluster create`, no replicas) and waits until every node reports
/// `cluster_state:ok`. Returns the servers and their ports, in the same order.
pub fn create_cluster(n: usize) -> (Vec<crate::common::Server>, Vec<u16>) {
    let nodes: Vec<crate::common::Server> = (0..n)
        .map(|_| crate::common::start_cluster_node())
        .collect();
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
    args.extend(ports.iter().map(|p| format!("127.0.0.1:{p}")));
    args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
    crate::common::check_redis_cli(&args);
    for &p in &ports {
        wait_until("cluster_state:ok", Duration::from_secs(60), || {
            cluster_ok(p)
        });
    }
    (nodes, ports)
}

/// Moves `slots` hash slots from node `from` to node `to` (indexes into `ports` and their
/// node `ids`) with `redis-cli --cluster reshard`; returns redis-cli's output.
pub fn reshard(
    ports: &[u16],
    ids: &[String],
    from: usize,
    to: usize,
    slots: impl ToString,
) -> String {
    crate::common::check_redis_cli(&[
        "--cluster".into(),
        "reshard".into(),
        format!("127.0.0.1:{}", ports[from]),
        "--cluster-from".into(),
        ids[from].clone(),
        "--cluster-to".into(),
        ids[to].clone(),
        "--cluster-slots".into(),
        slots.to_string(),
        "--cluster-yes".into(),
    ])
}

/// A cluster client that knows every node of `ports` (all on 127.0.0.1).
pub fn cluster_client(ports: &[u16]) -> redis::cluster::ClusterClient {
    let urls: Vec<String> = ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}/"))
        .collect();
    redis::cluster::ClusterClient::new(urls).unwrap()
}

/// The parameters a cuckoo filter is made with: `CF.RESERVE`'s, or an implicit creation's
/// (the `cf` defaults, RedisBloom's on every server line, with its capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfShape {
    pub capacity: u64,
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

impl CfShape {
    /// What CF.ADD (capacity 1024) or CF.INSERT … CAPACITY c creates on a missing key.
    pub const fn implicit(capacity: u64) -> CfShape {
        CfShape {
            capacity,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
        }
    }

    /// The core's empty filter of this shape.
    pub fn make(&self) -> Cuckoo {
        Cuckoo::new(
            self.capacity,
            self.bucket_size,
            self.max_iterations,
            self.expansion,
            u64::MAX,
        )
        .expect("the twin's table")
    }
}

/// One cuckoo write as a suite sends it (and replays it on a twin, [`CfTwins`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CfWrite {
    /// `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e`.
    Reserve(CfShape),
    /// `CF.ADD key item`: creates the filter with the defaults when missing.
    Add(Vec<u8>),
    /// `CF.INSERT key [CAPACITY c] ITEMS item…`: creates the filter when missing.
    Insert(Option<u64>, Vec<Vec<u8>>),
    /// `CF.DEL key item` of an item added once and not deleted since.
    Del(Vec<u8>),
}

impl CfWrite {
    /// The command line of this write on `key`.
    pub fn command(&self, key: &[u8]) -> redis::Cmd {
        let mut c;
        match self {
            CfWrite::Reserve(s) => {
                c = redis::cmd("CF.RESERVE");
                c.arg(key)
                    .arg(s.capacity)
                    .arg("BUCKETSIZE")
                    .arg(s.bucket_size)
                    .arg("MAXITERATIONS")
                    .arg(s.max_iterations)
                    .arg("EXPANSION")
                    .arg(s.expansion);
            }
            CfWrite::Add(item) => {
                c = redis::cmd("CF.ADD");
                c.arg(key).arg(item);
            }
            CfWrite::Insert(capacity, items) => {
                c = redis::cmd("CF.INSERT");
                c.arg(key);
                if let Some(cap) = capacity {
                    c.arg("CAPACITY").arg(*cap);
                }
                c.arg("ITEMS").arg(items);
            }
            CfWrite::Del(item) => {
                c = redis::cmd("CF.DEL");
                c.arg(key).arg(item);
            }
        }
        c
    }

    /// The items this write adds (none for CF.RESERVE and CF.DEL).
    pub fn added(&self) -> &[Vec<u8>] {
        match self {
            CfWrite::Add(item) => std::slice::from_ref(item),
            CfWrite::Insert(_, items) => items,
            CfWrite::Reserve(_) | CfWrite::Del(_) => &[],
        }
    }

    /// Checks the reply of a write that succeeded: `OK`, `1` (CF.ADD, CF.DEL), or `1` for
    /// every item (CF.INSERT). Err: the reply, as text.
    pub fn check_reply(&self, reply: &Value) -> Result<(), String> {
        let ok = match (self, reply) {
            (CfWrite::Reserve(_), Value::Okay) => true,
            (CfWrite::Add(_) | CfWrite::Del(_), Value::Int(1)) => true,
            (CfWrite::Insert(_, items), Value::Array(a)) => {
                a.len() == items.len() && a.iter().all(|v| *v == Value::Int(1))
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{self:?}: reply {reply:?}"))
        }
    }
}

/// Twins of cuckoo filters: for each key the core's [`Cuckoo`] (the module's own algorithm,
/// checked against RedisBloom by `tests/cuckoo_core_replay.rs`), built by replaying the
/// acknowledged writes in the order they were acknowledged. A server whose filter gives the
/// same CF.SCANDUMP walk holds exactly those writes, each applied once: every acknowledged add
/// there, every acknowledged delete gone, nothing lost or doubled by a move or a restart.
#[derive(Clone, Debug, Default)]
pub struct CfTwins(pub BTreeMap<Vec<u8>, Cuckoo>);

impl CfTwins {
    /// Replays one acknowledged write on the twin of `key`, with the server's outcome (each
    /// item stored, the deleted copy found); panics when the twin disagrees.
    pub fn apply(&mut self, key: &[u8], w: &CfWrite) {
        let create = match w {
            CfWrite::Reserve(s) => Some(*s),
            CfWrite::Add(_) => Some(CfShape::implicit(1024)),
            CfWrite::Insert(c, _) => Some(CfShape::implicit(c.unwrap_or(1024))),
            CfWrite::Del(_) => None,
        };
        if !self.0.contains_key(key) {
            let shape = create.unwrap_or_else(|| panic!("{w:?} on a missing twin"));
            self.0.insert(key.to_vec(), shape.make());
        }
        let cf = self.0.get_mut(key).unwrap();
        for item in w.added() {
            assert_eq!(cf.insert(item, false, u64::MAX), Insert::Inserted, "{w:?}");
        }
        if let CfWrite::Del(item) = w {
            assert!(cf.delete(item).0, "{w:?}: the twin has no copy");
        }
    }

    /// True when `key` on `con` gives the twin's CF.SCANDUMP walk.
    pub fn matches(&self, con: &mut impl ConnectionLike, key: &[u8]) -> bool {
        crate::common::cf_scandump_walk(con, key) == crate::common::cf_core_walk(&self.0[key])
    }

    /// Asserts [`CfTwins::matches`] for every twin; returns the table bytes compared.
    pub fn assert_identical(&self, con: &mut impl ConnectionLike, who: &str) -> u64 {
        for (key, cf) in &self.0 {
            assert!(
                self.matches(con, key),
                "{who}: {} is not byte-identical to its twin ({} sub-filters, {} items)",
                String::from_utf8_lossy(key),
                cf.filters.len(),
                cf.items
            );
        }
        self.0.values().map(Cuckoo::table_bytes).sum()
    }
}
