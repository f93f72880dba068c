//! The Rust core answering exactly as the server (issue #33 item 5, the core's side; the
//! JavaScript and Python checkers' side is in `clients/js/test/ribbon.live.test.mjs` and
//! `clients/python/test_check_ribbon_live.py`). For Ribbon filters of nine shapes — ε = 1 %,
//! 0.1 %, 0.01 %, a rate of fractional result bits (3 %), one of whole result bits
//! (2^−7 / 0.9: the core aims at 0.9 ε, so exactly 2^−7), ε = 0.5, one item, ~1e5 items, a crowded set whose rows all start in the
//! first slots (most items bumped) — staged with `RF.MADD` and built by `RF.BUILD` on a real
//! server:
//!
//! - offline build = server build: the core's `build` + `dump` of the same set gives the very
//!   `RF.SCANDUMP` header and chunks, and that offline walk uploaded by `RF.LOADCHUNK` under
//!   another key is the same value (`DEBUG DIGEST-VALUE`);
//! - the core's `Loader` over the server's chunks answers exactly as `RF.MEXISTS` on every
//!   probe: 1 030 000 in all, members and never-staged items (ASCII, UTF-8, raw bytes).
//!
//! The empty filter cannot be staged through commands (`RF.MADD` needs an item), so it is the
//! offline build uploaded by `RF.LOADCHUNK`, then walked back. One server for the whole file.

mod common;

use common::{batched, cmd, scandump_with, Rng, Server};
use redis::Connection;
use redis_bf::bloom::ribbon::dump::{chunk_at, encode_header, Loader};
use redis_bf::bloom::ribbon::{build, item_hash, Ribbon};

type Bytes = Vec<u8>;

/// One shape: the key, its members, the rate given to `RF.BUILD … ERROR`, the probes asked.
struct Shape {
    key: &'static str,
    members: Vec<Bytes>,
    rate: f64,
    probes: usize,
}

/// `prefix0`, `prefix1` … `prefix{n − 1}`.
fn numbered(prefix: &str, n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// The nine shapes. The crowded one: 300 items whose hashes are below 2^54, so their rows all
/// start in the filter's first slots and most of them are bumped (kept exactly beside the
/// solution).
fn shapes() -> Vec<Shape> {
    let crowded = (0u64..)
        .map(|i| format!("crowd:{i}").into_bytes())
        .filter(|s| item_hash(s) < 1 << 54);
    [
        ("rf:e2_1e5", numbered("a:", 100_000), 0.01, 300_000),
        ("rf:e3", numbered("b:", 20_000), 0.001, 200_000),
        ("rf:e4", numbered("c:", 20_000), 0.0001, 200_000),
        ("rf:frac", numbered("f:", 5_000), 0.03, 100_000),
        ("rf:whole", numbered("w:", 5_000), 1.0 / 128.0 / 0.9, 50_000),
        ("rf:half", numbered("h:", 2_000), 0.5, 100_000),
        ("rf:one", numbered("one:", 1), 0.01, 20_000),
        ("rf:crowded", crowded.take(300).collect(), 0.01, 30_000),
        ("rf:empty", Vec::new(), 0.01, 30_000),
    ]
    .into_iter()
    .map(|(key, members, rate, probes)| Shape {
        key,
        members,
        rate,
        probes,
    })
    .collect()
}

/// `count` probes: every fourth a member (when there are members), the rest never staged
/// (ASCII, UTF-8, and raw bytes of 0–40 bytes), the same for the same seed.
fn probes(members: &[Bytes], seed: u64, count: usize) -> Vec<Bytes> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| match i % 4 {
            0 if !members.is_empty() => members[rng.below(members.len() as u64) as usize].clone(),
            0 | 1 => format!("never:{seed}:{i}").into_bytes(),
            2 => format!("名前-{i}-ユーザー").into_bytes(),
            _ => {
                let n = rng.below(41) as usize;
                rng.bytes(n)
            }
        })
        .collect()
}

/// The same walk from the core's build, with no server.
fn core_walk(ribbon: &Ribbon) -> Vec<(i64, Bytes)> {
    let mut pairs = vec![(1, encode_header(ribbon).to_vec())];
    while let Some((next, data)) = chunk_at(ribbon, pairs.last().unwrap().0 as u64) {
        pairs.push((next as i64, data));
    }
    pairs
}

/// The core's `Loader` over a walk, as a client would run it.
fn load(pairs: &[(i64, Bytes)]) -> Ribbon {
    let mut loader = Loader::new(&pairs[0].1, 1 << 30).expect("the header");
    for (next, data) in &pairs[1..] {
        loader
            .apply(*next as u64 - data.len() as u64, data)
            .expect("a chunk");
    }
    loader.finish().expect("complete")
}

/// `RF.LOADCHUNK` of every pair of a walk, under `key` (the header's iterator is 1).
fn upload(con: &mut Connection, key: &str, pairs: &[(i64, Bytes)]) {
    for (next, data) in pairs {
        let () = cmd("RF.LOADCHUNK")
            .arg(key)
            .arg(next)
            .arg(data)
            .query(con)
            .unwrap();
    }
}

/// `DEBUG DIGEST-VALUE` of one key.
fn digest(con: &mut Connection, key: &str) -> Vec<String> {
    cmd("DEBUG DIGEST-VALUE").arg(key).query(con).unwrap()
}

#[test]
fn the_core_builds_and_answers_as_the_server_on_every_shape() {
    let s = Server::start();
    let mut con = s.conn();
    let mut asked = 0;
    for (n, shape) in shapes().into_iter().enumerate() {
        let key = shape.key;
        let core = build(
            shape.members.iter().map(|m| item_hash(m)).collect(),
            shape.rate,
        )
        .unwrap();
        let offline = core_walk(&core);
        // The rate as the shortest decimal that reads back as the same f64.
        let rate = format!("{}", shape.rate);
        if shape.members.is_empty() {
            upload(&mut con, key, &offline);
        } else {
            let staged = batched(&mut con, "RF.MADD", key, &shape.members, 1000);
            assert!(staged.iter().all(|&r| r == 1), "{key}: distinct items");
            let () = cmd("RF.BUILD")
                .arg(key)
                .arg("ERROR")
                .arg(&rate)
                .query(&mut con)
                .unwrap();
        }
        let walk = scandump_with(&mut con, "RF.SCANDUMP", key.as_bytes());
        assert_eq!(walk, offline, "{key}: the offline walk is the server's");

        // The offline walk uploaded under another key is the same value.
        let copy = format!("{key}:offline");
        upload(&mut con, &copy, &offline);
        assert_eq!(digest(&mut con, &copy), digest(&mut con, key), "{key}");

        let ribbon = load(&walk);
        let list = probes(&shape.members, n as u64 + 1, shape.probes);
        let server = batched(&mut con, "RF.MEXISTS", key, &list, 1000);
        let local: Vec<i64> = list.iter().map(|p| ribbon.contains(p) as i64).collect();
        let differ: Vec<&Bytes> = list
            .iter()
            .zip(server.iter().zip(&local))
            .filter(|(_, (s, l))| s != l)
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            differ.len(),
            0,
            "{key}: {} answers differ from RF.MEXISTS, the first for {:?}",
            differ.len(),
            differ.first().map(|p| String::from_utf8_lossy(p))
        );
        let members = list.iter().step_by(4).filter(|_| !shape.members.is_empty());
        assert!(
            members.clone().all(|m| ribbon.contains(m)),
            "{key}: no member is absent"
        );
        // What each shape is named for.
        let positives = local.iter().sum::<i64>() as usize;
        let member_probes = members.count();
        let strangers = list.len() - member_probes;
        let false_positives = positives - member_probes;
        let bumped = ribbon.bumped().len();
        let (blocks, upper) = (ribbon.shape().blocks(), ribbon.shape().upper_start());
        match key {
            "rf:crowded" => assert!(bumped > 100, "{key}: {bumped} bumped"),
            // Whole result bits: every start position in a lower block but the very last one
            // (the core's upper_start is ⌊positions / 128⌋, so the last block keeps r + 1).
            "rf:whole" => assert_eq!(upper, blocks - 1, "{key}: one upper block"),
            "rf:half" => assert!(
                false_positives * 3 > strangers,
                "{key}: {false_positives} of {strangers}"
            ),
            _ => assert!(
                (false_positives as f64) <= shape.rate * strangers as f64 * 1.3 + 5.0,
                "{key}: {false_positives} false positives of {strangers}"
            ),
        }
        if ["rf:e2_1e5", "rf:e3", "rf:e4", "rf:frac"].contains(&key) {
            assert!(0 < upper && upper < blocks, "{key}: fractional result bits");
        }
        println!(
            "{key}: {} items, {} bytes, {} probes, {false_positives} false positives of \
             {strangers}, {bumped} bumped, 0 differ",
            ribbon.items(),
            ribbon.bytes(),
            list.len()
        );
        asked += list.len();
    }
    assert_eq!(asked, 1_030_000);
}
