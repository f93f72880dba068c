//! The set-up that `scripts/start.sh` and `scripts/test.sh` do before they build, run on a
//! fake system: `dpkg-query`, `apt-cache`, `apt-get`, `sudo` and `id` are stubs in a temporary
//! directory put first on PATH, so a missing package can be shown without removing one.
//! The stubs record every apt-get / sudo call in `calls.log`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A fake system: `installed` packages are reported by dpkg-query, `uid` by `id -u`.
struct FakeSystem {
    dir: tempfile::TempDir,
}

impl FakeSystem {
    fn new(installed: &[&str], uid: u32) -> FakeSystem {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let calls = dir.path().join("calls.log");
        let stub = |name: &str, body: String| {
            let p = bin.join(name);
            std::fs::write(&p, format!("#!/bin/bash\n{body}\n")).unwrap();
            let mut perm = std::fs::metadata(&p).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(&p, perm).unwrap();
        };
        let list = installed.join(" ");
        stub(
            "dpkg-query",
            format!(
                "pkg=\"${{@: -1}}\"; for p in {list}; do [ \"$p\" = \"$pkg\" ] && \
                 {{ printf 'install ok installed'; exit 0; }}; done; exit 1"
            ),
        );
        stub(
            "apt-cache",
            "echo \"$2:\"; echo '  Installed: (none)'; echo '  Candidate: 1.0'".to_string(),
        );
        stub(
            "apt-get",
            format!("echo \"apt-get $*\" >> {}", calls.display()),
        );
        stub(
            "sudo",
            format!("echo \"sudo $*\" >> {}; \"$@\"", calls.display()),
        );
        stub(
            "id",
            format!("[ \"$1\" = -u ] && {{ echo {uid}; exit 0; }}; exec /usr/bin/id \"$@\""),
        );
        FakeSystem { dir }
    }

    /// Runs `script args` from the repository with the stubs first on PATH and no Rust
    /// toolchain in reach unless `with_cargo`.
    fn run(&self, script: &str, args: &[&str], with_cargo: bool) -> Output {
        let mut path = self.dir.path().join("bin").display().to_string();
        if with_cargo {
            let cargo = PathBuf::from(env!("CARGO"));
            path = format!("{path}:{}", cargo.parent().unwrap().display());
        }
        path.push_str(":/usr/bin:/bin");
        Command::new("bash")
            .arg(Path::new(ROOT).join(script))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("CARGO_HOME", self.dir.path().join("no-cargo-home"))
            .output()
            .unwrap()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

const ALL_RUN: &[&str] = &["redis-server", "libclang1-14", "libclang-common-14-dev"];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn nothing_missing_is_silent_and_installs_nothing() {
    let sys = FakeSystem::new(ALL_RUN, 1000);
    let out = sys.run("scripts/install-deps.sh", &["run"], false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), "");
    assert_eq!(sys.calls(), Vec::<String>::new());
}

#[test]
fn a_missing_package_is_installed_with_sudo_and_one_line() {
    let sys = FakeSystem::new(&["libclang1-14", "libclang-common-14-dev"], 1000);
    let out = sys.run("scripts/install-deps.sh", &["run"], false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "install-deps: installing redis-server with sudo apt-get, needed to build redis-bf \
         and run it (scripts/start.sh)\n"
    );
    let calls = sys.calls();
    let env = "env DEBIAN_FRONTEND=noninteractive apt-get";
    assert_eq!(calls[0], format!("sudo {env} update -q"));
    assert_eq!(calls[1], "apt-get update -q");
    assert_eq!(
        calls[2],
        format!("sudo {env} install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 redis-server")
    );
    assert_eq!(
        calls[3],
        "apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 redis-server"
    );
}

#[test]
fn as_root_missing_libclang_is_installed_without_sudo() {
    let sys = FakeSystem::new(&["redis-server"], 0);
    let out = sys.run("scripts/install-deps.sh", &["run"], false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "install-deps: installing libclang1-14 libclang-common-14-dev with apt-get, needed to \
         build redis-bf and run it (scripts/start.sh)\n"
    );
    assert_eq!(
        sys.calls(),
        vec![
            "apt-get update -q".to_string(),
            "apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 \
             libclang1-14 libclang-common-14-dev"
                .to_string()
        ]
    );
}

#[test]
fn without_rust_both_commands_stop_at_once_with_the_rustup_command() {
    for script in ["scripts/start.sh", "scripts/test.sh"] {
        // Everything is missing: the scripts must stop before installing anything.
        let sys = FakeSystem::new(&[], 1000);
        let out = sys.run(script, &[], false);
        assert_eq!(out.status.code(), Some(1), "{script}");
        assert_eq!(text(&out.stdout), "", "{script}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("redis-bf needs a Rust toolchain (cargo), and there is none."),
            "{script}: {err}"
        );
        assert!(
            err.contains(
                "\n  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y\n"
            ),
            "{script}: {err}"
        );
        assert_eq!(sys.calls(), Vec::<String>::new(), "{script}");
    }
}

#[test]
fn ci_runs_exactly_the_readme_test_command() {
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let code: Vec<&str> = ci
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(
        code,
        [
            "set -euo pipefail",
            "cd \"$(dirname \"$0\")/..\"",
            "exec scripts/test.sh"
        ]
    );
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let quick = &readme[readme.find("## Quick start").unwrap()..];
    let quick = &quick[..quick[3..].find("\n## ").unwrap()];
    assert!(quick.contains("\nscripts/start.sh"), "{quick}");
    assert!(quick.contains("\nscripts/test.sh"), "{quick}");
}
