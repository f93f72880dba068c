//! The replies that differ by server line (`docs/redis8-valkey.md`): RedisBloom 2.8's on
//! Redis 7.x and Valkey, RedisBloom 8's on Redis 8. One table, each reply in its two forms;
//! [`ByLine::text`] / [`ByLine::wire`] pick the one of the server the tests run on
//! ([`super::server_binary`]).

use std::sync::OnceLock;

/// A reply text per server line: `rb28` on Redis 7.x and Valkey, `rb8` on Redis 8+.
pub struct ByLine {
    /// RedisBloom 2.8's text (Redis 7.x, Valkey).
    pub rb28: &'static str,
    /// RedisBloom 8's text (Redis 8 and later).
    pub rb8: &'static str,
}

impl ByLine {
    /// The text for the server under test, as a client library reports an error.
    pub fn text(&self) -> &'static str {
        if redis8() {
            self.rb8
        } else {
            self.rb28
        }
    }

    /// The same as an error on the wire.
    pub fn wire(&self) -> String {
        format!("-{}\r\n", self.text())
    }
}

/// True when the server under test ([`super::server_binary`]) is Redis 8 or later (not
/// Valkey, which answers as Redis 7).
pub fn redis8() -> bool {
    static IS: OnceLock<bool> = OnceLock::new();
    *IS.get_or_init(|| is_redis8_binary(&super::server_binary()))
}

/// True when the server under test ([`super::server_binary`]) is Valkey.
pub fn valkey() -> bool {
    static IS: OnceLock<bool> = OnceLock::new();
    *IS.get_or_init(|| {
        std::process::Command::new(super::server_binary())
            .arg("--version")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"Valkey server"))
    })
}

/// True when `bin --version` names Redis 8 or later.
pub fn is_redis8_binary(bin: &str) -> bool {
    let Ok(out) = std::process::Command::new(bin).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.starts_with("Redis server") {
        return false;
    }
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|major| major >= 8)
}

macro_rules! by_line {
    ($($name:ident = $rb28:literal, $rb8:literal;)*) => {
        $(pub const $name: ByLine = ByLine { rb28: $rb28, rb8: $rb8 };)*
        /// Every entry of the table.
        pub const ALL: &[&ByLine] = &[$(&$name),*];
    };
}

by_line! {
    // BF.RESERVE's range errors (the trailing space of 2.8's error-rate text is part of it).
    RESERVE_ERROR_RANGE = "ERR (0 < error rate range < 1) ",
        "ERR error rate must be in the range (0.000000, 1.000000)";
    RESERVE_CAPACITY_RANGE = "ERR (capacity should be larger than 0)",
        "ERR capacity must be in the range [1, 1073741824]";
    RESERVE_EXPANSION_RANGE = "ERR expansion should be greater or equal to 1",
        "ERR expansion must be in the range [0, 32768]";
    // An expansion too big for the stored u32 (both lines refuse it).
    RESERVE_EXPANSION_TOO_BIG = "ERR bad expansion",
        "ERR expansion must be in the range [0, 32768]";
    // BF.INSERT's range errors: 2.8 checks after parsing, 8 names the option.
    INSERT_ERROR_RANGE = "Bad argument received", "Bad error rate";
    INSERT_CAPACITY_RANGE = "Bad argument received", "Bad capacity";
    INSERT_EXPANSION_RANGE = "Bad argument received", "Bad expansion";
    // CF.RESERVE's range errors, and CF.INSERT's capacity (named after the config on 8).
    CF_BUCKETSIZE_RANGE = "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        "BUCKETSIZE: value must be in the range [1, 255]";
    CF_MAXITERATIONS_RANGE =
        "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        "MAXITERATIONS: value must be in the range [1, 65535]";
    CF_EXPANSION_RANGE = "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        "EXPANSION: value must be in the range [0, 32768]";
    CF_RESERVE_CAPACITY_RANGE = "Capacity must be at least (BucketSize * 2)",
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";
    CF_INSERT_CAPACITY_RANGE = "Capacity must be at least (BucketSize * 2)",
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";
}

/// `text` (replies as redis-cli prints them, written for RedisBloom 2.8) as the server under
/// test answers: on Redis 8 each `(error) <2.8 text>` line whose 2.8 text has one Redis 8 form
/// in [`ALL`] becomes that form; elsewhere `text` unchanged.
pub fn for_server_line(text: &str) -> String {
    if !redis8() {
        return text.to_string();
    }
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let rb8: Vec<&str> = body
            .strip_prefix("(error) ")
            .map(|e| {
                let mut v: Vec<&str> = ALL
                    .iter()
                    .filter(|b| b.rb28 == e && b.rb8 != e)
                    .map(|b| b.rb8)
                    .collect();
                v.dedup();
                v
            })
            .unwrap_or_default();
        match rb8.as_slice() {
            [one] => {
                out.push_str("(error) ");
                out.push_str(one);
                out.push_str(&line[body.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}
