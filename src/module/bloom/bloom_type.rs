//! The native data type `MBbloom--` (encoding version 4) and its callbacks: RDB save/load,
//! AOF rewrite, memory usage, free, free effort, active defrag, copy and digest
//! (`docs/format.md` ("RDB value", "AOF rewrite");
//! `docs/commands.md` ("Type and key commands")).
//! Every callback catches panics: none may unwind into Redis.
//!
//! Freeing is safe off the main thread (Redis' lazyfree thread calls `free` for
//! `FLUSHALL ASYNC` / `FLUSHDB ASYNC`): it touches only the value, the atomic `INFO bf`
//! counters and the module's own background freeing thread (`alloc::free_bit_array`).

use crate::bloom::dump::{chunk_at, encode_header};
use crate::bloom::layer::Layer;
use crate::bloom::rdb;
use crate::bloom::rdb::DecodeError;
use crate::bloom::Chain;
use crate::module::alloc;
use crate::module::data_type::{
    self, defrag_value, digest_filter, emit_loadchunk, free_effort_for, type_methods, FilterValue,
    IoReader, IoWriter, Lookup,
};
use crate::module::pages;
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::c_int;

/// The Bloom type as RedisBloom names it, so RDB files and DUMP payloads interchange.
pub static BLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    rdb::ENCODING_VERSION,
    type_methods!(Chain, defrag),
);

/// Reads the filter of a key opened read-only.
pub fn lookup(key: &RedisKey) -> Lookup<&Chain> {
    data_type::lookup(key, &BLOOM_TYPE)
}

/// Stores a newly created filter in an empty key opened for writing, and counts it in
/// `INFO bf`. Errors: `failure` when the key cannot take it.
pub fn store_new(key: &RedisKeyWritable, chain: Chain, failure: &'static str) -> Result<(), Reply> {
    stats::filter_created(&chain);
    key.set_value(&BLOOM_TYPE, chain)
        .map_err(|_| Reply::Error(failure))
}

/// Borrows the filter of a key opened for writing. The borrow must not outlive `key`.
pub fn lookup_mut(key: &RedisKeyWritable) -> Lookup<&mut Chain> {
    data_type::lookup_mut(key, &BLOOM_TYPE)
}

/// Emits a filter's SCANDUMP walk into an AOF rewrite as `BF.LOADCHUNK key 1 header`, then
/// one `BF.LOADCHUNK key next data` per chunk that `chunk_at(iter)` gives until it answers
/// 0 (plain and window filters both rewrite this way).
pub(crate) fn emit_scandump_walk<'a>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    header: &[u8],
    chunk_at: impl Fn(i64) -> (i64, &'a [u8]),
) {
    emit_loadchunk(aof, c"BF.LOADCHUNK", key, 1, header);
    let mut iter = 1;
    loop {
        let (next, data) = chunk_at(iter);
        if next == 0 {
            break;
        }
        emit_loadchunk(aof, c"BF.LOADCHUNK", key, next, data);
        iter = next;
    }
}

impl FilterValue for Chain {
    const TYPE_NAME: &'static str = "MBbloom--";
    fn mem_usage(&self) -> u64 {
        Chain::mem_usage(self)
    }
    fn try_copy(&self) -> Option<Chain> {
        try_clone(self)
    }
    fn count_created(&self) {
        stats::filter_created(self)
    }
    fn load(io: &mut IoReader, encver: c_int) -> Result<Chain, DecodeError> {
        rdb::load(io, encver)
    }
    fn save(&self, io: &mut IoWriter) {
        rdb::save(self, io)
    }
    fn rewrite(&self, aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString) {
        emit_scandump_walk(aof, key, &encode_header(self), |i| chunk_at(self, i))
    }
    /// The SCANDUMP header, then each layer's bit array.
    fn digest(&self, md: *mut raw::RedisModuleDigest) {
        digest_filter(
            md,
            &encode_header(self),
            self.layers.iter().map(|l| &*l.data),
        )
    }
    fn free(self) {
        stats::filter_freed(&self);
        free_arrays(self, &mut alloc::FreeBudget::new())
    }
    /// See [`free_effort_of`].
    fn free_effort(&self) -> usize {
        free_effort_of(self)
    }
    /// Active defrag: lets the server move the filter's allocations (the chain, its layer
    /// table, each bit array) out of fragmented pages with `RedisModule_DefragAlloc`, which
    /// copies the block and frees the old one when it is worth moving and returns null
    /// otherwise (large allocations are never moved). Counts hits and misses in `INFO bf`.
    /// Always done in one call (returns 0).
    unsafe fn defrag(ctx: *mut raw::RedisModuleDefragCtx, value: *mut *mut c_void) -> c_int {
        // SAFETY: `*value` is the boxed Chain this module created (Box::into_raw), whose memory
        // (layer table, bit arrays) came from Redis' allocator through alloc::BfAlloc; Redis
        // hands it to no one else during the call.
        unsafe { defrag_value::<Chain, Layer>(ctx, value, |c| &mut c.layers, |l| &mut l.data) }
    }
}

/// Frees a chain's bit arrays within `budget` ([`alloc::free_bit_array`]: big ones have their
/// pages moved out and given back to the kernel by the module's background thread); also used
/// for window filters' generations.
pub(crate) fn free_arrays(chain: Chain, budget: &mut alloc::FreeBudget) {
    for layer in chain.layers.into_vec() {
        alloc::free_bit_array(layer.data.into_vec(), budget);
    }
}

/// Work to free a filter, in Redis' units (allocations): the chain, its layer table and one
/// per layer, capped at [`LAZYFREE_THRESHOLD`](data_type::LAZYFREE_THRESHOLD). Freeing any
/// filter costs the calling thread a bounded amount ([`alloc::FreeBudget`]: big arrays' pages
/// are moved out, not torn down), so Redis always frees filters synchronously — `DEL`,
/// `UNLINK`, expiry, eviction (with or without `lazyfree-lazy-eviction`) — and `used_memory`
/// drops inside the delete, as for a string of that size; that is what eviction measures. It
/// also keeps every filter within `active-defrag-max-scan-fields`, so active defrag handles it
/// in one call. Never 0 (Redis reads 0 as "unknown, very large").
pub(crate) fn free_effort_of(chain: &Chain) -> usize {
    free_effort_for(chain.layers.len())
}

/// A deep copy whose bit arrays are allocated fallibly. Each new array is a fresh zeroed
/// allocation (calloc: untouched pages) into which only the pages the source ever wrote and
/// that hold a set bit are copied ([`pages::copy_written`]), so copying a 2 GiB filter that
/// holds a few items touches a few pages, not 2 GiB, and the copy's resident memory is what
/// the source's written pages are.
pub(crate) fn try_clone(chain: &Chain) -> Option<Chain> {
    let mut layers = Vec::new();
    layers.try_reserve_exact(chain.layers.len()).ok()?;
    for l in &chain.layers {
        let mut data = crate::bloom::layer::try_zeroed(l.data.len() as u64).ok()?;
        pages::copy_written(&l.data, &mut data);
        layers.push(Layer::from_parts(l.params(), l.size, data));
    }
    Some(Chain {
        size: chain.size,
        options: chain.options,
        growth: chain.growth,
        layers: layers.into_boxed_slice(),
    })
}
