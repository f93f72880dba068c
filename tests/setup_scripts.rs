//! The set-up that `scripts/start.sh` and `scripts/test.sh` do before they build, run on a
//! fake system: `dpkg-query`, `apt-cache`, `apt-get`, `sudo` and `id` are stubs in a temporary
//! directory put first on PATH, so a missing package can be shown without removing one.
//! The stubs record every apt-get / sudo call in `calls.log`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Writes the executable bash script `bin/name` running `body`.
fn write_stub(bin: &Path, name: &str, body: String) {
    let p = bin.join(name);
    std::fs::write(&p, format!("#!/bin/bash\n{body}")).unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&p, perm).unwrap();
}

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
        let stub = |name: &str, body: String| write_stub(&bin, name, format!("{body}\n"));
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

// ---------------------------------------------------------------------------------------------
// scripts/servers.sh on a fake Debian archive: `apt-get` and `apt-cache` are stubs that serve
// the source indexes of the suites in FAKE_SUITES, the versions of `showsrc.txt` and, for
// `apt-get source`, an upstream tarball whose Makefile makes a stand-in server; tar and make
// are the real ones.

/// What the fake archive's `apt-cache showsrc` lists: versions out of order, with epochs and
/// one that only a version sort ranks right (8.0.10 after 8.0.6).
const SHOWSRC: &str = "\
Package: redis\nVersion: 5:8.0.2-3+deb13u3\n\n\
Package: redis\nVersion: 5:8.0.10-1\n\n\
Package: redis\nVersion: 5:8.0.6-3\n\n\
Package: redis\nVersion: 5:8.6.3-1\n\n\
Package: redis\nVersion: 5:8.10.0-1\n\n\
Package: valkey\nVersion: 8.1.1+dfsg1-3+deb13u3\n\n\
Package: valkey\nVersion: 9.1.2-1\n";

struct FakeArchive {
    dir: tempfile::TempDir,
}

impl FakeArchive {
    fn new() -> FakeArchive {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(dir.path().join("showsrc.txt"), SHOWSRC).unwrap();
        let calls = dir.path().join("calls.log");
        let stub = |name: &str, body: String| write_stub(&bin, name, format!("set -e\n{body}\n"));
        stub(
            "apt-get",
            format!(
                r##"echo "apt-get $* (APT_CONFIG=$APT_CONFIG)" >> {calls}
lists=$(sed -n 's/^Dir::State::Lists "\(.*\)";$/\1/p' "$APT_CONFIG")
case " $* " in
  *" update "*)
    for s in trixie sid experimental; do
      case " $FAKE_SUITES " in
        *" $s "*) echo "Get: $s"; : > "$lists/mirror.test_debian_dists_${{s}}_main_source_Sources.lz4" ;;
        *) echo "Err: $s"; echo "W: Failed to fetch http://mirror.test/debian/dists/$s/InRelease" >&2 ;;
      esac
    done ;;
  *" source "*)
    spec="${{@: -1}}"; pkg=${{spec%%=*}}; ver=${{spec#*=}}; up=${{ver#*:}}; up=${{up%-*}}
    bin=redis-server; [ "$pkg" = valkey ] && bin=valkey-server
    mkdir -p "x/$pkg-$up/src"
    printf '%s:\n\tprintf "#!/bin/sh\\necho fake %s %s\\n" > $@ && chmod +x $@\n' "$bin" "$bin" "$ver" > "x/$pkg-$up/src/Makefile"
    tar -czf "${{pkg}}_$up.orig.tar.gz" -C x "$pkg-$up"
    rm -rf x
    : > "${{pkg}}_$ver.dsc" ;;
esac"##,
                calls = calls.display()
            ),
        );
        stub(
            "apt-cache",
            format!("cat {}", dir.path().join("showsrc.txt").display()),
        );
        FakeArchive { dir }
    }

    /// Runs `scripts/servers.sh args` against the fake archive serving `suites`.
    fn run(&self, args: &[&str], suites: &str) -> Output {
        let path = format!("{}:/usr/bin:/bin", self.dir.path().join("bin").display());
        Command::new("bash")
            .arg(Path::new(ROOT).join("scripts/servers.sh"))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("TMPDIR", self.dir.path())
            .env("FAKE_SUITES", suites)
            .env("DEBIAN_MIRROR", "http://mirror.test/debian")
            .env("BF_SERVERS_DIR", self.out())
            .env("BF_SERVERS_CACHE", self.dir.path().join("cache"))
            .output()
            .unwrap()
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("servers")
    }

    /// The apt-get calls so far, without the APT_CONFIG they ran with.
    fn apt_calls(&self) -> Vec<String> {
        let conf = format!(" (APT_CONFIG={}/apt/apt.conf)", self.out().display());
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.strip_suffix(&conf).unwrap_or(l).to_string())
            .collect()
    }
}

const ALL_SERVERS: [(&str, &str, &str); 3] = [
    ("redis-8.0", "redis-server", "5:8.0.10-1"),
    ("redis-8.6", "redis-server", "5:8.6.3-1"),
    ("valkey-9.1", "valkey-server", "9.1.2-1"),
];

#[test]
fn servers_are_built_from_the_newest_source_package_and_then_reused() {
    let fake = FakeArchive::new();
    let out = fake.run(&["all"], "trixie sid experimental");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paths: Vec<String> = ALL_SERVERS
        .iter()
        .map(|(t, bin, _)| format!("{}/{t}/{bin}", fake.out().display()))
        .collect();
    assert_eq!(text(&out.stdout), format!("{}\n", paths.join("\n")));
    for ((_, bin, version), path) in ALL_SERVERS.iter().zip(&paths) {
        let ran = Command::new(path).arg("--version").output().unwrap();
        assert_eq!(text(&ran.stdout), format!("fake {bin} {version}\n"));
    }
    assert_eq!(
        fake.apt_calls(),
        [
            "apt-get -q update",
            "apt-get -q source --download-only redis=5:8.0.10-1",
            "apt-get -q source --download-only redis=5:8.6.3-1",
            "apt-get -q source --download-only valkey=9.1.2-1",
        ]
    );
    // Only the private configuration's sources: deb-src of the three suites on the mirror.
    let sources = std::fs::read_to_string(fake.out().join("apt/etc/sources.list")).unwrap();
    let keyring = "[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]";
    assert_eq!(
        sources,
        ["trixie", "sid", "experimental"]
            .map(|s| format!("deb-src {keyring} http://mirror.test/debian {s} main\n"))
            .concat()
    );

    // A second run, here or in a fresh output directory (another clone), builds nothing.
    std::fs::remove_dir_all(fake.out().join("redis-8.6")).unwrap();
    let again = fake.run(&["redis-8.6", "valkey-9.1"], "trixie sid experimental");
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), format!("{}\n", paths[1..].join("\n")));
    assert_eq!(fake.apt_calls()[4..], ["apt-get -q update"]);
    let err = text(&again.stderr);
    assert!(
        err.contains("redis-8.6: redis 5:8.6.3-1 already built"),
        "{err}"
    );
}

#[test]
fn servers_stop_naming_the_suite_apt_cannot_reach() {
    let fake = FakeArchive::new();
    // The index that an earlier run fetched is no excuse: the suite must be reached now.
    let earlier = fake.run(&["redis-8.6"], "trixie sid experimental");
    assert!(earlier.status.success(), "{}", text(&earlier.stderr));
    let out = fake.run(&[], "trixie sid");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "servers.sh: cannot reach Debian suite 'experimental' (deb-src \
             http://mirror.test/debian experimental main)"
        ),
        "{err}"
    );
    assert_eq!(fake.apt_calls()[2..], ["apt-get -q update"]);
}

#[test]
fn servers_refuse_an_unknown_target() {
    let fake = FakeArchive::new();
    let out = fake.run(&["redis-9.9"], "trixie sid experimental");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "usage: scripts/servers.sh [redis-8.0|redis-8.6|valkey-9.1|all]...\n"
    );
    assert_eq!(fake.apt_calls(), Vec::<String>::new());
}
