//! RedisBloom's cuckoo-filter recordings (the shared `fixtures/redisbloom-cf/` set, made by
//! RedisBloom 2.8.20 on Redis 7.0, and its `rb8/` set, made by RedisBloom 8.8.0 on Redis 8.0)
//! checked by their own Python checkers against this module: both data sets (`dump.rdb` and
//! the AOF directory) must load with every recorded reply, the module's AOF rewrite must write
//! RedisBloom's `CF.LOADCHUNK` commands, and the creation commands replayed on a fresh server
//! must build the recorded filters (`--mode both --aof-rewrite-check --replay`).
//!
//! Skipped (with a line saying so) without the shared folder, without `python3`, and for the
//! `rb8/` set without a Redis 8.0 server.

mod common;

use std::path::Path;
use std::process::Command;

/// Runs `checker` with `server` and the module; panics with its DIFF lines unless it exits 0.
fn run_checker(checker: &Path, server: &str, what: &str) {
    let work = tempfile::Builder::new()
        .prefix("redis-bf-cf-fixtures")
        .tempdir()
        .unwrap();
    let module = common::module_path();
    let module = std::fs::canonicalize(&module).unwrap_or(module);
    let port = common::free_port();
    let out = Command::new("python3")
        .arg(checker)
        .arg("--redis-server")
        .arg(server)
        .arg("--module")
        .arg(&module)
        .arg("--port")
        .arg(port.to_string())
        .arg("--workdir")
        .arg(work.path().join("w"))
        .args(["--mode", "both", "--aof-rewrite-check", "--replay"])
        .args(["--max-diffs", "1000"])
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(0) {
        let diffs: Vec<&str> = stdout.lines().filter(|l| l.starts_with("DIFF")).collect();
        let summary: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("DIFF")).collect();
        panic!(
            "{what}: checker exited {:?} with {} DIFF lines:\n{}\n--- summary:\n{}\n--- stderr:\n{stderr}",
            out.status.code(),
            diffs.len(),
            diffs.join("\n"),
            summary.join("\n")
        );
    }
    println!("{what}: {}", stdout.lines().last().unwrap_or(""));
}

fn python_or_skip(test: &str) -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("BF_REQUIRE_SHARED").is_none(),
            "{test}: python3 is needed"
        );
        eprintln!("*** SKIP {test}: python3 not found ***");
    }
    ok
}

#[test]
fn redisbloom_2_8_cuckoo_fixtures_check_clean() {
    let test = "redisbloom_2_8_cuckoo_fixtures_check_clean";
    let Some(shared) = common::shared_or_skip(test) else {
        return;
    };
    if !python_or_skip(test) {
        return;
    }
    let dir = shared.join("fixtures/redisbloom-cf");
    // The set was recorded on Debian's Redis 7.0: use it when it is there.
    let server = if Path::new("/usr/bin/redis-server").exists() {
        "/usr/bin/redis-server".to_string()
    } else {
        common::server_binary()
    };
    run_checker(
        &dir.join("check_fixtures.py"),
        &server,
        "RedisBloom 2.8.20 set",
    );
}

#[test]
fn redisbloom_8_cuckoo_fixtures_check_clean_on_redis_8_0() {
    let test = "redisbloom_8_cuckoo_fixtures_check_clean_on_redis_8_0";
    let Some(shared) = common::shared_or_skip(test) else {
        return;
    };
    let Some(server) = common::server_or_skip("redis 8.0", test) else {
        return;
    };
    if !python_or_skip(test) {
        return;
    }
    let dir = shared.join("fixtures/redisbloom-cf/rb8");
    run_checker(
        &dir.join("check_fixtures.py"),
        &server,
        "RedisBloom 8.8.0 set",
    );
}
