//! Replaying RedisBloom's recorded reply batteries (`tests/bloom_redisbloom8.rs` for the Bloom
//! commands on Redis 8, `tests/cuckoo_redisbloom.rs` for the cuckoo commands on Redis 7.0 and 8.0):
//! every recorded step is sent in order to a fresh server with the module, on a RESP2 or RESP3
//! connection as recorded, and each raw reply must equal RedisBloom's (`compare`: byte for
//! byte, or the same top-level elements / key-value pairs in any order); steps recorded as
//! `skipped` are not sent.
//!
//! The only steps allowed to differ are listed in a differences file (tab-separated: battery,
//! step or first-last, the first step as recorded, our reply to it, kind): a step that differs
//! and is not listed is a problem; so is a listed step that no longer differs, or answers
//! otherwise than listed. A range `first-last` covers the later steps that query the key or
//! config the first one made differ: they must differ too.
#![allow(dead_code)]

use crate::common::Server;
use crate::fxutil::{sha256_hex, unhex, Conn};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A reply as the differences file shows it: printable ASCII with `\r`, `\n`, `\\`, `\t` and
/// `\xNN` escapes; above 160 bytes, `sha256:` and its digest.
pub fn shown(raw: &[u8]) -> String {
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

/// One line of a differences file: a step (and the follow-up steps `last` covers, which read
/// what the step made differ) where our reply differs on purpose.
pub struct Listed {
    last: u64,
    display: String,
    ours: String,
    kind: String,
}

/// The differences file `file` (under `tests/data/`): (battery, first step) → what we answer
/// and why. Every battery named must be one of `batteries`, every kind one of `kinds`.
pub fn listed(file: &str, batteries: &[&str], kinds: &[&str]) -> BTreeMap<(String, u64), Listed> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
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
            "{file} line {}: battery, step, display, ours, kind",
            i + 1
        );
        assert!(
            batteries.contains(&f[0]),
            "{file} line {}: battery {:?}",
            i + 1,
            f[0]
        );
        assert!(
            kinds.contains(&f[4]),
            "{file} line {}: kind {:?}",
            i + 1,
            f[4]
        );
        let (step, last) = match f[1].split_once('-') {
            Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
            None => (f[1].parse().unwrap(), f[1].parse().unwrap()),
        };
        assert!(last >= step, "{file} line {}: steps {}", i + 1, f[1]);
        let entry = Listed {
            last,
            display: f[2].to_string(),
            ours: f[3].to_string(),
            kind: f[4].to_string(),
        };
        let dup = out.insert((f[0].to_string(), step), entry);
        assert!(
            dup.is_none(),
            "{file} line {}: {} step {step} listed twice",
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
pub fn same(mode: &str, want: &[u8], got: &[u8]) -> bool {
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

/// One battery to replay: its name in the differences file, its recording, the server.
pub struct Run {
    pub battery: String,
    pub json: PathBuf,
    pub bin: String,
}

/// What replaying one battery found.
struct Replayed {
    /// Steps sent.
    sent: usize,
    /// Every step whose reply differs: (step, display, our raw reply in its [`canonical`] form).
    differ: Vec<(u64, String, Vec<u8>)>,
}

/// Replays `run` on a fresh server.
fn replay(run: &Run) -> Replayed {
    let j: Json = serde_json::from_slice(&std::fs::read(&run.json).unwrap()).unwrap();
    let mut server = Server::start_on(&run.bin, &[], &[]);
    let mut c2 = Conn::new(server.port);
    let mut c3 = Conn::new(server.port);
    assert!(!c3.cmd(&[&b"HELLO"[..], b"3"]).val.is_error());
    let mut differ = Vec::new();
    let mut sent = 0;
    for st in j["steps"].as_array().unwrap() {
        if st
            .get("skipped")
            .is_some_and(|s| !s.is_null() && s != false)
        {
            continue;
        }
        let args = crate::common::json_hex_list(&st["args_hex"]);
        let c = if st["resp"].as_u64() == Some(3) {
            &mut c3
        } else {
            &mut c2
        };
        let got = c.cmd(&args).raw;
        sent += 1;
        let want = unhex(st["reply_hex"].as_str().unwrap());
        let mode = st["compare"].as_str().unwrap();
        if !same(mode, &want, &got) {
            let display = st["display"].as_str().unwrap().to_string();
            differ.push((st["n"].as_u64().unwrap(), display, canonical(mode, &got)));
        }
    }
    assert!(
        server.is_alive(),
        "{}: the server died; log:\n{}",
        run.battery,
        server.log()
    );
    Replayed { sent, differ }
}

/// What [`check`] found.
pub struct Report {
    /// Steps sent, over all batteries.
    pub replayed: usize,
    /// Listed differences met, by kind.
    pub kinds: BTreeMap<String, usize>,
    /// Per battery: (name, steps sent, steps that differ, of which listed).
    pub batteries: Vec<(String, usize, usize, usize)>,
    /// Everything that is not as listed, one line each.
    pub problems: Vec<String>,
}

/// Replays every run and compares what differs with `listed` (the lines of batteries not run
/// are not looked at).
pub fn check(runs: &[Run], mut listed: BTreeMap<(String, u64), Listed>) -> Report {
    let mut report = Report {
        replayed: 0,
        kinds: BTreeMap::new(),
        batteries: Vec::new(),
        problems: Vec::new(),
    };
    let problems = &mut report.problems;
    for run in runs {
        let battery = run.battery.as_str();
        let Replayed { sent, differ } = replay(run);
        report.replayed += sent;
        // Follow-up steps of a listed step: step → its first step.
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
        let mut as_listed = 0;
        for (step, display, got) in &differ {
            if follow_ups.contains_key(step) {
                as_listed += 1;
                continue;
            }
            match listed.remove(&(battery.to_string(), *step)) {
                None => problems.push(format!(
                    "{battery} step {step} differs and is not listed; line if deliberate:\n\
                     {battery}\t{step}\t{}\t{}\t<kind>",
                    shown(display.as_bytes()),
                    shown(got)
                )),
                Some(l) => {
                    if l.display != shown(display.as_bytes()) {
                        problems.push(format!(
                            "{battery} step {step}: listed as {:?}, the recording has {:?}",
                            l.display, display
                        ));
                    } else if l.ours != shown(got) {
                        problems.push(format!(
                            "{battery} step {step} ({display}): we now answer {} (listed: {})",
                            shown(got),
                            l.ours
                        ));
                    } else {
                        as_listed += 1;
                    }
                    *report.kinds.entry(l.kind).or_default() += 1;
                }
            }
        }
        report
            .batteries
            .push((battery.to_string(), sent, differ.len(), as_listed));
        let stale: Vec<(String, u64)> = listed
            .keys()
            .filter(|(b, _)| b == battery)
            .cloned()
            .collect();
        for key in stale {
            let l = listed.remove(&key).unwrap();
            problems.push(format!(
                "{battery} step {} ({}) is listed ({}) but no longer differs: remove its line",
                key.1, l.display, l.kind
            ));
        }
    }
    report
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
    assert_eq!(canonical("unordered", arr_rev), arr.to_vec());
}
