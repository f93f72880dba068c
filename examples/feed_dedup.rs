//! "Don't show me the same article twice": one Bloom filter per user holding the ids of the
//! articles already shown to that user; the recommender's candidates are filtered with
//! `BF.MEXISTS` and only unseen ones are shown, then recorded with `BF.MADD`.
//!
//! 2,000 users visit their feed 25 times each. Every visit the recommender proposes 60
//! candidates (popular articles are proposed more often), the filter drops the ones already
//! shown, and the first 10 unseen are shown. A `HashSet` per user keeps the truth so the report
//! can prove that no article is ever shown twice and count the unseen articles the filter hid by
//! mistake (its false positives).
//!
//! ```sh
//! cargo run --release --example feed_dedup       # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{connect_fresh, Rng};
use std::collections::HashSet;
use std::error::Error;
use std::time::Instant;

const USERS: usize = 2_000;
const VISITS: usize = 25;
const CANDIDATES: usize = 60;
const SHOWN_PER_VISIT: usize = 10;
const ARTICLES: u64 = 50_000;

/// An article id, skewed towards popular (low) ids: roughly a power law.
fn article(rng: &mut Rng) -> u64 {
    let u = rng.unit();
    ((ARTICLES as f64) * u * u * u) as u64
}

/// Per-user filter: sized for 100 articles, grows (expansion 2) for heavy readers.
const CAPACITY: u64 = 100;
const ERROR: f64 = 0.001;

/// The key of `user`'s filter.
fn key(user: usize) -> String {
    format!("feed:seen:{user}")
}

fn main() -> Result<(), Box<dyn Error>> {
    // Fresh per-user filters.
    let mut con = connect_fresh(
        "BF.RESERVE",
        (0..USERS).map(key),
        (ERROR, CAPACITY, "EXPANSION", 2),
    )?;
    let mut rng = Rng(7);

    let t = Instant::now();
    let mut truth: Vec<HashSet<u64>> = vec![HashSet::new(); USERS];
    let (mut proposed, mut dropped_seen, mut shown) = (0usize, 0usize, 0usize);
    let (mut repeats, mut hidden_unseen, mut short_visits) = (0usize, 0usize, 0usize);
    let mut example_lines = Vec::new();
    for visit in 0..VISITS {
        for (user, seen) in truth.iter_mut().enumerate() {
            // The recommender's candidates (distinct ids).
            let mut candidates = Vec::with_capacity(CANDIDATES);
            while candidates.len() < CANDIDATES {
                let a = article(&mut rng);
                if !candidates.contains(&a) {
                    candidates.push(a);
                }
            }
            let ids: Vec<String> = candidates.iter().map(|a| format!("article:{a}")).collect();
            let already: Vec<bool> = redis::cmd("BF.MEXISTS")
                .arg(key(user))
                .arg(&ids)
                .query(&mut con)?;
            let mut show = Vec::with_capacity(SHOWN_PER_VISIT);
            for ((a, id), seen_before) in candidates.iter().zip(&ids).zip(&already) {
                proposed += 1;
                if *seen_before {
                    dropped_seen += 1;
                    if !seen.contains(a) {
                        hidden_unseen += 1; // a false positive of the filter
                    }
                } else if show.len() < SHOWN_PER_VISIT {
                    if seen.contains(a) {
                        repeats += 1; // would be a false negative: never happens
                    }
                    show.push((*a, id.clone()));
                }
            }
            if show.len() < SHOWN_PER_VISIT {
                short_visits += 1;
            }
            if !show.is_empty() {
                let shown_ids: Vec<&String> = show.iter().map(|(_, id)| id).collect();
                redis::cmd("BF.MADD")
                    .arg(key(user))
                    .arg(&shown_ids)
                    .exec(&mut con)?;
            }
            shown += show.len();
            seen.extend(show.iter().map(|(a, _)| *a));
            if user == 0 && (visit < 3 || visit == VISITS - 1) {
                let dropped = already.iter().filter(|x| **x).count();
                let list: Vec<String> = show.iter().map(|(a, _)| a.to_string()).collect();
                example_lines.push(format!(
                    "  user 0, visit {:>2}: {dropped:>2} of {CANDIDATES} candidates already seen; shown [{}]",
                    visit + 1,
                    list.join(", ")
                ));
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();

    // Memory of the per-user filters.
    let mut pipe = redis::pipe();
    for u in 0..USERS {
        pipe.cmd("BF.INFO").arg(key(u)).arg("SIZE");
        pipe.cmd("BF.INFO").arg(key(u)).arg("FILTERS");
    }
    let info: Vec<Vec<u64>> = pipe.query(&mut con)?;
    let total_bytes: u64 = info.iter().step_by(2).map(|v| v[0]).sum();
    let max_layers = info
        .iter()
        .skip(1)
        .step_by(2)
        .map(|v| v[0])
        .max()
        .unwrap_or(0);
    let distinct_shown: usize = truth.iter().map(HashSet::len).sum();

    println!(
        "{USERS} users x {VISITS} visits, {CANDIDATES} candidates per visit, up to {SHOWN_PER_VISIT} shown ({secs:.2} s)"
    );
    for l in &example_lines {
        println!("{l}");
    }
    println!("  candidates proposed:             {proposed}");
    println!("  dropped as already seen:         {dropped_seen}");
    println!(
        "  articles shown:                  {shown} ({distinct_shown} distinct user/article pairs)"
    );
    println!("  articles shown twice:            {repeats}");
    println!(
        "  unseen articles hidden by mistake: {hidden_unseen} ({:.3}% of unseen candidates checked; requested {}%)",
        100.0 * hidden_unseen as f64 / (proposed - dropped_seen + hidden_unseen).max(1) as f64,
        ERROR * 100.0
    );
    println!("  visits with fewer than {SHOWN_PER_VISIT} unseen candidates: {short_visits}");
    println!(
        "  filters: {total_bytes} bytes in total, {:.0} bytes per user, at most {max_layers} layers (capacity {CAPACITY}, expansion 2)",
        total_bytes as f64 / USERS as f64
    );
    if repeats > 0 || distinct_shown != shown {
        return Err("an article was shown twice".into());
    }
    Ok(())
}
