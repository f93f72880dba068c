//! Writes Ribbon filter test vectors for the JavaScript and Python checkers
//! (`clients/js/test/ribbon.test.mjs`, `clients/python/test_check_ribbon.py`): filters of several
//! shapes built by the core, each as the walk `RF.SCANDUMP` answers for it, the items asked
//! and the core's answer for every one of them. Deterministic: the same files on every run.
//!
//! ```sh
//! cargo run --release -p redis-bf-core --example ribbon_vectors -- /tmp/ribbon-vectors
//! ```
//!
//! Files in the folder given (created if missing):
//!
//! - `manifest.json`: `{"shapes": [{"name", "items", "error_rate", "members", "probes",
//!   "bumped", "blocks", "lower_bits", "upper_start", "body_bytes", "positives"}]}`:
//!   `members` items were built into the filter, `probes` never were, `positives` is how
//!   many items (members and probes) the core answers present;
//! - `<name>.walk`: the walk, one frame a pair: the iterator as an `f64` LE (exact: below
//!   2^53), the length as a `u32` LE, the bytes (the framing of `examples/web`'s downloads).
//!   The first pair is `(1, header)`, then `(next, body chunk)` as `RF.SCANDUMP` answers
//!   them (the chunk starts at body position `next − length`), then the end `(0, "")`;
//! - `<name>.items`: the items, one a line (ASCII, no newline inside), members first;
//! - `<name>.answers`: the core's `Ribbon::contains` for each item in that order, one bit an
//!   item, least significant bit first.
//!
//! With `--list <items> <error rate> <folder>` it builds instead, offline, the Ribbon filter of
//! a list (one item a line) and the non-scaling Bloom filter of the same list and error rate,
//! and writes their walks, framed as above, to `ribbon.walk` and `bloom.walk` (the
//! `examples/web` blocklist; what a list pipeline would upload with `RF.LOADCHUNK`).
//!
//! The shapes: no items; one item; a few hundred; 1e5 items at 1 %, 0.1 % and 0.01 % (every
//! one with fractional result bits: lower blocks of `r` columns, upper ones of `r + 1`); a rate
//! just above 2^−7 (`2^−7 / 0.95`: with the shape aimed at 0.9 ε, blocks of 7 columns and about
//! a tenth of 8, near-whole result bits); ε = 0.5 (one or two result
//! bits: many false positives to agree on); and a crowded set whose item hashes all fall in
//! the lowest 2^−10 of the hash range, so their rows start at the same slot and most of them
//! are bumped (kept exactly).

use redis_bf_core::ribbon::dump::{body_bytes, chunk_at, encode_header};
use redis_bf_core::ribbon::{build, item_hash, Ribbon};
use redis_bf_core::{dump as bloom_dump, Chain};
use std::fmt::Write as _;
use std::path::Path;

/// One shape: a name, the members, the error rate, how many never-added probes.
struct Case {
    name: &'static str,
    members: Vec<String>,
    error_rate: f64,
    probes: u64,
}

fn numbered(prefix: &str, n: u64) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// `n` items whose hashes are below 2^54: every row starts in the filter's first slots.
fn crowded(n: usize) -> Vec<String> {
    (0u64..)
        .map(|i| format!("crowd:{i}"))
        .filter(|s| item_hash(s.as_bytes()) < 1 << 54)
        .take(n)
        .collect()
}

fn cases() -> Vec<Case> {
    let case = |name, members, error_rate, probes| Case {
        name,
        members,
        error_rate,
        probes,
    };
    vec![
        case("empty", Vec::new(), 0.01, 10_000),
        case("one", numbered("one:", 1), 0.01, 10_000),
        case("few", numbered("few:", 300), 0.001, 50_000),
        case(
            "whole_bits",
            numbered("whole:", 5_000),
            1.0 / 128.0 / 0.95,
            50_000,
        ),
        case("half", numbered("half:", 2_000), 0.5, 20_000),
        case("e2_1e5", numbered("a:", 100_000), 0.01, 250_000),
        case("e3_1e5", numbered("b:", 100_000), 0.001, 150_000),
        case("e4_1e5", numbered("c:", 100_000), 0.0001, 150_000),
        case("crowded", crowded(300), 0.01, 10_000),
    ]
}

/// The walk `RF.SCANDUMP` answers: `(1, header)`, `(next, chunk)` …, `(0, "")`.
fn walk(ribbon: &Ribbon) -> Vec<(u64, Vec<u8>)> {
    let mut pairs = vec![(1, encode_header(ribbon).to_vec())];
    let mut position = 1;
    while let Some((next, data)) = chunk_at(ribbon, position) {
        pairs.push((next, data));
        position = next;
    }
    pairs.push((0, Vec::new()));
    pairs
}

/// The walk `BF.SCANDUMP` answers for a Bloom filter, its end pair included.
fn bloom_walk(chain: &Chain) -> Vec<(u64, Vec<u8>)> {
    let mut pairs = vec![(1, bloom_dump::encode_header(chain))];
    let mut iter = 1;
    loop {
        let (next, data) = bloom_dump::chunk_at(chain, iter);
        pairs.push((next as u64, data.to_vec()));
        if next == 0 {
            return pairs;
        }
        iter = next;
    }
}

/// Pairs as frames: the iterator an `f64` LE, the length a `u32` LE, the bytes.
fn framed(pairs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut frames = Vec::new();
    for (iter, data) in pairs {
        frames.extend_from_slice(&(*iter as f64).to_le_bytes());
        frames.extend_from_slice(&(data.len() as u32).to_le_bytes());
        frames.extend_from_slice(data);
    }
    frames
}

/// `--list`: the Ribbon filter and the Bloom filter of a list, as walks.
fn list(items: &str, error_rate: &str, dir: &Path) {
    let text = std::fs::read(items).unwrap_or_else(|e| panic!("reading {items}: {e}"));
    let items: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let error_rate: f64 = error_rate.parse().expect("an error rate");
    let ribbon = build(items.iter().map(|i| item_hash(i)).collect(), error_rate).expect("built");
    let mut chain = Chain::new(items.len().max(1) as u64, error_rate, 2, true, u64::MAX)
        .expect("a Bloom filter");
    for item in &items {
        chain.add(item, u64::MAX).expect("added");
    }
    std::fs::create_dir_all(dir).expect("the folder");
    let ribbon_walk = framed(&walk(&ribbon));
    let bloom_walk = framed(&bloom_walk(&chain));
    write(dir, "ribbon.walk".into(), &ribbon_walk);
    write(dir, "bloom.walk".into(), &bloom_walk);
    println!(
        "{} items at {error_rate}: Ribbon {} bytes ({:.2} bits per item, {} bumped), Bloom {} bytes",
        ribbon.items(),
        ribbon_walk.len(),
        ribbon_walk.len() as f64 * 8.0 / items.len().max(1) as f64,
        ribbon.bumped().len(),
        bloom_walk.len(),
    );
}

fn write(dir: &Path, file: String, bytes: &[u8]) {
    std::fs::write(dir.join(&file), bytes).unwrap_or_else(|e| panic!("writing {file}: {e}"));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, items, error_rate, dir] = args.as_slice() {
        if flag == "--list" {
            return list(items, error_rate, Path::new(dir));
        }
    }
    let [dir] = args.as_slice() else {
        panic!(
            "usage: ribbon_vectors <folder> | ribbon_vectors --list <items> <error rate> <folder>"
        );
    };
    let dir = Path::new(dir);
    std::fs::create_dir_all(dir).expect("the folder");
    let mut manifest = String::from("{\"shapes\": [\n");
    let mut total = 0u64;
    for (index, case) in cases().into_iter().enumerate() {
        let hashes = case
            .members
            .iter()
            .map(|m| item_hash(m.as_bytes()))
            .collect();
        let ribbon = build(hashes, case.error_rate).expect("built");
        let probes = numbered(&format!("probe:{}:", case.name), case.probes);
        let mut items = String::new();
        let mut answers = Vec::new();
        let mut positives = 0u64;
        for (i, item) in case.members.iter().chain(&probes).enumerate() {
            items.push_str(item);
            items.push('\n');
            if i % 8 == 0 {
                answers.push(0u8);
            }
            if ribbon.contains(item.as_bytes()) {
                *answers.last_mut().unwrap() |= 1 << (i % 8);
                positives += 1;
            } else {
                assert!(i >= case.members.len(), "{}: a member is absent", case.name);
            }
        }
        let body_bytes = body_bytes(&ribbon);
        write(dir, format!("{}.walk", case.name), &framed(&walk(&ribbon)));
        write(dir, format!("{}.items", case.name), items.as_bytes());
        write(dir, format!("{}.answers", case.name), &answers);
        let shape = ribbon.shape();
        let _ = writeln!(
            manifest,
            "  {}{{\"name\": \"{}\", \"items\": {}, \"error_rate\": {:?}, \"members\": {}, \
             \"probes\": {}, \"bumped\": {}, \"blocks\": {}, \"lower_bits\": {}, \
             \"upper_start\": {}, \"body_bytes\": {body_bytes}, \"positives\": {positives}}}",
            if index == 0 { "" } else { "," },
            case.name,
            ribbon.items(),
            case.error_rate,
            case.members.len(),
            case.probes,
            ribbon.bumped().len(),
            shape.blocks(),
            shape.lower_bits(),
            shape.upper_start(),
        );
        total += case.members.len() as u64 + case.probes;
    }
    manifest.push_str("]}\n");
    write(dir, "manifest.json".into(), manifest.as_bytes());
    println!(
        "{total} items asked of 9 filters, written to {}",
        dir.display()
    );
}
