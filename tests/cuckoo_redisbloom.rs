//! RedisBloom's cuckoo-filter reply batteries, both recorded sets: RedisBloom 2.8.20's on
//! Redis 7.0 and RedisBloom 8.8.0's (`rb8/`) on Redis 8.0. Each battery (`cf-errors`: arity,
//! option parsing, ranges, missing keys, wrong types, full filters, RESP3; `cf-config`: the
//! `cf-*` configs and their effect; `cf-loadchunk`: malformed SCANDUMP headers and chunks;
//! `cf-commands`: COMMAND INFO / DOCS / GETKEYS, ACL categories) is replayed in order on a
//! fresh server of its line with the module, and each raw reply must equal RedisBloom's
//! (`tests/batteries/mod.rs`: the replay and the comparison).
//!
//! The only steps allowed to differ are listed in `tests/data/redisbloom_cf_differences.tsv`
//! (battery `2.8/<name>` or `8.8/<name>`), each with the reply we give and the documented
//! difference it is (`docs/commands.md` ("Common rules"): the cuckoo metadata). One test
//! per set and battery, so that each reports on its own (`cargo test --release --test
//! cuckoo_redisbloom -- --nocapture` prints the counts).
//!
//! Needs the reference recordings (`common::shared_dir`; absent: a SKIP line, a failure under
//! `BF_REQUIRE_SHARED`), Redis 7.0 as the default server (`REDIS_SERVER` naming another
//! server skips the 2.8 set with a line: its COMMAND replies are Redis 7.0's) and a Redis 8.0
//! server (`common::find_server("redis 8.0")`; absent: a line, a failure under
//! `BF_REQUIRE_SERVERS`).

mod batteries;
mod common;
mod fxutil;

use batteries::Run;
use std::process::Command;

/// The four batteries of each set.
const BATTERIES: [&str; 4] = ["cf-errors", "cf-config", "cf-loadchunk", "cf-commands"];

/// The two sets: name (the battery prefix in the differences file) and folder.
const SETS: [(&str, &str); 2] = [
    ("2.8", "fixtures/redisbloom-cf/replies"),
    ("8.8", "fixtures/redisbloom-cf/rb8/replies"),
];

/// The documented differences a listed step may name.
const KINDS: [&str; 2] = [
    // COMMAND INFO / GETKEYSANDFLAGS key specs carry insert / update / access / delete flags
    // (RedisBloom 8: plain RW / RO), as the Bloom commands' do.
    "key-specs",
    // Redis 7: the commands carry RedisBloom 8's metadata (arity, key specs, COMMAND DOCS),
    // where RedisBloom 2.8 sets none.
    "command-info",
];

/// Redis 7.0, the server the 2.8 set was recorded on: the default server when it is 7.0.
fn redis70(test: &str) -> Option<String> {
    let bin = common::server_binary();
    let version = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if version.contains(" v=7.0.") {
        return Some(bin);
    }
    let msg = format!("{test}: {bin} is not Redis 7.0 ({version:?}); the 2.8 set is skipped");
    println!("{msg}");
    eprintln!("{msg}");
    None
}

/// Replays battery `battery` of set `set` and checks it against the differences file.
fn battery(set: &str, battery: &str) {
    let test = format!("redisbloom_cf {set}/{battery}");
    let Some(shared) = common::shared_or_skip(&test) else {
        return;
    };
    let bin = if set == "2.8" {
        redis70(&test)
    } else {
        common::server_or_skip("redis 8.0", &test)
    };
    let Some(bin) = bin else {
        return;
    };
    let folder = SETS.iter().find(|s| s.0 == set).unwrap().1;
    let json = shared.join(folder).join(format!("{battery}.json"));
    assert!(json.is_file(), "{test}: {} is missing", json.display());
    let names: Vec<String> = SETS
        .iter()
        .flat_map(|(s, _)| BATTERIES.iter().map(move |b| format!("{s}/{b}")))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let listed = batteries::listed("redisbloom_cf_differences.tsv", &names, &KINDS);
    let run = Run {
        battery: format!("{set}/{battery}"),
        json,
        bin,
    };
    let report = batteries::check(&[run], listed);
    for (name, sent, differ, as_listed) in &report.batteries {
        println!(
            "{name}: {sent} steps replayed, {differ} differ, {as_listed} of them as listed; \
             by kind: {:?}",
            report.kinds
        );
    }
    assert!(
        report.problems.is_empty(),
        "{} problems:\n{}",
        report.problems.len(),
        report.problems.join("\n")
    );
    // A bad comparison would pass everything: the replies do come from the module.
    assert!(report.replayed >= 90, "{} steps", report.replayed);
}

macro_rules! batteries {
    ($($test:ident: $set:literal $battery:literal),* $(,)?) => {
        $( #[test] fn $test() { battery($set, $battery) } )*
    };
}

batteries! {
    redisbloom28_cf_errors: "2.8" "cf-errors",
    redisbloom28_cf_config: "2.8" "cf-config",
    redisbloom28_cf_loadchunk: "2.8" "cf-loadchunk",
    redisbloom28_cf_commands: "2.8" "cf-commands",
    redisbloom8_cf_errors: "8.8" "cf-errors",
    redisbloom8_cf_config: "8.8" "cf-config",
    redisbloom8_cf_loadchunk: "8.8" "cf-loadchunk",
    redisbloom8_cf_commands: "8.8" "cf-commands",
}
