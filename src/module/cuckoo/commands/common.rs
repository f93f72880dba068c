//! What the CF.* write commands share: the parameters of a filter to create ([`Params`]),
//! creating it within the memory budget ([`create`]), replicating a creation explicitly
//! ([`replicate_reserve`]), refusals whose text is built at run time ([`Fail`]), freeing the
//! sub-filters a deletion or compaction gave back ([`free_sub_filters`]) and the per-line
//! texts of RedisBloom 2.8 and 8.

use crate::bloom::cuckoo::{self, Cuckoo, CuckooError, SubFilter};
use crate::module::alloc::{free_bit_array, FreeBudget};
use crate::module::args::Arg;
use crate::module::cuckoo::cuckoo_type::store_new;
use crate::module::memory::{abort_diverging, with_budget};
use crate::module::replicate::from_primary_or_aof;
use crate::module::reply::Reply;
use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context, ContextFlags};
use std::ffi::CString;

/// The largest capacity RedisBloom 8 accepts (`cf-initial-size`'s maximum, 2^30).
pub const REDIS8_MAX_CAPACITY: i64 = 1 << 30;

/// The parameters of a filter to create (`CF.RESERVE`'s, or an auto-creation's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Items it is sized for (its first sub-filter has `next_pow2(capacity / bucket_size)`
    /// buckets).
    pub capacity: u64,
    /// Fingerprints per bucket, 1–255.
    pub bucket_size: u16,
    /// Evictions an insertion tries before the filter grows, ≥ 1.
    pub max_iterations: u16,
    /// Growth factor as given (stored rounded up to a power of two; 0: non-scaling).
    pub expansion: u16,
}

/// A refusal: Redis' arity error, a fixed text, or a text made at run time (RedisBloom 8's
/// range texts name the configured limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// `ERR wrong number of arguments for '<command>' command`.
    Arity,
    /// A fixed error text, sent verbatim.
    Text(&'static str),
    /// An error text made at run time, sent verbatim.
    Owned(String),
}

impl Fail {
    /// The reply for this refusal (an owned text is sent here: [`Reply::Sent`]).
    pub fn reply(self, ctx: &Context) -> Reply {
        match self {
            Fail::Arity => Reply::WrongArity,
            Fail::Text(t) => Reply::Error(t),
            Fail::Owned(t) => {
                let t = CString::new(t).unwrap_or_default();
                // SAFETY: live context of the running command; `t` is NUL-terminated and
                // outlives the call (Redis copies it).
                unsafe {
                    raw::RedisModule_ReplyWithError.unwrap()(ctx.get_raw(), t.as_ptr());
                }
                Reply::Sent
            }
        }
    }
}

/// True when the command runs from the primary's replication stream or an AOF / RDB load:
/// local limits (max expansions, the memory budget, RedisBloom 8's configured ranges) do not
/// apply to it, so replicas and replays build what the primary built.
pub fn internal(ctx: &Context) -> bool {
    from_primary_or_aof(ctx)
}

/// True for a RESP3 client.
pub fn is_resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

/// Creates an empty filter with `p` in `key` (opened for writing, known to be empty), within
/// the memory budget (`memory::with_budget`; none for replicated or loaded commands, where a
/// table that cannot be allocated aborts the server rather than diverging: `abort_diverging`).
/// `command` names the caller for that log line.
///
/// Errors: `ERR Could not create filter` (capacity below twice the bucket size, or a key that
/// refuses the value), `ERR Insufficient memory to create filter` (over the budget, too many
/// buckets, or the allocation failed) — RedisBloom's texts on both lines.
pub fn create(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    command: &str,
    p: &Params,
) -> Result<(), Reply> {
    if p.bucket_size == 0 || p.capacity < 2 * u64::from(p.bucket_size) {
        return Err(Reply::Error("ERR Could not create filter"));
    }
    let made = with_budget(
        ctx,
        0,
        |e| *e == CuckooError::OutOfMemory,
        |budget| {
            Cuckoo::new(
                p.capacity,
                p.bucket_size,
                p.max_iterations,
                p.expansion,
                budget,
            )
        },
    );
    let cf = made.map_err(|_| {
        let buckets = cuckoo::buckets_for(p.capacity, p.bucket_size);
        if buckets <= cuckoo::MAX_BUCKETS {
            // A table that could exist but was not allocated: fatal for a write that must apply.
            abort_diverging(
                ctx,
                command,
                key_name.as_slice(),
                buckets.saturating_mul(u64::from(p.bucket_size)),
            );
        }
        Reply::Error("ERR Insufficient memory to create filter")
    })?;
    store_new(key, cf, "ERR Could not create filter")
}

/// Replicates a creation as `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION
/// e`, every parameter spelled out, so that replicas and AOF replays make the same filter
/// whatever their own `cf` configs (`capacity`: the text to send, the client's when it gave
/// one). Whatever the command replicates next follows it.
pub fn replicate_reserve(ctx: &Context, key: &Arg, capacity: &[u8], p: &Params) {
    let (b, m, e) = (
        p.bucket_size.to_string(),
        p.max_iterations.to_string(),
        p.expansion.to_string(),
    );
    let argv: [&[u8]; 8] = [
        key.as_slice(),
        capacity,
        b"BUCKETSIZE",
        b.as_bytes(),
        b"MAXITERATIONS",
        m.as_bytes(),
        b"EXPANSION",
        e.as_bytes(),
    ];
    ctx.replicate("CF.RESERVE", &argv[..]);
}

/// Frees the sub-filters a deletion or compaction gave back, as the Bloom type frees its bit
/// arrays (`alloc::free_bit_array`: a big table's pages are moved out and given back off the
/// main thread), within one budget for all of them.
pub fn free_sub_filters(freed: Vec<SubFilter>) {
    if freed.is_empty() {
        return;
    }
    let mut budget = FreeBudget::new();
    for f in freed {
        free_bit_array(f.into_data().into_vec(), &mut budget);
    }
}

/// RedisBloom's texts for an out-of-range `CF.RESERVE` option or capacity, per server line.
pub struct RangeTexts {
    /// `MAXITERATIONS` outside [1, 65535].
    pub max_iterations: &'static str,
    /// `BUCKETSIZE` outside [1, 255] (RedisBloom 8: [1, max] with max from `cf-initial-size`,
    /// made by [`bucket_size_text`] when it is not 255).
    pub bucket_size: &'static str,
    /// `EXPANSION` outside [0, 32768].
    pub expansion: &'static str,
    /// `CF.RESERVE` capacity below twice the bucket size (RedisBloom 8: or above 2^30).
    pub reserve_capacity: &'static str,
    /// `CF.INSERT` / `CF.INSERTNX` `CAPACITY` below twice the bucket size (RedisBloom 8: or
    /// above 2^30).
    pub insert_capacity: &'static str,
}

/// RedisBloom 2.8's texts (Redis 7.x, Valkey).
pub const TEXTS_2_8: RangeTexts = RangeTexts {
    max_iterations: "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
    bucket_size: "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
    expansion: "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
    reserve_capacity: "Capacity must be at least (BucketSize * 2)",
    insert_capacity: "Capacity must be at least (BucketSize * 2)",
};

/// RedisBloom 8's texts (Redis 8).
pub const TEXTS_8: RangeTexts = RangeTexts {
    max_iterations: "MAXITERATIONS: value must be in the range [1, 65535]",
    bucket_size: "BUCKETSIZE: value must be in the range [1, 255]",
    expansion: "EXPANSION: value must be in the range [0, 32768]",
    reserve_capacity: "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
    insert_capacity: "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
};

/// The texts of a server line.
pub fn texts(redis8: bool) -> &'static RangeTexts {
    if redis8 {
        &TEXTS_8
    } else {
        &TEXTS_2_8
    }
}

/// RedisBloom 8's `BUCKETSIZE` range error for a largest bucket size of `max`.
pub fn bucket_size_text(max: i64) -> Fail {
    if max == 255 {
        Fail::Text(TEXTS_8.bucket_size)
    } else {
        Fail::Owned(format!("BUCKETSIZE: value must be in the range [1, {max}]"))
    }
}

/// Sub-filters smaller than this are read without prefetching: they stay in cache.
pub const PREFETCH_MIN_BYTES: u64 = 1 << 20;

/// How many items the batch commands (CF.MEXISTS, CF.INSERT) hash and prefetch ahead of the
/// one they work on, so that the cache misses of several items overlap.
pub const LOOKUPS_IN_FLIGHT: usize = 16;

/// True when `cf` has a sub-filter big enough for prefetching to pay.
pub fn worth_prefetching(cf: &Cuckoo) -> bool {
    cf.filters.iter().any(|f| f.bytes() >= PREFETCH_MIN_BYTES)
}

/// Asks the CPU to start loading both buckets of `l` in the big sub-filters of `cf` that the
/// command will read, without waiting: a hint that changes no result. `newest_only`: only
/// the newest sub-filter, for a plain insertion (CF.ADD / CF.INSERT), which looks for a free
/// slot there first and reads an older one only when both its buckets are full there; else
/// every sub-filter, for an insertion that first asks whether the item is present
/// (CF.ADDNX / CF.INSERTNX), which reads them all.
#[inline]
pub fn prefetch(cf: &Cuckoo, l: &cuckoo::Lookup, newest_only: bool) {
    let first = if newest_only {
        cf.filters.len().saturating_sub(1)
    } else {
        0
    };
    for (i, f) in cf.filters.iter().enumerate().skip(first) {
        if f.bytes() < PREFETCH_MIN_BYTES {
            continue;
        }
        let b = cf.shape_of(i, f);
        for h in [l.h1, l.h2] {
            prefetch_byte(f.data(), cuckoo::reduce(h, b.buckets) as usize * b.size);
        }
    }
}

#[inline(always)]
fn prefetch_byte(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < data.len() {
        // SAFETY: a prefetch is a hint that reads no data into the program and cannot fault;
        // the address is inside `data` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                data.as_ptr().add(at).cast(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}
