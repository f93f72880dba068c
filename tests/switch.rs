//! Switching a server from RedisBloom to redis-bf when its data holds keys of RedisBloom's
//! other families (Count-Min sketch `CMSk-TYPE`, Top-K `TopK-TYPE`, T-Digest `TDIS-TYPE`),
//! which redis-bf does not implement: `scripts/switch-check.sh` lists them beforehand, and a
//! switched server that meets one (RDB at start-up, `RESTORE`) logs the module's line naming
//! the key, the family and the way out, and still refuses the value.
//!
//! RedisBloom is not needed: the test stub `tests/stubs/redisbloom_types.rs` (example
//! `redisbloom_types_stub`, built here) registers the three type names, and its values stand
//! for RedisBloom's. Every case runs on every server of `common::servers()`.

mod common;

use common::{
    bare_server_command, exit_status_within, free_port, server_command, stop_child, wait_pong,
    Server,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The families as (stub family argument, type name, the family as the log line names it,
/// its commands).
const FAMILIES: [(&str, &str, &str, &str); 3] = [
    ("cms", "CMSk-TYPE", "Count-Min sketch", "CMS.*"),
    ("topk", "TopK-TYPE", "Top-K", "TOPK.*"),
    ("tdigest", "TDIS-TYPE", "T-Digest", "TDIGEST.*"),
];

/// The test stub module, built (or found up to date) with cargo: beside this test binary's
/// directory, in `examples/`.
fn stub_path() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let st = Command::new(env!("CARGO"))
            .args(["build", "--release", "--example", "redisbloom_types_stub"])
            .arg("--manifest-path")
            .arg(&manifest)
            .status()
            .expect("cargo");
        assert!(
            st.success(),
            "cargo build --example redisbloom_types_stub failed"
        );
        let exe = std::env::current_exe().unwrap();
        let p = exe
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .join("examples/libredisbloom_types_stub.so");
        assert!(p.exists(), "{} not built", p.display());
        p
    })
    .clone()
}

/// A server with the stub module alone (redis-bf registers the same type names, so the two
/// are never loaded together), or with no module at all. Killed and its directory removed on
/// drop.
struct StubServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl StubServer {
    /// A server with the stub.
    fn start(bin: &str) -> StubServer {
        StubServer::start_with(bin, Some(stub_path()))
    }

    /// A server with `module` only, if any.
    fn start_with(bin: &str, module: Option<PathBuf>) -> StubServer {
        let dir = tempfile::Builder::new()
            .prefix("redis-bf-stub")
            .tempdir()
            .unwrap();
        for _ in 0..5 {
            let port = free_port();
            let log = dir.path().join("stub.log");
            let mut cmd = bare_server_command(bin, port, dir.path(), Some(&log));
            if let Some(m) = &module {
                cmd.arg("--loadmodule").arg(m);
            }
            let child = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start the stub server");
            let mut child = Some(child);
            if wait_pong(&mut child, port, Duration::from_secs(20)) {
                return StubServer { port, dir, child };
            }
            stop_child(&mut child);
        }
        let log = std::fs::read_to_string(dir.path().join("stub.log")).unwrap_or_default();
        panic!("the stub server did not start; log:\n{log}");
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}

/// Runs `scripts/switch-check.sh -h 127.0.0.1 -p PORT <more>` and returns (exit code, stdout,
/// stderr).
fn switch_check(port: u16, more: &[&str]) -> (i32, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/switch-check.sh");
    let out = Command::new("bash")
        .arg(script)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(more)
        .output()
        .expect("bash");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The module's log line for a refused `family` value at `key` (its start: the rest is the
/// same for all).
fn refusal_start(key: &str, what: &str, ty: &str, cmds: &str) -> String {
    format!(
        "<bf> redis-bf cannot load key \"{key}\": it holds a {what} (type {ty}, RedisBloom's \
         {cmds} commands), and redis-bf implements only RedisBloom's Bloom (BF.*) and cuckoo \
         (CF.*) filters. Keep RedisBloom on this server, or remove its Count-Min sketch, Top-K \
         and T-Digest keys before switching (scripts/switch-check.sh lists them)."
    )
}

#[test]
fn check_script_lists_the_keys_of_each_family_per_database() {
    for (name, bin) in common::servers() {
        let stub = StubServer::start(&bin);
        let mut con = stub.conn();
        // (db, family, keys): every family in db 0, Count-Min sketches in db 3 as well, and a
        // name with a newline and a quote, shown escaped on one line.
        let keys: [(i64, &str, &[&str]); 4] = [
            (0, "cms", &["c1", "c2", "c3"]),
            (0, "topk", &["top\n\"k\""]),
            (0, "tdigest", &["d1", "d2"]),
            (3, "cms", &["other"]),
        ];
        for (db, family, names) in keys {
            redis::cmd("SELECT").arg(db).exec(&mut con).unwrap();
            for k in names {
                redis::cmd("STUB.CREATE")
                    .arg(family)
                    .arg(*k)
                    .exec(&mut con)
                    .unwrap();
            }
            // Strings around them, which the check must not count.
            redis::cmd("SET")
                .arg(format!("s{db}{family}"))
                .arg("v")
                .exec(&mut con)
                .unwrap();
        }
        let (code, out, err) = switch_check(stub.port, &[]);
        assert_eq!(code, 1, "{name}: exit code; stdout:\n{out}\nstderr:\n{err}");
        let lines: Vec<&str> = out.lines().collect();
        // (the start of a line, the names it must quote)
        let want: [(&str, &[&str]); 4] = [
            (
                "db0: 3 Count-Min sketch key(s) (type CMSk-TYPE, RedisBloom's CMS.*): ",
                &["\"c1\"", "\"c2\"", "\"c3\""],
            ),
            (
                "db0: 1 Top-K key(s) (type TopK-TYPE, RedisBloom's TOPK.*): ",
                &["\"top\\n\\\"k\\\"\""],
            ),
            (
                "db0: 2 T-Digest key(s) (type TDIS-TYPE, RedisBloom's TDIGEST.*): ",
                &["\"d1\"", "\"d2\""],
            ),
            (
                "db3: 1 Count-Min sketch key(s) (type CMSk-TYPE, RedisBloom's CMS.*): ",
                &["\"other\""],
            ),
        ];
        for (start, names) in want {
            let line = lines
                .iter()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("{name}: no line {start:?} in:\n{out}"));
            for n in names {
                assert!(line.contains(n), "{name}: {n} not in {line:?}");
            }
        }
        assert!(
            out.contains(
                "switch-check: 7 key(s) of RedisBloom's Count-Min sketch, Top-K or T-Digest"
            ),
            "{name}:\n{out}"
        );
        assert_eq!(
            lines.len(),
            5,
            "{name}: one line per (db, family) found, then the summary:\n{out}"
        );

        // A redis-bf server with Bloom, window and cuckoo filters only: nothing found.
        let s = Server::start_on(&bin, &[], &[]);
        let mut con = s.conn();
        for line in [
            "BF.ADD b x",
            "BF.RESERVE w 0.01 100 WINDOW 60",
            "CF.ADD c x",
            "SET s v",
        ] {
            common::cmd(line).exec(&mut con).unwrap();
        }
        // Without and with a password (`-a`, whose warning on stderr is no reply).
        common::cmd("CONFIG SET requirepass sec-ret")
            .exec(&mut con)
            .unwrap();
        let (code, out, err) = switch_check(s.port, &[]);
        assert_eq!(
            code, 2,
            "{name}: no password; stdout:\n{out}\nstderr:\n{err}"
        );
        assert!(err.contains("NOAUTH"), "{name}: {err}");
        let (code, out, err) = switch_check(s.port, &["-a", "sec-ret"]);
        assert_eq!(code, 0, "{name}: exit code; stdout:\n{out}\nstderr:\n{err}");
        assert_eq!(
            out, "switch-check: no Count-Min sketch, Top-K or T-Digest keys in any database.\n",
            "{name}"
        );
        // A server without modules, where no module registers the type names (Valkey 9.1
        // answers SCAN ... TYPE with `ERR unknown type name`, the others with no keys).
        let bare = StubServer::start_with(&bin, None);
        common::cmd("SET s v").exec(&mut bare.conn()).unwrap();
        let (code, out, err) = switch_check(bare.port, &[]);
        assert_eq!(
            code, 0,
            "{name}: no modules; stdout:\n{out}\nstderr:\n{err}"
        );
        assert_eq!(
            out, "switch-check: no Count-Min sketch, Top-K or T-Digest keys in any database.\n",
            "{name}"
        );
        // No server there: exit 2.
        let (code, _, err) = switch_check(free_port(), &[]);
        assert_eq!(code, 2, "{name}: no server: {err}");
        // An option that is not a connection option (-r 3 repeated each SCAN and counted its
        // keys three times): refused, exit 2, nothing sent.
        for (more, want) in [
            (&["-r", "3"][..], "-r: not a connection option"),
            (&["-n", "5"][..], "-n: not a connection option"),
            (&["--csv"][..], "--csv: not a connection option"),
            (&["--user"][..], "--user needs a value"),
        ] {
            let (code, out, err) = switch_check(bare.port, more);
            assert_eq!((code, out.as_str()), (2, ""), "{name}: {more:?}: {err}");
            assert!(err.contains(want), "{name}: {more:?}: {err}");
        }
    }
}

#[test]
fn switched_server_logs_each_refused_family_and_exits() {
    for (name, bin) in common::servers() {
        for (family, ty, what, cmds) in FAMILIES {
            let key = format!("sketch:{family}");
            let stub = StubServer::start(&bin);
            let mut con = stub.conn();
            redis::cmd("STUB.CREATE")
                .arg(family)
                .arg(&key)
                .exec(&mut con)
                .unwrap();
            redis::cmd("SAVE").exec(&mut con).unwrap();

            // The same RDB, loaded by a server with redis-bf instead of the stub.
            let dir = tempfile::Builder::new()
                .prefix("redis-bf-switch")
                .tempdir()
                .unwrap();
            std::fs::copy(
                stub.dir.path().join("dump.rdb"),
                dir.path().join("dump.rdb"),
            )
            .unwrap();
            let log = dir.path().join("server.log");
            let mut child = server_command(&bin, free_port(), dir.path(), Some(&log))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let st = exit_status_within(&mut child, Duration::from_secs(30));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // It stops without serving (with status 0 on Redis 7.0, whose redis-check-rdb pass
            // after the refusal finds the file well formed): the exit is what is asserted.
            assert!(st.is_some(), "{name} {family}: still running; log:\n{text}");
            let line = refusal_start(&key, what, ty, cmds);
            let found: Vec<&str> = text.lines().filter(|l| l.contains(&line)).collect();
            assert_eq!(found.len(), 1, "{name} {family}: {line:?} once in:\n{text}");
            assert!(
                found[0].contains(" # "),
                "{name}: a warning line: {}",
                found[0]
            );
        }
    }
}

#[test]
fn restore_of_such_a_value_is_refused_and_logged() {
    for (name, bin) in common::servers() {
        let stub = StubServer::start(&bin);
        let mut scon = stub.conn();
        let s = Server::start_on(&bin, &[], &[]);
        let mut con = s.conn();
        common::cmd("BF.ADD b x").exec(&mut con).unwrap();
        for (family, ty, what, cmds) in FAMILIES {
            let key = format!("r:{family}");
            redis::cmd("STUB.CREATE")
                .arg(family)
                .arg(&key)
                .exec(&mut scon)
                .unwrap();
            let payload: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut scon).unwrap();
            let r: redis::RedisResult<()> = redis::cmd("RESTORE")
                .arg(&key)
                .arg(0)
                .arg(&payload)
                .query(&mut con);
            let e = r.expect_err("RESTORE must be refused");
            assert_eq!(
                common::reply_text(&Err(e)),
                "(error) ERR Bad data format",
                "{name} {family}"
            );
            let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
            assert_eq!(keys, ["b"], "{name} {family}: nothing else changed");
            let line = refusal_start(&key, what, ty, cmds);
            let log = s.log();
            assert_eq!(
                log.lines().filter(|l| l.contains(&line)).count(),
                1,
                "{name} {family}: {line:?} once in:\n{log}"
            );
        }
        let exists: i64 = common::cmd("BF.EXISTS b x").query(&mut con).unwrap();
        assert_eq!(exists, 1, "{name}");
    }
}
