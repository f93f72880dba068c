//! Username availability check with a Bloom filter in front of the user database.
//!
//! 1,000,000 registered usernames live in a `HashMap` (standing in for the database) and in the
//! filter `signup:users` (`BF.RESERVE signup:users 0.01 1000000`, loaded with `BF.MADD` in pipelined batches).
//! Then 100,000 sign-up attempts arrive, a mix of taken and free names. For each one the filter
//! is asked first: "no" means the name is certainly free and the database is not touched; "maybe"
//! needs a database lookup, which either confirms the name is taken or reveals a false positive.
//! A name that turns out to be free is registered (database + `BF.ADD`), as a real sign-up would.
//!
//! Run against a server with the module loaded (`scripts/start.sh`):
//!
//! ```sh
//! cargo run --release --example signup            # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::{connect, Rng};
use std::collections::HashMap;
use std::error::Error;
use std::time::Instant;

const KEY: &str = "signup:users";
const REGISTERED: usize = 1_000_000;
const ATTEMPTS: usize = 100_000;
/// Share of sign-up attempts that ask for a name that is already taken.
const TAKEN_SHARE: f64 = 0.4;
/// Names per `BF.MADD`, and `BF.MADD`s per pipeline (one round trip).
const MADD_BATCH: usize = 1_000;
const PIPELINE_DEPTH: usize = 20;

const ADJECTIVES: &[&str] = &[
    "happy", "silent", "brave", "lucky", "rapid", "quiet", "bright", "cosmic", "fuzzy", "golden",
    "hidden", "icy", "jolly", "mighty", "noble", "odd", "proud", "royal", "shy", "tiny", "urban",
    "vivid", "wild", "young", "zesty", "amber", "bold", "calm", "dark", "eager",
];
const NOUNS: &[&str] = &[
    "otter", "falcon", "tiger", "panda", "comet", "river", "pixel", "wizard", "rocket", "maple",
    "ninja", "raven", "cactus", "dragon", "ember", "fox", "glacier", "harbor", "island", "jaguar",
    "koala", "lemur", "meteor", "nebula", "orca", "parrot", "quokka", "robin", "saturn", "walrus",
];

/// A plausible username such as `brave_otter4821`.
fn username(rng: &mut Rng) -> String {
    let a = ADJECTIVES[rng.below(ADJECTIVES.len())];
    let n = NOUNS[rng.below(NOUNS.len())];
    format!("{a}_{n}{}", rng.below(100_000))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut con = connect()?;
    let mut rng = Rng(2024);

    // The "database": username -> user id.
    let t = Instant::now();
    let mut db: HashMap<String, u64> = HashMap::with_capacity(REGISTERED + ATTEMPTS);
    let mut registered: Vec<String> = Vec::with_capacity(REGISTERED);
    while registered.len() < REGISTERED {
        let name = username(&mut rng);
        if !db.contains_key(&name) {
            db.insert(name.clone(), registered.len() as u64 + 1);
            registered.push(name);
        }
    }

    // The filter, loaded in pipelined BF.MADD batches.
    redis::cmd("DEL").arg(KEY).exec(&mut con)?;
    redis::cmd("BF.RESERVE")
        .arg(KEY)
        .arg(0.01)
        .arg(REGISTERED)
        .exec(&mut con)?;
    let mut round_trips = 0;
    let mut reported_present = 0usize;
    for group in registered.chunks(MADD_BATCH * PIPELINE_DEPTH) {
        let mut pipe = redis::pipe();
        for batch in group.chunks(MADD_BATCH) {
            pipe.cmd("BF.MADD").arg(KEY).arg(batch);
        }
        let replies: Vec<Vec<bool>> = pipe.query(&mut con)?;
        reported_present += replies.iter().flatten().filter(|added| !**added).count();
        round_trips += 1;
    }
    let load_secs = t.elapsed().as_secs_f64();
    let size: u64 = single_info(&mut con, "SIZE")?;
    println!(
        "loaded {REGISTERED} registered names into the HashMap and BF '{KEY}' (error 0.01, capacity {REGISTERED})"
    );
    println!(
        "  {round_trips} pipelined round trips of {PIPELINE_DEPTH} x BF.MADD {MADD_BATCH}, {load_secs:.2} s; \
         {reported_present} names already reported present while loading (false positives at insert time)"
    );
    println!(
        "  filter size {size} bytes ({:.2} MiB, {:.1} bits per name)",
        size as f64 / 1048576.0,
        size as f64 * 8.0 / REGISTERED as f64
    );

    // Sign-up attempts.
    let t = Instant::now();
    let mut db_lookups = 0usize;
    let mut answered_by_filter = 0usize;
    let mut taken = 0usize;
    let mut free = 0usize;
    let mut false_positives = 0usize;
    let mut false_negatives = 0usize;
    for _ in 0..ATTEMPTS {
        let name = if rng.chance(TAKEN_SHARE) {
            registered[rng.below(registered.len())].clone()
        } else {
            username(&mut rng)
        };
        let maybe_taken: bool = redis::cmd("BF.EXISTS")
            .arg(KEY)
            .arg(&name)
            .query(&mut con)?;
        let is_taken = if !maybe_taken {
            // Definitely free: the database is not asked.
            answered_by_filter += 1;
            if db.contains_key(&name) {
                // Cannot happen with a Bloom filter; checked here only to prove it.
                false_negatives += 1;
            }
            false
        } else {
            db_lookups += 1;
            let in_db = db.contains_key(&name);
            if !in_db {
                false_positives += 1;
            }
            in_db
        };
        if is_taken {
            taken += 1;
        } else {
            // Register the free name, in the database and in the filter.
            free += 1;
            let id = db.len() as u64 + 1;
            db.insert(name.clone(), id);
            redis::cmd("BF.ADD").arg(KEY).arg(&name).exec(&mut con)?;
        }
    }
    let attempt_secs = t.elapsed().as_secs_f64();

    println!(
        "{ATTEMPTS} sign-up attempts in {attempt_secs:.2} s: {taken} names taken, {free} free (then registered)"
    );
    println!("  answered \"definitely free\" by the filter alone: {answered_by_filter}");
    println!(
        "  database lookups: {db_lookups} (saved {answered_by_filter} of {ATTEMPTS} = {:.1}%)",
        100.0 * answered_by_filter as f64 / ATTEMPTS as f64
    );
    println!(
        "  false positives (filter said maybe, database said free): {false_positives} = {:.3}% of the {free} free names (requested 1%)",
        100.0 * false_positives as f64 / free.max(1) as f64
    );
    println!("  false negatives: {false_negatives}");
    let card: u64 = redis::cmd("BF.CARD").arg(KEY).query(&mut con)?;
    let filters: u64 = single_info(&mut con, "FILTERS")?;
    println!("  filter now: BF.CARD {card}, {filters} layer(s)");
    if false_negatives > 0 {
        return Err("a registered name was reported free".into());
    }
    Ok(())
}

/// `BF.INFO key FIELD` → the single integer (RESP2 `[n]`).
fn single_info(con: &mut redis::Connection, field: &str) -> redis::RedisResult<u64> {
    let v: Vec<u64> = redis::cmd("BF.INFO").arg(KEY).arg(field).query(con)?;
    Ok(v[0])
}
