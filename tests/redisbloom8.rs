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
//! `tests/fixtures.rs`.
//!
//! Needs the reference recordings (`common::shared_dir`; absent: a SKIP line, a failure under
//! `BF_REQUIRE_SHARED`) and a Redis 8.0 server (`common::find_server("redis 8.0")`; absent: a
//! line, a failure under `BF_REQUIRE_SERVERS`).

mod common;
mod fxutil;

use common::Server;
use fxutil::{hex, sha256_hex, unhex, Conn};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// The recordings' folder and the Redis 8.0 binary, or None (the test then returns).
fn setup(test: &str) -> Option<(PathBuf, String)> {
    let dir = common::shared_or_skip(test)?.join("fixtures/redisbloom8/replies");
    assert!(dir.is_dir(), "{test}: {} is missing", dir.display());
    Some((dir, common::server_or_skip("redis 8.0", test)?))
}

/// A reply as the differences file shows it: printable ASCII with `\r`, `\n`, `\\`, `\t` and
/// `\xNN` escapes; above 160 bytes, `sha256:` and its digest.
fn shown(raw: &[u8]) -> String {
    if raw.len() > 160 {
        return format!("sha256:{}", sha256_hex(raw));
    }
    let mut s = String::new();
    for &b in raw {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// One line of the differences file: a step (and the follow-up steps `last` covers, which
/// read what the step made differ) where our reply differs on purpose.
struct Listed {
    last: u64,
    display: String,
    ours: String,
    kind: String,
}

/// The differences file: (battery, first step) → what we answer and why.
fn listed() -> BTreeMap<(String, u64), Listed> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/redisbloom8_differences.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            f.len(),
            5,
            "line {}: battery, step, display, ours, kind",
            i + 1
        );
        assert!(
            BATTERIES.contains(&f[0]),
            "line {}: battery {:?}",
            i + 1,
            f[0]
        );
        assert!(KINDS.contains(&f[4]), "line {}: kind {:?}", i + 1, f[4]);
        let (step, last) = match f[1].split_once('-') {
            Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
            None => (f[1].parse().unwrap(), f[1].parse().unwrap()),
        };
        assert!(last >= step, "line {}: steps {}", i + 1, f[1]);
        let entry = Listed {
            last,
            display: f[2].to_string(),
            ours: f[3].to_string(),
            kind: f[4].to_string(),
        };
        let dup = out.insert((f[0].to_string(), step), entry);
        assert!(
            dup.is_none(),
            "line {}: {} step {step} listed twice",
            i + 1,
            f[0]
        );
    }
    out
}

/// The byte spans of the top-level elements of an aggregate reply (its header line first), or
/// None for a reply that is not an array, map or set.
fn elements(raw: &[u8]) -> Option<(&[u8], Vec<&[u8]>)> {
    fn line_end(raw: &[u8], pos: usize) -> Option<usize> {
        raw[pos..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|e| pos + e)
    }
    fn skip(raw: &[u8], pos: usize) -> Option<usize> {
        let e = line_end(raw, pos)?;
        let n = std::str::from_utf8(&raw[pos + 1..e]).ok();
        Some(match raw[pos] {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => e + 2,
            b'$' | b'=' | b'!' => match n?.parse::<i64>().ok()? {
                l if l < 0 => e + 2,
                l => e + 2 + l as usize + 2,
            },
            t => {
                let count = n?.parse::<i64>().ok()?;
                let count = if matches!(t, b'%' | b'|') {
                    count * 2
                } else {
                    count
                };
                let mut p = e + 2;
                for _ in 0..count.max(0) {
                    p = skip(raw, p)?;
                }
                p
            }
        })
    }
    if !matches!(raw.first(), Some(b'*' | b'%' | b'~' | b'>')) {
        return None;
    }
    let e = line_end(raw, 0)?;
    let count: i64 = std::str::from_utf8(&raw[1..e]).ok()?.parse().ok()?;
    let count = if raw[0] == b'%' { count * 2 } else { count };
    let mut pos = e + 2;
    let mut out = Vec::new();
    for _ in 0..count.max(0) {
        let next = skip(raw, pos)?;
        out.push(&raw[pos..next]);
        pos = next;
    }
    (pos == raw.len()).then_some((&raw[..e], out))
}

/// True when `got` is `want` under the step's `compare` mode.
fn same(mode: &str, want: &[u8], got: &[u8]) -> bool {
    if want == got {
        return true;
    }
    if mode == "exact" {
        return false;
    }
    let (Some((hw, mut ew)), Some((hg, mut eg))) = (elements(want), elements(got)) else {
        return false;
    };
    if hw != hg {
        return false;
    }
    match mode {
        "unordered" => {
            ew.sort();
            eg.sort();
            ew == eg
        }
        "pairs-unordered" => {
            let mut pw: Vec<_> = ew.chunks(2).collect();
            let mut pg: Vec<_> = eg.chunks(2).collect();
            pw.sort();
            pg.sort();
            pw == pg
        }
        _ => panic!("unknown compare mode {mode}"),
    }
}

/// `raw` in a form that does not depend on the order `mode` ignores: the elements (or pairs)
/// sorted after the header line.
fn canonical(mode: &str, raw: &[u8]) -> Vec<u8> {
    let Some((head, mut els)) = elements(raw).filter(|_| mode != "exact") else {
        return raw.to_vec();
    };
    let mut out = [head, b"\r\n"].concat();
    if mode == "pairs-unordered" {
        let mut pairs: Vec<Vec<u8>> = els.chunks(2).map(|p| p.concat()).collect();
        pairs.sort();
        pairs.iter().for_each(|p| out.extend_from_slice(p));
    } else {
        els.sort();
        els.iter().for_each(|e| out.extend_from_slice(e));
    }
    out
}

/// Replays battery `name` on a fresh Redis 8.0 server; returns every step whose reply differs
/// as (step, display, our raw reply in its [`canonical`] form).
fn replay(dir: &Path, bin: &str, name: &str) -> (usize, Vec<(u64, String, Vec<u8>)>) {
    let j: Json =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    let mut server = Server::start_on(bin, &[], &[]);
    let mut c2 = Conn::new(server.port);
    let mut c3 = Conn::new(server.port);
    assert!(!c3.cmd(&[&b"HELLO"[..], b"3"]).val.is_error());
    let mut differ = Vec::new();
    let steps = j["steps"].as_array().unwrap();
    for st in steps {
        let args: Vec<Vec<u8>> = st["args_hex"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| unhex(a.as_str().unwrap()))
            .collect();
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let c = if st["resp"].as_u64() == Some(3) {
            &mut c3
        } else {
            &mut c2
        };
        let got = c.cmd(&args).raw;
        let want = unhex(st["reply_hex"].as_str().unwrap());
        if !same(st["compare"].as_str().unwrap(), &want, &got) {
            let display = st["display"].as_str().unwrap().to_string();
            let got = canonical(st["compare"].as_str().unwrap(), &got);
            differ.push((st["n"].as_u64().unwrap(), display, got));
        }
    }
    assert!(
        server.is_alive(),
        "{name}: the server died; log:\n{}",
        server.log()
    );
    (steps.len(), differ)
}

#[test]
fn reply_batteries_answer_as_redisbloom8_but_for_the_listed_differences() {
    let Some((dir, bin)) = setup("reply_batteries_answer_as_redisbloom8") else {
        return;
    };
    let mut listed = listed();
    let mut problems = Vec::new();
    let mut replayed = 0;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for battery in BATTERIES {
        let (n, differ) = replay(&dir, &bin, battery);
        replayed += n;
        // Follow-up steps of a listed step: (battery, step) → its first step.
        let mut follow_ups: BTreeMap<u64, u64> = BTreeMap::new();
        for ((b, first), l) in &listed {
            if b == battery {
                follow_ups.extend((first + 1..=l.last).map(|s| (s, *first)));
            }
        }
        let differing: Vec<u64> = differ.iter().map(|d| d.0).collect();
        for (step, first) in &follow_ups {
            if !differing.contains(step) {
                problems.push(format!(
                    "{battery} step {step} (after listed step {first}) no longer differs: \
                     shorten the range of its line"
                ));
            }
        }
        for (step, display, got) in differ {
            if follow_ups.contains_key(&step) {
                continue;
            }
            match listed.remove(&(battery.to_string(), step)) {
                None => problems.push(format!(
                    "{battery} step {step} differs and is not listed; line if deliberate:\n\
                     {battery}\t{step}\t{}\t{}\t<kind>",
                    shown(display.as_bytes()),
                    shown(&got)
                )),
                Some(l) => {
                    if l.display != shown(display.as_bytes()) {
                        problems.push(format!(
                            "{battery} step {step}: listed as {:?}, the recording has {:?}",
                            l.display, display
                        ));
                    } else if l.ours != shown(&got) {
                        problems.push(format!(
                            "{battery} step {step} ({display}): we now answer {} (listed: {})",
                            shown(&got),
                            l.ours
                        ));
                    }
                    *counts.entry(l.kind).or_default() += 1;
                }
            }
        }
    }
    for ((battery, step), l) in listed {
        problems.push(format!(
            "{battery} step {step} ({}) is listed ({}) but no longer differs: remove its line",
            l.display, l.kind
        ));
    }
    println!("{replayed} steps replayed; listed differences by kind: {counts:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A bad comparison would pass everything: the replies do come from the module.
    assert!(replayed > 900, "{replayed} steps");
}

#[test]
fn reply_comparison_modes() {
    let map_ab = b"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n";
    let map_ba = b"%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n";
    let map_swapped = b"%2\r\n+a\r\n:2\r\n+b\r\n:1\r\n";
    assert!(same("pairs-unordered", map_ab, map_ba));
    assert!(!same("pairs-unordered", map_ab, map_swapped));
    assert!(!same("exact", map_ab, map_ba));
    let arr = b"*2\r\n$1\r\nx\r\n*1\r\n:5\r\n";
    let arr_rev = b"*2\r\n*1\r\n:5\r\n$1\r\nx\r\n";
    assert!(same("unordered", arr, arr_rev));
    assert!(!same("unordered", arr, b"*2\r\n$1\r\nx\r\n*1\r\n:6\r\n"));
    assert!(!same("unordered", b"+OK\r\n", b"+KO\r\n"));
    assert_eq!(shown(b"-ERR x\r\n"), "-ERR x\\r\\n");
    assert_eq!(shown(&[0, 0xff]), "\\x00\\xff");
    assert_eq!(hex(b"\x01"), "01");
}
