//! "Cache on second hit" for a CDN edge: most pages are requested only once a day (here three
//! quarters of them), and caching those "one-hit wonders" evicts useful pages for nothing. The
//! edge caches a page only on its second request within 24 hours: a day-window filter
//! (`BF.RESERVE edge:seen 0.01 <pages per day> WINDOW 86400000`) remembers every URL requested
//! in the last 24 to 30 hours, and `BF.ADD edge:seen <url>` answers 1 for the first request
//! (serve from the origin, do not cache) and 0 for a repeat (cache it). Yesterday's URLs are
//! forgotten by themselves, so the filter does not grow and its false-positive rate does not
//! climb; a false positive only caches a one-hit page, never refuses to cache a popular one.
//!
//! The run replays one day of requests: 200 000 distinct pages, 150 000 of them requested once
//! and 50 000 requested 2 to 20 times, in random order. It reports how many cache fills the
//! filter saved, the one-hit pages cached by a false positive, and the filter's memory against
//! a `SET` of the URLs.
//!
//! ```sh
//! cargo run --release --example cdn_second_hit   # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{connect, memory_usage, Rng, DAY_MS};
use std::collections::HashSet;
use std::error::Error;

const SEEN: &str = "edge:seen";
const SEEN_SET: &str = "edge:seen:set";
const ONE_HIT_PAGES: usize = 150_000;
const POPULAR_PAGES: usize = 50_000;
/// Requests per pipeline.
const BATCH: usize = 1_000;

fn main() -> Result<(), Box<dyn Error>> {
    let mut con = connect()?;
    let mut rng = Rng(2024);
    redis::cmd("DEL").arg(&[SEEN, SEEN_SET]).exec(&mut con)?;
    redis::cmd("BF.RESERVE")
        .arg(SEEN)
        .arg(0.01)
        .arg(ONE_HIT_PAGES + POPULAR_PAGES)
        .arg("WINDOW")
        .arg(DAY_MS)
        .exec(&mut con)?;

    // One day of requests in random order.
    let mut requests: Vec<(String, bool)> = Vec::new();
    for p in 0..ONE_HIT_PAGES {
        requests.push((format!("https://cdn.example/a/{p}.html"), false));
    }
    for p in 0..POPULAR_PAGES {
        let hits = 2 + rng.below(19);
        for _ in 0..hits {
            requests.push((format!("https://cdn.example/p/{p}.html"), true));
        }
    }
    for i in (1..requests.len()).rev() {
        let j = rng.below(i + 1);
        requests.swap(i, j);
    }

    let (mut origin_only, mut fills, mut wrong_fills, mut late_fills) = (0usize, 0, 0, 0);
    let mut cached: HashSet<String> = HashSet::new();
    for batch in requests.chunks(BATCH) {
        let mut pipe = redis::pipe();
        for (url, _) in batch {
            pipe.cmd("BF.ADD").arg(SEEN).arg(url);
            pipe.cmd("SADD").arg(SEEN_SET).arg(url).ignore();
        }
        let first: Vec<bool> = pipe.query(&mut con)?;
        for ((url, popular), first) in batch.iter().zip(first) {
            if cached.contains(url) {
                continue; // a cache hit: the filter is not even asked in a real edge
            }
            if first {
                origin_only += 1;
                if *popular {
                    late_fills += 1; // the first of several requests: cached next time
                }
            } else {
                fills += 1;
                cached.insert(url.clone());
                if !*popular {
                    wrong_fills += 1; // a one-hit page cached by a false positive
                }
            }
        }
    }
    let always_fills = ONE_HIT_PAGES + POPULAR_PAGES;
    let bf_mem: u64 = memory_usage(&mut con, SEEN)?;
    let set_mem: u64 = memory_usage(&mut con, SEEN_SET)?;
    println!(
        "{} requests for {} pages ({ONE_HIT_PAGES} requested once)",
        requests.len(),
        always_fills
    );
    println!(
        "cache fills: {fills} with cache-on-second-hit vs {always_fills} caching every first request ({:.0}% fewer)",
        100.0 * (1.0 - fills as f64 / always_fills as f64)
    );
    println!(
        "  one-hit pages cached by a false positive: {wrong_fills} ({:.2}% of one-hit pages, requested 1%)",
        100.0 * wrong_fills as f64 / ONE_HIT_PAGES as f64
    );
    println!(
        "  requests served from the origin without caching: {origin_only} ({late_fills} of them the first request of a popular page)"
    );
    println!(
        "memory: day-window filter {bf_mem} bytes vs SET of the URLs {set_mem} bytes ({:.1}x smaller, and the SET never forgets)",
        set_mem as f64 / bf_mem as f64
    );
    if fills != POPULAR_PAGES + wrong_fills {
        return Err("every popular page must be cached exactly once".into());
    }
    Ok(())
}
