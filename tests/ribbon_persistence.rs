//! Static Ribbon filters (`bf-ribbon`) through persistence, copies and replication, in both
//! states (staging: a set of item hashes; built: a read-only filter), and the off-thread
//! build's rules.
//!
//! - Every reload keeps both states: DEBUG RELOAD, SAVE + restart, DUMP / RESTORE, COPY (an
//!   independent copy), each with `DEBUG DIGEST-VALUE` equal before and after; a staging set
//!   staged in another order has the same DUMP bytes and digest (its hashes are stored sorted);
//!   a built key's SCANDUMP walk is the core's build of the same set.
//! - AOF: with and without RDB preamble, a rewrite then more writes then a restart gives the
//!   same digests, and the AOF never holds an `RF.BUILD` (a finished build is written as its
//!   bytes, `RF.LOADCHUNK`).
//! - Replication: a replica attached before the writes (the command stream) and one attached
//!   after (a full resync) end byte-identical to the primary, and neither ever runs a build.
//! - The build: while it runs the key answers reads from its staged set and refuses writes
//!   and another build; inside MULTI and scripts it runs inline up to 1 000 000 items and is
//!   refused beyond. A key changed while its build runs (DEL, RENAME, FLUSHALL, SWAPDB, SET,
//!   MOVE, DEL + a new value) is never built: the client gets the documented error and the
//!   value that started the build, wherever it now is, is staging again with its set.

mod common;
mod robust;

use common::{
    attach_replica, cmd, digest_value, info_num, info_str, loadchunk_walk, rf_core, rf_core_walk,
    rf_scandump, Server, AOF_NO_PREAMBLE,
};
use redis::{Connection, Value};
use std::time::{Duration, Instant};

type Bytes = Vec<u8>;

const RUNNING: &str = "ERR RF.BUILD is running on this key";
const CHANGED: &str = "ERR the key changed while RF.BUILD ran; nothing was built";
const TOO_BIG_INLINE: &str =
    "ERR RF.BUILD of more than 1000000 items cannot run inside MULTI or a script";

/// `n` items `prefix:i`.
fn items(prefix: &str, n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|i| format!("{prefix}:{i}").into_bytes())
        .collect()
}

/// Stages `items` under `key` with pipelined RF.MADD of 10 000 items each.
fn stage(con: &mut Connection, key: &[u8], items: &[Bytes]) {
    let mut pipe = redis::pipe();
    for batch in items.chunks(10_000) {
        pipe.cmd("RF.MADD").arg(key).arg(batch).ignore();
    }
    let _: () = pipe.query(con).unwrap();
    let card: u64 = cmd("RF.CARD").arg(key).query(con).unwrap();
    assert_eq!(card, items.len() as u64, "staged");
}

/// `RF.INFO key STATE`: "staging" or "built" (RESP2 answers an array of one, as BF.INFO).
fn state_of(con: &mut Connection, key: &[u8]) -> String {
    let v: Vec<String> = cmd("RF.INFO").arg(key).arg("STATE").query(con).unwrap();
    v[0].clone()
}

/// The error text of a reply, or its value shown.
fn text(r: &redis::RedisResult<Value>) -> String {
    common::reply_text(r)
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One key of the test set: staged from `items` (in reverse when `reverse`), then built at
/// `rate` when it is `Some`.
struct Case {
    key: &'static [u8],
    prefix: &'static str,
    n: usize,
    rate: Option<f64>,
    reverse: bool,
}

const CASES: &[Case] = &[
    Case {
        key: b"rf:staging",
        prefix: "s",
        n: 3000,
        rate: None,
        reverse: false,
    },
    Case {
        key: b"rf:staging:rev",
        prefix: "s",
        n: 3000,
        rate: None,
        reverse: true,
    },
    Case {
        key: b"rf:one",
        prefix: "o",
        n: 1,
        rate: None,
        reverse: false,
    },
    Case {
        key: b"rf:built",
        prefix: "b",
        n: 5000,
        rate: Some(0.01),
        reverse: false,
    },
    Case {
        key: b"rf:built:tight",
        prefix: "t",
        n: 2000,
        rate: Some(0.00001),
        reverse: true,
    },
    Case {
        key: b"rf:built:one",
        prefix: "u",
        n: 1,
        rate: Some(0.2),
        reverse: false,
    },
];

impl Case {
    fn items(&self) -> Vec<Bytes> {
        items(self.prefix, self.n)
    }

    fn load(&self, con: &mut Connection) {
        let mut it = self.items();
        if self.reverse {
            it.reverse();
        }
        stage(con, self.key, &it);
        if let Some(rate) = self.rate {
            let _: () = cmd("RF.BUILD")
                .arg(self.key)
                .arg("ERROR")
                .arg(rate)
                .query(con)
                .unwrap();
        }
    }
}

/// What a key shows: its state, items, digest, membership of its set, and for a built key
/// the SCANDUMP walk.
fn check(con: &mut Connection, c: &Case, digest: &str, when: &str) {
    let key = String::from_utf8_lossy(c.key);
    let ty: String = cmd("TYPE").arg(c.key).query(con).unwrap();
    assert_eq!(ty, "bf-ribbon", "{when}: {key}");
    let state = state_of(con, c.key);
    let want_state = if c.rate.is_some() { "built" } else { "staging" };
    assert_eq!(state, want_state, "{when}: {key}");
    let card: u64 = cmd("RF.CARD").arg(c.key).query(con).unwrap();
    assert_eq!(card, c.n as u64, "{when}: {key}");
    assert_eq!(digest_value(con, c.key), digest, "{when}: {key} digest");
    for batch in c.items().chunks(1000) {
        let got: Vec<i64> = cmd("RF.MEXISTS").arg(c.key).arg(batch).query(con).unwrap();
        assert!(
            got.iter().all(|&g| g == 1),
            "{when}: {key}: a false negative"
        );
    }
    if let Some(rate) = c.rate {
        let walk = rf_scandump(con, c.key);
        assert!(
            walk == rf_core_walk(&rf_core(&c.items(), rate)),
            "{when}: {key}: walk"
        );
    }
}

fn load_all(con: &mut Connection) -> Vec<String> {
    CASES
        .iter()
        .map(|c| {
            c.load(con);
            digest_value(con, c.key)
        })
        .collect()
}

fn check_all(con: &mut Connection, digests: &[String], when: &str) {
    for (c, d) in CASES.iter().zip(digests) {
        check(con, c, d, when);
    }
}

#[test]
fn every_reload_keeps_both_states() {
    let mut s = Server::start();
    let mut con = s.conn();
    let digests = load_all(&mut con);
    // The same set staged in two orders: the same bytes and digest (hashes stored sorted).
    assert_eq!(
        digests[0], digests[1],
        "staging digest depends on the order"
    );
    let dumps: Vec<Bytes> = [CASES[0].key, CASES[1].key]
        .iter()
        .map(|k| cmd("DUMP").arg(*k).query(&mut con).unwrap())
        .collect();
    assert!(dumps[0] == dumps[1], "staging DUMP depends on the order");
    let unique: std::collections::BTreeSet<&String> = digests.iter().collect();
    assert_eq!(unique.len(), digests.len() - 1, "{digests:?}");
    check_all(&mut con, &digests, "after loading");

    let _: () = cmd("DEBUG RELOAD").query(&mut con).unwrap();
    check_all(&mut con, &digests, "after DEBUG RELOAD");
    for when in ["after SAVE + restart", "after a second restart"] {
        let _: () = cmd("SAVE").query(&mut con).unwrap();
        s.restart(&[]);
        con = s.conn();
        check_all(&mut con, &digests, when);
    }

    // DUMP / RESTORE and COPY under other names: equal values, equal digests.
    for (c, d) in CASES.iter().zip(&digests) {
        let payload: Bytes = cmd("DUMP").arg(c.key).query(&mut con).unwrap();
        let restored = [c.key, b":restored"].concat();
        let copied = [c.key, b":copied"].concat();
        let restore = cmd("RESTORE").arg(&restored).arg(0).arg(&payload).clone();
        let _: () = restore.query(&mut con).unwrap();
        let n: i64 = cmd("COPY").arg(c.key).arg(&copied).query(&mut con).unwrap();
        assert_eq!(n, 1);
        for k in [restored, copied] {
            let alias = Case {
                key: Box::leak(k.into_boxed_slice()),
                ..*c
            };
            check(&mut con, &alias, d, "a RESTOREd or COPYed key");
        }
    }
    // A copy is independent: staging more into the copy changes its digest, not the
    // original's; a copy of a built key is as read-only as the original.
    let r: Vec<i64> = cmd("RF.MADD rf:staging:copied new")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, vec![1]);
    assert_ne!(digest_value(&mut con, b"rf:staging:copied"), digests[0]);
    check(
        &mut con,
        &CASES[0],
        &digests[0],
        "the original after its copy changed",
    );
    let e = cmd("RF.ADD rf:built:copied new").query::<Value>(&mut con);
    assert!(text(&e).contains("built and read-only"), "{}", text(&e));
}

/// The files of the server's AOF, concatenated (Redis 7+: `appendonlydir/`).
fn aof_bytes(s: &Server) -> Bytes {
    let dir = s.dir.path().join("appendonlydir");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        out.extend(std::fs::read(e.unwrap().path()).unwrap());
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[test]
fn aof_rewrite_and_replay_keep_both_states_without_running_a_build() {
    for (name, options) in [
        ("AOF without preamble", AOF_NO_PREAMBLE),
        ("AOF with RDB preamble", &[("appendonly", "yes")][..]),
    ] {
        let mut s = Server::start_with(&[], options);
        let mut con = s.conn();
        // Half the set before the rewrite, half after it (as commands in the AOF's tail).
        let (before, after) = CASES.split_at(3);
        let mut digests: Vec<String> = before
            .iter()
            .map(|c| {
                c.load(&mut con);
                digest_value(&mut con, c.key)
            })
            .collect();
        let _: String = cmd("BGREWRITEAOF").query(&mut con).unwrap();
        wait_until("the AOF rewrite", || {
            info_num(&mut con, "persistence", "aof_rewrite_in_progress") == 0
                && info_num(&mut con, "persistence", "aof_rewrite_scheduled") == 0
                && info_str(&mut con, "persistence", "aof_last_bgrewrite_status") == "ok"
        });
        for c in after {
            c.load(&mut con);
            digests.push(digest_value(&mut con, c.key));
        }
        let aof = aof_bytes(&s);
        assert!(
            !contains(&aof, b"rf.build"),
            "{name}: the AOF holds an RF.BUILD"
        );
        assert!(
            contains(&aof, b"rf.loadchunk"),
            "{name}: no RF.LOADCHUNK in the AOF"
        );
        s.restart(&[]);
        let mut con = s.conn();
        check_all(&mut con, &digests, &format!("{name}: after restart"));
    }
}

/// The calls of `command` in `INFO commandstats` (0 when never called).
fn calls(con: &mut Connection, command: &str) -> u64 {
    let info: String = cmd("INFO commandstats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[test]
fn replicas_end_byte_identical_and_never_build() {
    let (primary, streamed) = (Server::start(), Server::start());
    attach_replica(&streamed, &primary);
    let mut p = primary.conn();
    let digests = load_all(&mut p);
    // RF.BUILD with ITEMS, and a copy through RF.LOADCHUNK.
    let _: () = cmd("RF.BUILD rf:items ITEMS x y z").query(&mut p).unwrap();
    let walk = rf_scandump(&mut p, b"rf:built");
    loadchunk_walk(&mut p, "RF.LOADCHUNK", b"rf:loaded", &walk);
    let resynced = Server::start();
    attach_replica(&resynced, &primary);
    let offset = info_num(&mut p, "replication", "master_repl_offset");
    for replica in [&streamed, &resynced] {
        let mut r = replica.conn();
        wait_until("the replica to catch up", || {
            info_num(&mut r, "replication", "slave_repl_offset") >= offset
        });
        check_all(&mut r, &digests, "on a replica");
        for k in [&b"rf:items"[..], b"rf:loaded"] {
            assert_eq!(digest_value(&mut r, k), digest_value(&mut p, k));
            assert!(rf_scandump(&mut r, k) == rf_scandump(&mut p, k));
        }
        assert_eq!(calls(&mut r, "rf.build"), 0, "a replica ran RF.BUILD");
    }
    let mut r = streamed.conn();
    // The stream carried the builds as bytes: four builds (three RF.BUILD ERROR, one RF.BUILD
    // ITEMS) of one chunk each, a header and a chunk apiece, and the copy's two; the staging
    // as the six RF.MADD of the cases and the ITEMS of RF.BUILD as a seventh.
    let got = [
        calls(&mut r, "rf.loadchunk"),
        calls(&mut r, "rf.madd"),
        calls(&mut r, "rf.add"),
    ];
    assert_eq!(
        got,
        [2 * 4 + 2, 7, 0],
        "RF.LOADCHUNK, RF.MADD, RF.ADD on the replica"
    );
}

/// Starts RF.BUILD of `key` (staged from `set`) on its own connection (a thread); returns
/// when a probe sees the build running (`RF.ADD key <a staged item>` refused with
/// [`RUNNING`]), or `None` when the build finished first (the caller retries bigger).
fn start_build(
    s: &Server,
    con: &mut Connection,
    key: &str,
    set: &[Bytes],
) -> Option<std::thread::JoinHandle<String>> {
    let mut builder = s.conn();
    let k = key.to_string();
    let handle = std::thread::spawn(move || text(&cmd("RF.BUILD").arg(&k).query(&mut builder)));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let probe = text(&cmd("RF.ADD").arg(key).arg(&set[0]).query(con));
        if probe == format!("(error) {RUNNING}") {
            return Some(handle);
        }
        if probe != "0" {
            // Built already (or another answer, which the caller's checks show).
            let reply = handle.join().unwrap();
            assert_eq!(reply, "OK", "{key}: probe {probe}");
            return None;
        }
        assert!(Instant::now() < deadline, "{key}: the build never started");
    }
}

/// Runs `commands` in one pipeline right behind a probe (all read from one buffer, so no
/// build result is installed between them); true when the probe saw the build running, so
/// every command ran while it did. Their replies are returned.
fn during_build(
    con: &mut Connection,
    key: &str,
    item: &[u8],
    commands: &[&str],
) -> Option<Vec<String>> {
    let mut pipe = redis::pipe();
    pipe.cmd("RF.ADD").arg(key).arg(item);
    for line in commands {
        let args = common::split_args(line);
        let c = pipe.cmd(std::str::from_utf8(&args[0]).unwrap());
        for a in &args[1..] {
            c.arg(&a[..]);
        }
    }
    let replies: Vec<Value> = robust::raw_pipe(con, &pipe, commands.len() + 1);
    let texts: Vec<String> = replies
        .into_iter()
        .map(|v| common::value_text(&v, false))
        .collect();
    (texts[0] == format!("(error) {RUNNING}")).then(|| texts[1..].to_vec())
}

/// What happened around a build that commands raced: its key, the staged set, the digest of
/// the staged value, the build's reply, and the commands' replies (run while it ran).
struct Raced {
    key: String,
    set: Vec<Bytes>,
    digest: String,
    reply: String,
    during: Vec<String>,
}

/// FLUSHALL, stages a fresh set (`prefix<attempt>:i`) and builds it, running `commands` (`{k}`
/// the key) right behind a probe that sees the build running. A build that ended before the
/// probe (a plain success) is retried with twice the items, five times at most.
fn race(s: &Server, con: &mut Connection, prefix: &str, commands: &[&str]) -> Raced {
    let mut n = 250_000;
    for attempt in 0..5 {
        let _: () = cmd("FLUSHALL").query(con).unwrap();
        let key = format!("{prefix}{attempt}");
        let set = items(&key, n);
        stage(con, key.as_bytes(), &set);
        let digest = digest_value(con, key.as_bytes());
        n *= 2;
        let Some(handle) = start_build(s, con, &key, &set) else {
            continue;
        };
        let lines: Vec<String> = commands.iter().map(|c| c.replace("{k}", &key)).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let during = during_build(con, &key, &set[0], &refs);
        let reply = handle.join().unwrap();
        match during {
            Some(during) => {
                return Raced {
                    key,
                    set,
                    digest,
                    reply,
                    during,
                }
            }
            None => assert_eq!(reply, "OK", "{key}: a build that ended first"),
        }
    }
    panic!("{prefix}: the build was never seen running");
}

/// While a build runs: reads answer from the staged set, writes and another build are
/// refused; then the client gets OK and the key is the core's build of the set. Inside MULTI
/// and Lua a build runs inline (small sets) or is refused (more than 1 000 000 items).
#[test]
fn a_running_build_answers_from_its_set_and_inline_builds_have_a_limit() {
    let s = Server::start();
    let mut con = s.conn();
    // Inline: MULTI and EVAL build small sets at once.
    let r: Value = redis::pipe()
        .atomic()
        .cmd("RF.MADD")
        .arg("m")
        .arg("a")
        .arg("b")
        .cmd("RF.BUILD")
        .arg("m")
        .cmd("RF.EXISTS")
        .arg("m")
        .arg("a")
        .cmd("RF.INFO")
        .arg("m")
        .arg("STATE")
        .query(&mut con)
        .unwrap();
    assert_eq!(common::value_text(&r, false), "[[1,1],OK,1,[built]]");
    let r: String = cmd("EVAL")
        .arg("redis.call('RF.ADD', KEYS[1], 'x'); return redis.call('RF.BUILD', KEYS[1])")
        .arg(1)
        .arg("lua")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    assert_eq!(state_of(&mut con, b"lua"), "built");
    // Past the inline limit: refused in MULTI and in a script, the key left staging.
    let big = items("big", 1_000_001);
    stage(&mut con, b"big", &big);
    let digest = digest_value(&mut con, b"big");
    let _: () = cmd("MULTI").query(&mut con).unwrap();
    let queued: String = cmd("RF.BUILD big").query(&mut con).unwrap();
    assert_eq!(queued, "QUEUED");
    let r = common::value_text(&robust::raw(&mut con, &cmd("EXEC")), false);
    assert_eq!(r, format!("[(error) {TOO_BIG_INLINE}]"), "MULTI");
    let r = cmd("EVAL")
        .arg("return redis.call('RF.BUILD', KEYS[1])")
        .arg(1)
        .arg("big")
        .query::<Value>(&mut con);
    assert!(text(&r).contains(TOO_BIG_INLINE), "EVAL: {}", text(&r));
    assert_eq!(digest_value(&mut con, b"big"), digest);
    assert_eq!(state_of(&mut con, b"big"), "staging");
    let _: i64 = cmd("DEL big").query(&mut con).unwrap();
    // The running build: reads from the set, writes refused, then OK and the core's filter.
    let r = race(
        &s,
        &mut con,
        "run",
        &[
            "RF.CARD {k}",
            "RF.INFO {k} STATE",
            "RF.EXISTS {k} {k}:1",
            "RF.MEXISTS {k} {k}:2 never",
            "RF.MADD {k} {k}:3",
            "RF.ADD {k} new",
            "RF.BUILD {k}",
            "RF.SCANDUMP {k} 0",
        ],
    );
    assert_eq!(r.reply, "OK", "{}", r.key);
    let running = format!("(error) {RUNNING}");
    assert_eq!(
        r.during,
        vec![
            r.set.len().to_string(),
            "[staging]".into(),
            "1".into(),
            "[1,0]".into(),
            running.clone(),
            running.clone(),
            running,
            "(error) ERR RF.SCANDUMP: the filter is not built".into(),
        ],
        "{}",
        r.key
    );
    assert!(rf_scandump(&mut con, r.key.as_bytes()) == rf_core_walk(&rf_core(&r.set, 0.01)));
    assert_eq!(info_num(&mut con, "bf", "bf_rf_builds_running"), 0);
}

/// A change made while a build runs: its name, its commands (`{k}` the key), where the value
/// that started the build is afterwards (db, key) if it is still somewhere, and what the key
/// itself holds afterwards ("" missing, "string v", "staging N", "built {n}").
type ChangeCase = (
    &'static str,
    &'static [&'static str],
    Option<(u8, &'static str)>,
    &'static str,
);

/// A key changed while its build runs is never built: for each change, the client gets
/// [`CHANGED`], no key holds a built filter, and the value that started the build is staging
/// again with its whole set wherever the change put it.
#[test]
fn a_key_changed_while_its_build_runs_is_not_built() {
    let s = Server::start();
    let mut con = s.conn();
    // (name, commands run during the build, where the started value is afterwards (db, key),
    // what the key itself holds afterwards: "" missing, "string v", "staging N").
    let cases: &[ChangeCase] = &[
        ("DEL", &["DEL {k}"], None, ""),
        ("UNLINK", &["UNLINK {k}"], None, ""),
        (
            "RENAME",
            &["RENAME {k} {k}:moved"],
            Some((0, "{k}:moved")),
            "",
        ),
        ("FLUSHALL", &["FLUSHALL"], None, ""),
        ("FLUSHDB", &["FLUSHDB"], None, ""),
        ("SWAPDB", &["SWAPDB 0 9"], Some((9, "{k}")), ""),
        ("MOVE", &["MOVE {k} 9"], Some((9, "{k}")), ""),
        ("SET", &["SET {k} v"], None, "string v"),
        (
            "DEL + RF.ADD",
            &["DEL {k}", "RF.ADD {k} new"],
            None,
            "staging 1",
        ),
        // The very value back under its name and db: the build is installed.
        (
            "RENAME back",
            &["RENAME {k} {k}:x", "RENAME {k}:x {k}"],
            None,
            "built {n}",
        ),
    ];
    for &(name, commands, moved, left) in cases {
        let Raced {
            key,
            set,
            digest: digest_before,
            reply,
            during,
        } = race(&s, &mut con, "t", commands);
        let n = set.len();
        {
            let installed = left.starts_with("built");
            let want = if installed {
                "OK".to_string()
            } else {
                format!("(error) {CHANGED}")
            };
            assert_eq!(reply, want, "{name}: {during:?}");
            // Where the started value is now: staging, with its set and digest.
            if let Some((db, at)) = moved {
                let at = at.replace("{k}", &key);
                let mut c = s.conn();
                let _: () = cmd("SELECT").arg(db).query(&mut c).unwrap();
                let state = state_of(&mut c, at.as_bytes());
                assert_eq!(state, "staging", "{name}: {at} on db {db}");
                assert_eq!(
                    cmd("RF.CARD").arg(&at).query::<u64>(&mut c).unwrap(),
                    n as u64,
                    "{name}"
                );
                assert_eq!(digest_value(&mut c, at.as_bytes()), digest_before, "{name}");
                // Staging again: it builds (and the started value is not stuck as running).
                let _: () = cmd("RF.BUILD").arg(&at).query(&mut c).unwrap();
                assert!(
                    rf_scandump(&mut c, at.as_bytes()) == rf_core_walk(&rf_core(&set, 0.01)),
                    "{name}"
                );
            }
            // What the key itself holds on db 0.
            let shown = match cmd("TYPE")
                .arg(&key)
                .query::<String>(&mut con)
                .unwrap()
                .as_str()
            {
                "none" => String::new(),
                "string" => format!(
                    "string {}",
                    cmd("GET").arg(&key).query::<String>(&mut con).unwrap()
                ),
                "bf-ribbon" => format!(
                    "{} {}",
                    state_of(&mut con, key.as_bytes()),
                    cmd("RF.CARD").arg(&key).query::<u64>(&mut con).unwrap()
                ),
                other => other.to_string(),
            };
            let left = left.replace("{n}", &n.to_string());
            assert_eq!(shown, left, "{name}: what {key} holds");
            assert_eq!(
                info_num(&mut con, "bf", "bf_rf_builds_running"),
                0,
                "{name}"
            );
        }
    }
}

/// A build whose client is killed while it runs installs nothing: the key becomes plain
/// staging again (writes accepted, no build counted as running) with its set, and a new
/// RF.BUILD of it gives the core's filter.
#[test]
fn a_build_whose_client_left_leaves_the_key_staging() {
    let s = Server::start();
    let mut con = s.conn();
    // Kill every other client (the builder is the only one) in the probe's pipeline.
    let r = race(
        &s,
        &mut con,
        "gone",
        &["CLIENT KILL TYPE normal SKIPME yes"],
    );
    let key = r.key.as_str();
    assert_eq!(r.during, ["1"], "one client killed");
    assert_ne!(r.reply, "OK", "the killed client got an answer");
    // Once the worker ends the value is staging again, not stuck as running.
    wait_until("the abandoned build to end", || {
        text(&cmd("RF.ADD").arg(key).arg(&r.set[0]).query(&mut con)) == "0"
    });
    assert_eq!(state_of(&mut con, key.as_bytes()), "staging");
    assert_eq!(digest_value(&mut con, key.as_bytes()), r.digest);
    assert_eq!(info_num(&mut con, "bf", "bf_rf_builds_running"), 0);
    let _: () = cmd("RF.BUILD").arg(key).query(&mut con).unwrap();
    assert!(rf_scandump(&mut con, key.as_bytes()) == rf_core_walk(&rf_core(&r.set, 0.01)));
}
