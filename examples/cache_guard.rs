//! Cache-penetration guard: a Bloom filter of every id that exists sits in front of the cache
//! and the database. Requests for ids that cannot exist (typos, scrapers, an attacker walking
//! random ids) are never cached, so without a guard every one of them reaches the database.
//! With the guard, `BF.EXISTS` answers "certainly not" and the request is rejected before the
//! cache or the database is asked; only the filter's rare false positives get through.
//!
//! 200,000 products with sparse random ids live in a `HashMap` (the "database") and in the
//! filter `products:ids`. 100,000 requests arrive: 70% for real products (popular ones more
//! often, so the cache warms up), 30% for ids that do not exist.
//!
//! ```sh
//! cargo run --release --example cache_guard      # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{connect, Rng};
use std::collections::HashMap;
use std::error::Error;
use std::time::Instant;

const FILTER: &str = "products:ids";
const CACHE_PREFIX: &str = "cache:product:";
const PRODUCTS: usize = 200_000;
const REQUESTS: usize = 100_000;
const INVALID_SHARE: f64 = 0.3;
const CACHE_TTL_SECS: u64 = 300;

/// A sparse 40-bit product id.
fn product_id(rng: &mut Rng) -> u64 {
    rng.next() >> 24
}

struct Product {
    name: String,
    price_cents: u64,
}

/// The slow system of record. Counts every call.
struct Database {
    rows: HashMap<u64, Product>,
    calls: usize,
}

impl Database {
    fn get(&mut self, id: u64) -> Option<&Product> {
        self.calls += 1;
        self.rows.get(&id)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut con = connect()?;
    let mut rng = Rng(4242);

    // The database and the list of real ids.
    let mut db = Database {
        rows: HashMap::with_capacity(PRODUCTS),
        calls: 0,
    };
    let mut ids = Vec::with_capacity(PRODUCTS);
    while ids.len() < PRODUCTS {
        let id = product_id(&mut rng);
        if let std::collections::hash_map::Entry::Vacant(e) = db.rows.entry(id) {
            e.insert(Product {
                name: format!("Product {}", ids.len()),
                price_cents: 100 + rng.next() % 100_000,
            });
            ids.push(id);
        }
    }

    // Clean slate: the filter and any cache entries of an earlier run.
    redis::cmd("DEL").arg(FILTER).exec(&mut con)?;
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{CACHE_PREFIX}*"))
            .arg("COUNT")
            .arg(1000)
            .query(&mut con)?;
        if !keys.is_empty() {
            redis::cmd("UNLINK").arg(&keys).exec(&mut con)?;
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }

    // The guard: every existing id, loaded in pipelined BF.MADD batches.
    redis::cmd("BF.RESERVE")
        .arg(FILTER)
        .arg(0.001)
        .arg(PRODUCTS)
        .exec(&mut con)?;
    for group in ids.chunks(20_000) {
        let mut pipe = redis::pipe();
        for batch in group.chunks(1_000) {
            pipe.cmd("BF.MADD").arg(FILTER).arg(batch).ignore();
        }
        pipe.exec(&mut con)?;
    }

    // Traffic.
    let t = Instant::now();
    let (mut valid_requests, mut invalid_requests) = (0usize, 0usize);
    let (mut rejected, mut cache_hits, mut served_from_db) = (0usize, 0usize, 0usize);
    let mut false_positive_db_calls = 0usize;
    let mut wrongly_rejected = 0usize;
    for _ in 0..REQUESTS {
        let id = if rng.unit() < INVALID_SHARE {
            invalid_requests += 1;
            loop {
                let id = product_id(&mut rng);
                if !db.rows.contains_key(&id) {
                    break id;
                }
            }
        } else {
            valid_requests += 1;
            // Popular products are asked for more often.
            let u = rng.unit();
            ids[((PRODUCTS as f64) * u * u * u) as usize]
        };

        // 1. The guard.
        let may_exist: bool = redis::cmd("BF.EXISTS")
            .arg(FILTER)
            .arg(id)
            .query(&mut con)?;
        if !may_exist {
            rejected += 1;
            if db.rows.contains_key(&id) {
                wrongly_rejected += 1; // impossible for a Bloom filter; counted to prove it
            }
            continue;
        }
        // 2. The cache.
        let key = format!("{CACHE_PREFIX}{id}");
        let cached: Option<String> = redis::cmd("GET").arg(&key).query(&mut con)?;
        if cached.is_some() {
            cache_hits += 1;
            continue;
        }
        // 3. The database.
        match db.get(id) {
            Some(p) => {
                served_from_db += 1;
                let value = format!("{}|{}", p.name, p.price_cents);
                redis::cmd("SET")
                    .arg(&key)
                    .arg(value)
                    .arg("EX")
                    .arg(CACHE_TTL_SECS)
                    .exec(&mut con)?;
            }
            None => false_positive_db_calls += 1,
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let filter_bytes: Vec<u64> = redis::cmd("BF.INFO")
        .arg(FILTER)
        .arg("SIZE")
        .query(&mut con)?;

    let without_guard = db.calls + rejected;
    println!(
        "{PRODUCTS} products in the database and in BF '{FILTER}' (error 0.001, {} bytes)",
        filter_bytes[0]
    );
    println!(
        "{REQUESTS} requests in {secs:.2} s: {valid_requests} for real products, {invalid_requests} for ids that do not exist"
    );
    println!("  rejected by the filter (no cache, no database): {rejected}");
    println!("  served from the cache:                         {cache_hits}");
    println!("  served from the database (then cached):        {served_from_db}");
    println!(
        "  false positives that reached the database:     {false_positive_db_calls} ({:.3}% of invalid requests)",
        100.0 * false_positive_db_calls as f64 / invalid_requests.max(1) as f64
    );
    println!("  real products wrongly rejected:                {wrongly_rejected}");
    println!(
        "database calls: {} with the guard, {without_guard} without it: {rejected} avoided ({:.1}%)",
        db.calls,
        100.0 * rejected as f64 / without_guard.max(1) as f64
    );
    if wrongly_rejected > 0 {
        return Err("a real product was rejected".into());
    }
    Ok(())
}
