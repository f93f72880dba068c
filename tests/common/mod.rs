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

/// A free TCP port on 127.0.0.1 (bound then released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running redis-server with the module loaded. Killed and its directory removed on drop.
pub struct Server {
    pub port: u16,
    pub dir: tempfile::TempDir,
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
        let dir = tempfile::Builder::new()
            .prefix("redis-bf-test")
            .tempdir()
            .unwrap();
        let mut s = Server {
            port: 0,
            dir,
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
            let mut cmd = Command::new(server_binary());
            cmd.arg("--port")
                .arg(self.port.to_string())
                .arg("--bind")
                .arg("127.0.0.1")
                .arg("--dir")
                .arg(self.dir.path())
                .arg("--save")
                .arg("")
                .arg("--enable-debug-command")
                .arg("yes")
                .arg("--daemonize")
                .arg("no")
                .arg("--logfile")
                .arg(self.dir.path().join("server.log"));
            let mut load = vec![module_path().display().to_string()];
            load.extend(self.module_args.iter().cloned());
            cmd.arg("--loadmodule").args(&load);
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
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    return false;
                }
            }
            if let Ok(mut con) = self.try_conn() {
                // Wait until loading (RDB/AOF) is over.
                if let Ok(r) = redis::cmd("PING").query::<String>(&mut con) {
                    if r == "PONG" {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
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
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the server with SHUTDOWN NOSAVE (or kill) and starts it again on the same port and
    /// directory with the same arguments (plus `extra`), so it loads what it persisted.
    pub fn restart(&mut self, extra: &[(&str, &str)]) {
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
        for (k, v) in extra {
            self.extra.retain(|(a, _)| a != k);
            self.extra.push((k.to_string(), v.to_string()));
        }
        self.launch();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
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

/// The whole SCANDUMP walk of a key: `(iterator, bytes)` pairs from the header (iterator 0) to
/// the last chunk, without the final `(0, "")` reply.
pub fn scandump(con: &mut impl redis::ConnectionLike, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(key)
            .arg(iter)
            .query(con)
            .expect("BF.SCANDUMP");
        if next == 0 {
            return out;
        }
        out.push((next, data));
        iter = next;
    }
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
