//! Helpers shared by the robustness suites (`replication.rs`, `cluster.rs`, `crash.rs`,
//! `hostile.rs`): deterministic randomness, INFO fields, waiting, SCANDUMP walks, batched
//! membership checks and exact error texts.
#![allow(dead_code)]

use redis::{ConnectionLike, Value};
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

/// Asks BF.MEXISTS for `items` in batches of `batch`; returns the items answered 0.
fn missing(
    con: &mut impl ConnectionLike,
    key: &[u8],
    items: &[Vec<u8>],
    batch: usize,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for group in items.chunks(batch) {
        let answers: Vec<i64> = crate::common::cmd("BF.MEXISTS")
            .arg(key)
            .arg(group)
            .query(con)
            .expect("BF.MEXISTS");
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

/// Asserts that BF.MEXISTS (`batch` items a call) reports every one of `items` present in `key`
/// on `con`: no false negative. `who` names the server or the moment in the failure message.
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
