//! Likes and un-likes with one cuckoo filter per post: a like is `CF.ADD likes:post:<id> <user>`,
//! an un-like `CF.DEL`, and "has this user liked this post?" (a heart drawn full or empty on
//! every post of a feed page) is asked of the filter first with `CF.EXISTS`. A Bloom filter
//! could not do this: it cannot forget an un-like. The database — here a `HashSet` of
//! (post, user) pairs, the source of truth — is asked only when the filter says "maybe"; a
//! "no" is final, because a cuckoo filter has no false negatives as long as only items it holds
//! are deleted (the database guarantees that: an un-like is sent only for a like it has).
//!
//! Popularity is skewed (a few posts get most of the likes), so the busiest filters grow
//! (`CF.RESERVE likes:post:<id> 256 EXPANSION 2`: more sub-filters, and with them more of the
//! false-positive rate: with bucket size 2 and one-byte fingerprints, up to 2 × 2 / 255 ≈ 1.6 %
//! per sub-filter a lookup meets). The report gives the database lookups the filter saved, and
//! compares the false positives — un-liked pairs apart — with what each filter's fill predicts
//! (every filter walked with `CF.SCANDUMP` and rebuilt with the core): an un-like leaves nothing
//! behind, so un-liked pairs show as liked no more often than pairs never liked.
//!
//! ```sh
//! cargo run --release --example likes     # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{connect_fresh, memory_usage, Rng};
use redis_bf::bloom::cuckoo::{dump, Cuckoo};
use std::collections::HashSet;
use std::error::Error;
use std::time::Instant;

const POSTS: u64 = 300;
const USERS: u64 = 20_000;
/// Like / un-like events.
const EVENTS: usize = 400_000;
/// Share of events that un-like something the user liked before.
const UNLIKE_SHARE: f64 = 0.3;
/// Events per pipeline.
const BATCH: usize = 2_000;

/// The key of `post`'s filter.
fn key(post: u64) -> String {
    format!("likes:post:{post}")
}

/// Initial capacity of each post's filter.
const CAPACITY: u64 = 256;
/// Fingerprint values (1-255).
const FINGERPRINTS: f64 = 255.0;

fn user(u: u64) -> String {
    format!("user:{u}")
}

/// Feed pages viewed, each showing the like state of `PAGE` posts for its user.
const PAGES: usize = 20_000;
const PAGE: usize = 20;

/// A post, skewed: post p is chosen with weight 1 / (p + 1) (Zipf, s = 1).
fn skewed_post(rng: &mut Rng, cumulative: &[f64]) -> u64 {
    let total = *cumulative.last().unwrap();
    let x = rng.unit() * total;
    cumulative
        .partition_point(|&c| c <= x)
        .min(cumulative.len() - 1) as u64
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut con = connect_fresh(
        "CF.RESERVE",
        (0..POSTS).map(key),
        (CAPACITY, "EXPANSION", 2),
    )?;
    let mut rng = Rng(0x11ce5);

    let mut weights = Vec::with_capacity(POSTS as usize);
    let mut acc = 0.0;
    for p in 0..POSTS {
        acc += 1.0 / (p + 1) as f64;
        weights.push(acc);
    }

    // The database: every (post, user) like, and every pair ever un-liked (still un-liked or
    // liked again), for the report.
    let mut likes: HashSet<(u64, u64)> = HashSet::new();
    let mut liked_list: Vec<(u64, u64)> = Vec::new();
    let mut unliked: HashSet<(u64, u64)> = HashSet::new();
    let (mut like_events, mut unlike_events, mut repeats) = (0usize, 0usize, 0usize);

    let started = Instant::now();
    let mut done = 0;
    while done < EVENTS {
        let mut pipe = redis::pipe();
        for _ in 0..BATCH.min(EVENTS - done) {
            done += 1;
            if !liked_list.is_empty() && rng.chance(UNLIKE_SHARE) {
                // Un-like a random earlier like (the list may hold pairs un-liked since).
                let i = rng.below(liked_list.len());
                let pair = liked_list.swap_remove(i);
                if likes.remove(&pair) {
                    unliked.insert(pair);
                    unlike_events += 1;
                    pipe.cmd("CF.DEL")
                        .arg(key(pair.0))
                        .arg(user(pair.1))
                        .ignore();
                }
                continue;
            }
            let pair = (
                skewed_post(&mut rng, &weights),
                rng.below(USERS as usize) as u64,
            );
            if likes.insert(pair) {
                like_events += 1;
                liked_list.push(pair);
                pipe.cmd("CF.ADD")
                    .arg(key(pair.0))
                    .arg(user(pair.1))
                    .ignore();
            } else {
                repeats += 1; // already liked: the database says so, nothing to store
            }
        }
        pipe.query::<()>(&mut con)?;
    }
    let load_secs = started.elapsed().as_secs_f64();

    // The filters as they are now: each walked with CF.SCANDUMP and rebuilt with the core, for
    // its shape and for the false-positive rate its fill allows.
    let mut expected_fp = Vec::with_capacity(POSTS as usize);
    let (mut max_filters, mut grown, mut bytes) = (0usize, 0, 0u64);
    let mut busiest = (0u64, 0u64, 0usize);
    for p in 0..POSTS {
        let cf = walk(&mut con, &key(p))?;
        expected_fp.push(cf.as_ref().map_or(0.0, false_positive_rate));
        if let Some(cf) = cf {
            max_filters = max_filters.max(cf.filters.len());
            grown += usize::from(cf.filters.len() > 1);
            if cf.items > busiest.1 {
                busiest = (p, cf.items, cf.filters.len());
            }
        }
        bytes += memory_usage(&mut con, &key(p))?;
    }

    // Feed pages: each shows PAGE posts (skewed: popular posts appear more) for one user. Half
    // the pages belong to users who un-liked something, asked about those posts, so un-liked
    // pairs are checked often.
    let mut unliked_now: Vec<(u64, u64)> = unliked
        .iter()
        .copied()
        .filter(|p| !likes.contains(p))
        .collect();
    unliked_now.sort_unstable(); // a HashSet's order changes from run to run
    let started = Instant::now();
    let (mut asked, mut filter_no, mut db_lookups, mut shown_liked) = (0u64, 0u64, 0u64, 0u64);
    let (mut false_pos, mut not_liked_asked, mut false_neg) = (0u64, 0u64, 0u64);
    let (mut unliked_asked, mut unliked_shown) = (0u64, 0u64);
    // The false positives the filters' fill predicts for the same questions.
    let (mut expected_not_liked, mut expected_unliked) = (0.0f64, 0.0f64);
    for page in 0..PAGES {
        let mut pairs = Vec::with_capacity(PAGE);
        if page % 2 == 0 && !unliked_now.is_empty() {
            let (p, u) = unliked_now[rng.below(unliked_now.len())];
            pairs.push((p, u));
            while pairs.len() < PAGE {
                pairs.push((skewed_post(&mut rng, &weights), u));
            }
        } else {
            let u = rng.below(USERS as usize) as u64;
            while pairs.len() < PAGE {
                pairs.push((skewed_post(&mut rng, &weights), u));
            }
        }
        let mut pipe = redis::pipe();
        for &(p, u) in &pairs {
            pipe.cmd("CF.EXISTS").arg(key(p)).arg(user(u));
        }
        let maybe: Vec<bool> = pipe.query(&mut con)?;
        for (&pair, &m) in pairs.iter().zip(&maybe) {
            asked += 1;
            let truth = likes.contains(&pair);
            let was_unliked = !truth && unliked.contains(&pair);
            if !truth {
                not_liked_asked += 1;
                expected_not_liked += expected_fp[pair.0 as usize];
            }
            if was_unliked {
                unliked_asked += 1;
                expected_unliked += expected_fp[pair.0 as usize];
            }
            if !m {
                filter_no += 1; // drawn empty without asking the database
                if truth {
                    false_neg += 1;
                }
                continue;
            }
            db_lookups += 1;
            if truth {
                shown_liked += 1;
            } else {
                false_pos += 1;
                if was_unliked {
                    unliked_shown += 1;
                }
            }
        }
    }
    let page_secs = started.elapsed().as_secs_f64();

    let pct = |a: f64, b: u64| if b == 0 { 0.0 } else { 100.0 * a / b as f64 };
    println!(
        "{EVENTS} events on {POSTS} posts by {USERS} users in {load_secs:.2} s: {like_events} likes \
         (CF.ADD), {unlike_events} un-likes (CF.DEL), {repeats} repeated likes answered by the database"
    );
    println!(
        "  database now: {} likes; {} pairs un-liked and not liked again",
        likes.len(),
        unliked_now.len()
    );
    println!(
        "  filters: {bytes} bytes for {POSTS} posts ({:.1} bytes per like); {grown} grew past one \
         sub-filter, at most {max_filters}; busiest post {}: {} likes in {} sub-filters",
        bytes as f64 / likes.len().max(1) as f64,
        busiest.0,
        busiest.1,
        busiest.2
    );
    println!(
        "{PAGES} feed pages x {PAGE} posts = {asked} like states in {page_secs:.2} s (pipelined CF.EXISTS)"
    );
    println!(
        "  drawn empty by the filter alone: {filter_no}; database lookups: {db_lookups} (saved \
         {filter_no} of {asked} = {:.1}%)",
        pct(filter_no as f64, asked)
    );
    println!("  liked (filter maybe, database yes): {shown_liked}; false negatives: {false_neg}");
    println!(
        "  false positives among {not_liked_asked} not-liked pairs: {false_pos} = {:.3}% \
         (the filters' fill predicts {:.0} = {:.3}%)",
        pct(false_pos as f64, not_liked_asked),
        expected_not_liked,
        pct(expected_not_liked, not_liked_asked)
    );
    println!(
        "  un-liked pairs asked: {unliked_asked}, shown liked by the filter: {unliked_shown} = {:.3}% \
         (predicted {:.0} = {:.3}%); the database corrected every one",
        pct(unliked_shown as f64, unliked_asked),
        expected_unliked,
        pct(expected_unliked, unliked_asked)
    );
    assert_eq!(false_neg, 0, "a cuckoo filter has no false negatives here");
    // An un-like leaves nothing behind: un-liked pairs show as liked no more often than pairs
    // never liked on the same posts (the prediction), up to chance (four standard deviations).
    for (seen, predicted, what) in [
        (false_pos, expected_not_liked, "not-liked pairs"),
        (unliked_shown, expected_unliked, "un-liked pairs"),
    ] {
        let limit = predicted + 4.0 * predicted.sqrt() + 4.0;
        assert!(
            (seen as f64) <= limit,
            "{what}: {seen} false positives, above the {limit:.0} the filters' fill allows"
        );
    }
    Ok(())
}

/// The filter of `key` rebuilt from its CF.SCANDUMP walk (None: no items, the walk is empty).
fn walk(con: &mut redis::Connection, key: &str) -> Result<Option<Cuckoo>, Box<dyn Error>> {
    let (next, header): (i64, Option<Vec<u8>>) =
        redis::cmd("CF.SCANDUMP").arg(key).arg(0).query(con)?;
    let Some(header) = header.filter(|_| next != 0) else {
        return Ok(None);
    };
    let h = dump::parse_header(&header).ok_or("bad CF.SCANDUMP header")?;
    let limits = dump::HeaderLimits {
        max_expansion: 32768,
    };
    let mut cf = dump::decode_header(&h, limits, 1 << 30).ok_or("refused CF.SCANDUMP header")?;
    let mut it = next;
    loop {
        let (next, data): (i64, Option<Vec<u8>>) =
            redis::cmd("CF.SCANDUMP").arg(key).arg(it).query(con)?;
        let Some(data) = data.filter(|_| next != 0) else {
            return Ok(Some(cf));
        };
        dump::apply_chunk(&mut cf, next, &data).map_err(|_| "refused CF.SCANDUMP chunk")?;
        it = next;
    }
}

/// The chance that an item not in the filter is reported present, from the filter's fill: in
/// each sub-filter it looks at two buckets (random for an item never added), and each occupied
/// slot holds its one-in-255 fingerprint by chance.
fn false_positive_rate(cf: &Cuckoo) -> f64 {
    let miss = 1.0 - 1.0 / FINGERPRINTS;
    let bs = usize::from(cf.bucket_size);
    let mut none = 1.0;
    for f in &cf.filters {
        let buckets = f.data().chunks(bs);
        let n = buckets.len() as f64;
        let mean: f64 = buckets
            .map(|b| miss.powi(b.iter().filter(|&&x| x != 0).count() as i32))
            .sum::<f64>()
            / n;
        none *= mean * mean;
    }
    1.0 - none
}
