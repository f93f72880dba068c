//! What the examples share: the server address and a connection to it, fresh filters at the
//! keys an example uses, a key's memory as the server counts it, one day in milliseconds, and a
//! small deterministic PRNG, so every run prints the same figures. Each example uses part of it.
#![allow(dead_code)]

/// The server to talk to: `REDIS_URL`, or `redis://127.0.0.1:6379/` (what `scripts/start.sh`
/// starts).
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_string())
}

/// One day in milliseconds: the window of a day-window filter (`BF.RESERVE key error capacity
/// WINDOW 86400000`).
pub const DAY_MS: u64 = 86_400_000;

/// `MEMORY USAGE key SAMPLES 0`: the bytes the server counts for `key`, every element
/// measured.
pub fn memory_usage(con: &mut redis::Connection, key: &str) -> redis::RedisResult<u64> {
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query(con)
}

/// SplitMix64 (Steele, Lea & Flood, "Fast Splittable Pseudorandom Number Generators",
/// OOPSLA 2014): deterministic for a given seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform value in [0, 1) with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() <= p
    }

    /// A value in 0..n (with the slight modulo bias, irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A connection to [`redis_url`]'s server.
pub fn connect() -> redis::RedisResult<redis::Connection> {
    redis::Client::open(redis_url())?.get_connection()
}

/// Makes a fresh, empty filter at each of `keys`, whatever an earlier run left there: one
/// pipeline of `DEL key` and `reserve key params…` per key (`reserve`: `BF.RESERVE` or
/// `CF.RESERVE`; `params`: its parameters after the key, as one tuple).
pub fn reserve_fresh(
    con: &mut redis::Connection,
    reserve: &str,
    keys: impl IntoIterator<Item = String>,
    params: impl redis::ToRedisArgs,
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    for key in keys {
        pipe.cmd("DEL").arg(&key).ignore();
        pipe.cmd(reserve).arg(&key).arg(&params).ignore();
    }
    pipe.exec(con)
}

/// A connection to [`redis_url`]'s server with a fresh, empty filter at each of `keys`
/// ([`reserve_fresh`]): how the examples with one filter per user or post start.
pub fn connect_fresh(
    reserve: &str,
    keys: impl IntoIterator<Item = String>,
    params: impl redis::ToRedisArgs,
) -> redis::RedisResult<redis::Connection> {
    let mut con = connect()?;
    reserve_fresh(&mut con, reserve, keys, params)?;
    Ok(con)
}
