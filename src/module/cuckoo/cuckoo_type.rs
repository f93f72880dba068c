//! The native data type `MBbloomCF` (cuckoo filters, encoding version 4) and its callbacks
//! (`docs/format.md` ("Cuckoo filters", "Cuckoo AOF rewrite")): RDB load/save, AOF rewrite, memory usage, free, free
//! effort, copy, digest and active defrag. Every callback catches panics: none may unwind into
//! Redis.
//!
//! Freeing is safe off the main thread (Redis' lazyfree thread may call `free`): it touches
//! only the value, the atomic `INFO bf` counters and the module's background freeing thread
//! (`alloc::free_bit_array`), as the Bloom type does.

use crate::bloom::cuckoo::dump::{encode_header, table_chunk, Scan};
use crate::bloom::cuckoo::{rdb, Cuckoo, SubFilter};
use crate::bloom::rdb::DecodeError;
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

/// The cuckoo type as RedisBloom names it, so RDB files and DUMP payloads interchange.
pub static CUCKOO_TYPE: RedisType = RedisType::new(
    "MBbloomCF",
    rdb::ENCODING_VERSION,
    type_methods!(Cuckoo, defrag),
);

/// Reads the cuckoo filter of a key opened read-only.
pub fn lookup(key: &RedisKey) -> Lookup<&Cuckoo> {
    data_type::lookup(key, &CUCKOO_TYPE)
}

/// Borrows the cuckoo filter of a key opened for writing. The borrow must not outlive `key`.
/// A write that changes the filter's sub-filters or items goes through [`tracked`], so that
/// `INFO bf` follows.
pub fn lookup_mut(key: &RedisKeyWritable) -> Lookup<&mut Cuckoo> {
    data_type::lookup_mut(key, &CUCKOO_TYPE)
}

/// Stores a newly created filter in an empty key opened for writing, and counts it in
/// `INFO bf`. Errors: `failure` when the key cannot take it.
pub fn store_new(key: &RedisKeyWritable, cf: Cuckoo, failure: &'static str) -> Result<(), Reply> {
    stats::cuckoo_created(&cf);
    key.set_value(&CUCKOO_TYPE, cf)
        .map_err(|_| Reply::Error(failure))
}

/// Runs a write on an existing filter and reports what it changed (sub-filters, items, table
/// bytes) to `INFO bf`: the way commands change a filter.
pub fn tracked<R>(cf: &mut Cuckoo, write: impl FnOnce(&mut Cuckoo) -> R) -> R {
    let before = stats::CuckooFootprint::of(cf);
    let r = write(cf);
    stats::cuckoo_changed(before, cf);
    r
}

/// Frees the sub-filters a deletion or compaction dropped (`Cuckoo::delete`,
/// `Cuckoo::compact`), big tables off the main thread as for a freed filter.
pub fn free_dropped(filters: Vec<SubFilter>) {
    if !filters.is_empty() {
        free_tables(filters, &mut alloc::FreeBudget::new());
    }
}

/// Frees sub-filters' tables within `budget` ([`alloc::free_bit_array`]: big ones have their
/// pages moved out and given back to the kernel by the module's background thread). Also
/// for the sub-filters a deletion or compaction drops.
pub fn free_tables(filters: Vec<SubFilter>, budget: &mut alloc::FreeBudget) {
    for f in filters {
        alloc::free_bit_array(f.into_data().into_vec(), budget);
    }
}

/// A deep copy whose tables are allocated fallibly (`None` when memory runs out): fresh
/// zeroed tables into which only the pages the source wrote are copied
/// ([`pages::copy_written`]).
pub fn try_clone(cf: &Cuckoo) -> Option<Cuckoo> {
    let mut filters = Vec::new();
    filters.try_reserve_exact(cf.filters.len()).ok()?;
    for f in &cf.filters {
        let mut data = crate::bloom::layer::try_zeroed(f.data().len() as u64).ok()?;
        pages::copy_written(f.data(), &mut data);
        filters.push(f.copy_onto(data)?);
    }
    Some(Cuckoo {
        buckets_log2: cf.buckets_log2,
        items: cf.items,
        deletes: cf.deletes,
        bucket_size: cf.bucket_size,
        max_iterations: cf.max_iterations,
        expansion: cf.expansion,
        filters: filters.into_boxed_slice(),
    })
}

impl FilterValue for Cuckoo {
    const TYPE_NAME: &'static str = "MBbloomCF";
    fn mem_usage(&self) -> u64 {
        Cuckoo::mem_usage(self)
    }
    fn try_copy(&self) -> Option<Cuckoo> {
        try_clone(self)
    }
    fn count_created(&self) {
        stats::cuckoo_created(self)
    }
    fn load(io: &mut IoReader, encver: c_int) -> Result<Cuckoo, DecodeError> {
        rdb::load(io, encver)
    }
    fn save(&self, io: &mut IoWriter) {
        rdb::save(self, io)
    }
    /// Emits the filter as RedisBloom's rewrite does: `CF.LOADCHUNK key 1 <header>`, then one
    /// `CF.LOADCHUNK key <next> <bytes>` per chunk of the SCANDUMP walk (a whole sub-filter, or
    /// 16 MiB pieces of a bigger one). Unlike `CF.SCANDUMP`, a filter with no items is written
    /// too: its header and its (zero) tables.
    fn rewrite(&self, aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString) {
        emit_loadchunk(aof, c"CF.LOADCHUNK", key, 1, &encode_header(self));
        let mut pos = 1;
        while let Scan::Chunk(next, data) = table_chunk(self, pos) {
            emit_loadchunk(aof, c"CF.LOADCHUNK", key, next, data);
            pos = next;
        }
    }
    /// `DEBUG DIGEST(-VALUE)`: the SCANDUMP header, then each sub-filter's table, as one
    /// sequence (as the Bloom types digest).
    fn digest(&self, md: *mut raw::RedisModuleDigest) {
        digest_filter(
            md,
            &encode_header(self),
            self.filters.iter().map(|f| f.data()),
        )
    }
    fn free(self) {
        stats::cuckoo_freed(&self);
        free_tables(self.filters.into_vec(), &mut alloc::FreeBudget::new())
    }
    /// Work to free a filter, in Redis' units (allocations): the filter, its sub-filter table
    /// and one per sub-filter, capped at Redis' lazyfree threshold (`free_effort_for`): freeing
    /// costs the calling thread a bounded amount whatever the size (see the Bloom type's
    /// `free_effort_of`), so Redis frees filters at once. Never 0.
    fn free_effort(&self) -> usize {
        free_effort_for(self.filters.len())
    }
    /// Active defrag: offers the filter, its sub-filter table and each small table to
    /// `RedisModule_DefragAlloc` (which moves a block worth moving and returns null otherwise),
    /// counting hits and misses in `INFO bf`. Always done in one call (returns 0).
    unsafe fn defrag(ctx: *mut raw::RedisModuleDefragCtx, value: *mut *mut c_void) -> c_int {
        // SAFETY: `*value` is the boxed Cuckoo this module created, allocated (like its
        // sub-filter slice and tables) by Redis' allocator through alloc::BfAlloc; no one else
        // uses it during the call.
        unsafe {
            defrag_value::<Cuckoo, SubFilter>(ctx, value, |c| &mut c.filters, |f| f.table_to_move())
        }
    }
}
