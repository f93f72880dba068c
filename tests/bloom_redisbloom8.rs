//! RedisBloom 8's reply batteries on Redis 8.0: every recorded step (error texts, EXPANSION 0,
//! the 0.25 error cap, the `bf-*` configs, LOADCHUNK of malformed headers, command metadata)
//! is replayed in order on a fresh server with the module, on a RESP2 or RESP3 connection as
//! recorded, and each raw reply must equal RedisBloom 8.8.0's (`compare`: byte for byte, or
//! the same top-level elements / key-value pairs in any order).
//!
//! The only steps allowed to differ are listed in `tests/data/redisbloom8_differences.tsv`,
//! each with the reply we give and the documented difference it is
//! (`docs/redis8-valkey.md`, "Differences from RedisBloom 8"). A step that differs and is not
//! listed fails; so does a listed step that no longer differs, or answers otherwise than
//! listed. The data sets of the same recordings (dump.rdb, appendonlydir) are checked by
//! `tests/bloom_fixtures.rs`.
//!
//! Needs the reference recordings (`common::shared_dir`; absent: a SKIP line, a failure under
//! `BF_REQUIRE_SHARED`) and a Redis 8.0 server (`common::find_server("redis 8.0")`; absent: a
//! line, a failure under `BF_REQUIRE_SERVERS`).

mod batteries;
mod common;
mod fxutil;

use batteries::Run;

/// The four batteries, in the order they are checked.
const BATTERIES: [&str; 4] = ["bf-errors", "bf-config", "bf-loadchunk", "bf-commands"];

/// The documented differences a listed step may name (`docs/redis8-valkey.md`).
const KINDS: [&str; 5] = [
    "whole-words",
    "unknown-arguments",
    "above-caps",
    "dotted-configs",
    "key-specs",
];

#[test]
fn reply_batteries_answer_as_redisbloom8_but_for_the_listed_differences() {
    let Some((dir, bin)) =
        common::expect_redisbloom8("reply_batteries_answer_as_redisbloom8", "replies")
    else {
        return;
    };
    let runs: Vec<Run> = BATTERIES
        .iter()
        .map(|b| Run {
            battery: b.to_string(),
            json: dir.join(format!("{b}.json")),
            bin: bin.clone(),
        })
        .collect();
    let listed = batteries::listed("redisbloom8_differences.tsv", &BATTERIES, &KINDS);
    let report = batteries::check(&runs, listed);
    println!(
        "{} steps replayed; listed differences by kind: {:?}",
        report.replayed, report.kinds
    );
    assert!(report.problems.is_empty(), "{}", report.problems.join("\n"));
    // A bad comparison would pass everything: the replies do come from the module.
    assert!(report.replayed > 900, "{} steps", report.replayed);
}
