//! Exactly-once-ish click counting: producers append click events to a Redis Stream, and
//! retries make some events arrive more than once. A consumer group reads the stream and asks
//! `BF.ADD seen <event id>` for every event: reply 1 means the id was never seen, so the click is
//! counted; reply 0 means it was (almost certainly) seen before, so the event is dropped. Every
//! event is acknowledged with `XACK`.
//!
//! The report compares the filter's memory (`MEMORY USAGE`) with a plain `SET` holding the same
//! event ids, the exact alternative.
//!
//! ```sh
//! cargo run --release --example click_dedup     # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{redis_url, Rng};
use std::collections::{HashMap, HashSet};
use std::error::Error;
use std::time::Instant;

use redis::streams::StreamReadReply;

const STREAM: &str = "clicks:stream";
const GROUP: &str = "dedup";
const CONSUMER: &str = "worker-1";
const SEEN: &str = "clicks:seen";
const SEEN_SET: &str = "clicks:seen:set";
const PER_AD: &str = "clicks:per_ad";
const UNIQUE_EVENTS: usize = 200_000;
/// Probability that a producer re-sends a recent event (a retry after a timeout).
const RETRY_SHARE: f64 = 0.15;
const ADS: u64 = 500;
/// Events per producer pipeline.
const BATCH: usize = 1_000;
/// Events per XREADGROUP call.
const READ_COUNT: usize = 200;

/// A UUID-shaped event id.
fn event_id(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

struct Event {
    id: String,
    ad: u64,
    user: u64,
}

fn main() -> Result<(), Box<dyn Error>> {
    let client = redis::Client::open(redis_url())?;
    let mut con = client.get_connection()?;
    let mut rng = Rng(99);

    redis::cmd("DEL")
        .arg(&[STREAM, SEEN, SEEN_SET, PER_AD])
        .exec(&mut con)?;
    redis::cmd("BF.RESERVE")
        .arg(SEEN)
        .arg(0.001)
        .arg(UNIQUE_EVENTS)
        .exec(&mut con)?;
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(STREAM)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .exec(&mut con)?;

    // Producers: unique clicks, some of them sent again shortly after (retries).
    let t = Instant::now();
    let mut events: Vec<Event> = Vec::with_capacity(UNIQUE_EVENTS * 6 / 5);
    let mut unique_ids: HashSet<String> = HashSet::with_capacity(UNIQUE_EVENTS);
    while unique_ids.len() < UNIQUE_EVENTS {
        if events.len() > 10 && rng.chance(RETRY_SHARE) {
            let back = 1 + (rng.next() % 1000.min(events.len() as u64 - 1)) as usize;
            let e = &events[events.len() - back];
            let retry = Event {
                id: e.id.clone(),
                ad: e.ad,
                user: e.user,
            };
            events.push(retry);
        } else {
            let id = event_id(&mut rng);
            unique_ids.insert(id.clone());
            events.push(Event {
                id,
                ad: rng.next() % ADS,
                user: rng.next() % 100_000,
            });
        }
    }
    for batch in events.chunks(BATCH) {
        let mut pipe = redis::pipe();
        for e in batch {
            pipe.cmd("XADD")
                .arg(STREAM)
                .arg("*")
                .arg("event")
                .arg(&e.id)
                .arg("ad")
                .arg(e.ad)
                .arg("user")
                .arg(e.user)
                .ignore();
        }
        pipe.exec(&mut con)?;
    }
    let produce_secs = t.elapsed().as_secs_f64();

    // The consumer.
    let t = Instant::now();
    let (mut read, mut counted, mut dropped, mut false_drops) = (0usize, 0usize, 0usize, 0usize);
    // Ground truth: every event id read so far.
    let mut read_ids: HashSet<String> = HashSet::with_capacity(UNIQUE_EVENTS);
    loop {
        let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(CONSUMER)
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("STREAMS")
            .arg(STREAM)
            .arg(">")
            .query(&mut con)?;
        let Some(reply) = reply else { break };
        let entries: Vec<_> = reply.keys.into_iter().flat_map(|k| k.ids).collect();
        if entries.is_empty() {
            break;
        }
        let parsed: Vec<(String, String, String)> = entries
            .iter()
            .map(|e| {
                let ev: String = e.get("event").unwrap_or_default();
                let ad: String = e.get("ad").unwrap_or_default();
                (e.id.clone(), ev, ad)
            })
            .collect();
        // One BF.ADD per event, in stream order, in one round trip.
        let mut pipe = redis::pipe();
        for (_, ev, _) in &parsed {
            pipe.cmd("BF.ADD").arg(SEEN).arg(ev);
        }
        let fresh: Vec<bool> = pipe.query(&mut con)?;
        let mut pipe = redis::pipe();
        for ((_, ev, ad), is_new) in parsed.iter().zip(&fresh) {
            read += 1;
            let first_sighting = read_ids.insert(ev.clone());
            if *is_new {
                counted += 1;
                pipe.cmd("HINCRBY").arg(PER_AD).arg(ad).arg(1).ignore();
            } else {
                dropped += 1;
                if first_sighting {
                    false_drops += 1; // a new event mistaken for a repeat
                }
            }
            // The exact alternative, kept only to compare memory.
            pipe.cmd("SADD").arg(SEEN_SET).arg(ev).ignore();
        }
        let ids: Vec<&String> = parsed.iter().map(|(id, _, _)| id).collect();
        pipe.cmd("XACK").arg(STREAM).arg(GROUP).arg(&ids).ignore();
        pipe.exec(&mut con)?;
    }
    let consume_secs = t.elapsed().as_secs_f64();

    let xlen: usize = redis::cmd("XLEN").arg(STREAM).query(&mut con)?;
    let pending: (usize, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(STREAM)
        .arg(GROUP)
        .query(&mut con)?;
    let per_ad: HashMap<String, usize> = redis::cmd("HGETALL").arg(PER_AD).query(&mut con)?;
    let per_ad_total: usize = per_ad.values().sum();
    let bf_mem: u64 = memory_usage(&mut con, SEEN)?;
    let set_mem: u64 = memory_usage(&mut con, SEEN_SET)?;
    let card: u64 = redis::cmd("BF.CARD").arg(SEEN).query(&mut con)?;

    println!(
        "produced {} click events ({} unique, {} retries) with XADD in {produce_secs:.2} s; XLEN {xlen}",
        events.len(),
        unique_ids.len(),
        events.len() - unique_ids.len()
    );
    println!(
        "consumer group '{GROUP}' read {read} events in {consume_secs:.2} s, {} still pending",
        pending.0
    );
    println!("  counted (BF.ADD replied 1):      {counted}");
    println!("  dropped as repeats (replied 0):  {dropped}");
    println!(
        "    true repeats: {}, first sightings dropped by a false positive: {false_drops} ({:.4}% of unique events, requested 0.1%)",
        dropped - false_drops,
        100.0 * false_drops as f64 / unique_ids.len() as f64
    );
    println!(
        "  clicks per ad (HINCRBY) add up to {per_ad_total} over {} ads; BF.CARD {card}",
        per_ad.len()
    );
    println!(
        "memory: Bloom filter {bf_mem} bytes ({:.1} bytes/id) vs SET of the same ids {set_mem} bytes ({:.1} bytes/id): {:.1}x smaller",
        bf_mem as f64 / unique_ids.len() as f64,
        set_mem as f64 / unique_ids.len() as f64,
        set_mem as f64 / bf_mem as f64
    );
    if read != xlen || pending.0 != 0 || counted + false_drops != unique_ids.len() {
        return Err("event accounting does not add up".into());
    }
    Ok(())
}

fn memory_usage(con: &mut redis::Connection, key: &str) -> redis::RedisResult<u64> {
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query(con)
}
