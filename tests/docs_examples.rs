//! The commands the docs quote are true.
//!
//! - Every `redis-cli` session quoted in the README and the guides in `docs/` (a fenced block
//!   whose first line is a `127.0.0.1:6379> ` prompt) is replayed against a fresh server with
//!   this tree's module, one command at a time through `redis-cli --no-raw` (which prints
//!   replies as an interactive session does), and every reply must be exactly the text shown
//!   under its command.
//! - Every shell command quoted in any Markdown file names things that exist: the
//!   `scripts/…` and `bench/…` files it runs, and the targets of `cargo test --test X`,
//!   `cargo run --example X` and `cargo bench --bench X`.

mod common;

use common::Server;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const PROMPT: &str = "127.0.0.1:6379> ";

/// One quoted session: where it starts and its (command, expected reply) steps.
struct Session {
    file: String,
    line: usize,
    steps: Vec<(usize, String, String)>,
}

/// The fenced blocks of `text`: (1-based line of the opening fence, the lines inside).
fn fenced_blocks(text: &str) -> Vec<(usize, Vec<&str>)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match open.take() {
            Some(block) if t.starts_with("```") => out.push(block),
            Some(mut block) => {
                block.1.push(line);
                open = Some(block);
            }
            None if t.starts_with("```") => open = Some((i + 1, Vec::new())),
            None => {}
        }
    }
    out
}

/// The sessions quoted in `text`.
fn sessions(file: &str, text: &str) -> Vec<Session> {
    let mut out = Vec::new();
    for (fence, lines) in fenced_blocks(text) {
        if !lines.first().is_some_and(|l| l.starts_with(PROMPT)) {
            continue;
        }
        let mut steps: Vec<(usize, String, String)> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if let Some(cmd) = line.strip_prefix(PROMPT) {
                steps.push((fence + 1 + i, cmd.to_string(), String::new()));
            } else {
                let reply = &mut steps.last_mut().unwrap().2;
                reply.push_str(line);
                reply.push('\n');
            }
        }
        out.push(Session {
            file: file.to_string(),
            line: fence,
            steps,
        });
    }
    out
}

/// The README and every guide in `docs/`.
fn user_docs() -> Vec<PathBuf> {
    let mut docs = vec![Path::new(ROOT).join("README.md")];
    for e in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    docs.sort();
    docs
}

/// What `redis-cli --no-raw` prints for `cmd` (one command line, quoted as redis-cli reads it).
fn redis_cli(port: u16, cmd: &str) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--no-raw"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli (Debian's redis-tools, which scripts/test.sh installs) is needed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{cmd}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// Replays `session` on a fresh server: the steps whose reply differs, as messages.
fn replay(session: &Session) -> Vec<String> {
    let server = Server::start();
    let mut bad = Vec::new();
    for (line, cmd, want) in &session.steps {
        let got = redis_cli(server.port, cmd);
        // The docs quote RedisBloom 2.8's texts; Redis 8 answers RedisBloom 8's.
        let want = &common::errors_by_line::for_server_line(want);
        if &got != want {
            bad.push(format!(
                "{}:{line}: `{cmd}`\n--- the doc shows:\n{want}--- the server answers:\n{got}",
                session.file
            ));
        }
    }
    bad
}

#[test]
fn quoted_sessions_give_the_replies_shown() {
    let mut all = Vec::new();
    for doc in user_docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(ROOT).unwrap().display().to_string();
        all.extend(sessions(&name, &text));
    }
    assert!(
        all.iter().any(|s| s.file == "README.md"),
        "no session found in README.md"
    );
    let steps: usize = all.iter().map(|s| s.steps.len()).sum();
    assert!(steps >= 20, "only {steps} quoted commands found");
    let mut bad = Vec::new();
    for s in &all {
        bad.extend(replay(s));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_wrong_reply_is_reported() {
    let doc = "text\n\n```text\n127.0.0.1:6379> BF.ADD k a\n(integer) 1\n\
               127.0.0.1:6379> BF.ADD k a\n(integer) 1\n127.0.0.1:6379> BF.CARD k\n\
               (integer) 1\n```\n\n```text\nnot a session\n```\n";
    let found = sessions("doc.md", doc);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].line, 3);
    assert_eq!(found[0].steps.len(), 3);
    let bad = replay(&found[0]);
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(bad[0].starts_with("doc.md:6: `BF.ADD k a`"), "{}", bad[0]);
    assert!(
        bad[0].ends_with("--- the server answers:\n(integer) 0\n"),
        "{}",
        bad[0]
    );
}

/// The code a Markdown file quotes, as (line, text): each line of a fenced block, and each
/// inline code span (a span broken over lines joined with spaces).
fn quoted_code(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut prose_lines = Vec::new();
    let mut fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        } else if fence {
            out.push((i + 1, line.to_string()));
        } else {
            prose.push_str(line);
            prose.push('\n');
            prose_lines.push(i + 1);
        }
    }
    let mut line = 0;
    for (i, part) in prose.split('`').enumerate() {
        if i % 2 == 1 {
            out.push((
                prose_lines[line.min(prose_lines.len() - 1)],
                part.replace('\n', " "),
            ));
        }
        line += part.matches('\n').count();
    }
    out
}

/// What is wrong with the commands quoted in `code`: files run that do not exist, cargo
/// targets that are not there.
fn unknown_names(code: &str) -> Vec<String> {
    let root = Path::new(ROOT);
    let exists = |rel: String| root.join(rel).exists();
    let mut bad = Vec::new();
    let words: Vec<&str> = code.split_whitespace().collect();
    let cargo = words.iter().position(|w| *w == "cargo");
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_end_matches([',', ';', ')', '.', ':']);
        let w = w.strip_prefix("./").unwrap_or(w);
        if (w.starts_with("scripts/") || w.starts_with("bench/"))
            && !w.contains(['*', '<', '…'])
            && !w.ends_with('/')
            && !exists(w.to_string())
        {
            bad.push(format!("{w}: no such file"));
        }
        let Some(name) = words.get(i + 1) else {
            continue;
        };
        let plain = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if cargo.is_none_or(|c| c > i) || !plain {
            continue;
        }
        let ok = match w {
            "--test" => ["tests", "core/tests"]
                .iter()
                .any(|d| exists(format!("{d}/{name}.rs")) || exists(format!("{d}/{name}/main.rs"))),
            "--example" => ["examples", "core/examples"]
                .iter()
                .any(|d| exists(format!("{d}/{name}.rs")) || exists(format!("{d}/{name}/main.rs"))),
            "--bench" => ["benches", "core/benches"]
                .iter()
                .any(|d| exists(format!("{d}/{name}.rs"))),
            _ => true,
        };
        if !ok {
            bad.push(format!("cargo {w} {name}: no such target"));
        }
    }
    bad
}

#[test]
fn quoted_shell_commands_name_what_exists() {
    assert_eq!(
        unknown_names("cargo test --release --test bloom_commands --test no_such_file"),
        ["cargo --test no_such_file: no such target"]
    );
    assert_eq!(
        unknown_names("cargo run --release --example sizing -- 1000 0.01; bench/gone.sh"),
        ["bench/gone.sh: no such file"]
    );
    assert_eq!(
        unknown_names("cargo bench --bench core && cargo run --example nope"),
        ["cargo --example nope: no such target"]
    );
    assert!(unknown_names("cargo test --test NAME; scripts/<name>.sh").is_empty());

    let files = common::repo_files(Path::new(ROOT), &["md"]);
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.strip_prefix(ROOT).unwrap().display();
        for (line, code) in quoted_code(&text) {
            if code.contains("cargo ") || code.contains("scripts/") || code.contains("bench/") {
                checked += 1;
            }
            for problem in unknown_names(&code) {
                bad.push(format!("{name}:{line}: {problem}"));
            }
        }
    }
    assert!(checked > 80, "only {checked} quoted commands found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
