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
use crate::module::alloc;
use crate::module::bloom::bloom_type::{
    defrag_move, digest_filter, emit_loadchunk, free_effort_for, type_methods, IoReader, IoWriter,
    Lookup, DEFRAG_MAX_BYTES,
};
use crate::module::pages;
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The cuckoo type as RedisBloom names it, so RDB files and DUMP payloads interchange.
pub static CUCKOO_TYPE: RedisType = RedisType::new(
    "MBbloomCF",
    rdb::ENCODING_VERSION,
    type_methods!(value: Cuckoo, defrag: Some(defrag)),
);

/// Reads the cuckoo filter of a key opened read-only.
pub fn lookup(key: &RedisKey) -> Lookup<&Cuckoo> {
    match key.get_value::<Cuckoo>(&CUCKOO_TYPE) {
        Ok(Some(c)) => Lookup::Found(c),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
}

/// Borrows the cuckoo filter of a key opened for writing. The borrow must not outlive `key`.
/// A write that changes the filter's sub-filters or items goes through [`tracked`], so that
/// `INFO bf` follows.
pub fn lookup_mut(key: &RedisKeyWritable) -> Lookup<&mut Cuckoo> {
    match key.get_value::<Cuckoo>(&CUCKOO_TYPE) {
        Ok(Some(c)) => Lookup::Found(c),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
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

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = catch_unwind(AssertUnwindSafe(|| rdb::load(&mut IoReader(rdb), encver)));
    match loaded {
        Ok(Ok(cf)) => {
            stats::cuckoo_created(&cf);
            Box::into_raw(Box::new(cf)).cast()
        }
        _ => {
            crate::module::bloom::bloom_type::abort_if_load_must_apply(rdb, "MBbloomCF");
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value this module created (a boxed Cuckoo), alive for the call.
    let cf = unsafe { &*value.cast::<Cuckoo>() };
    let _ = catch_unwind(AssertUnwindSafe(|| rdb::save(cf, &mut IoWriter(rdb))));
}

/// Emits the filter as RedisBloom's rewrite does: `CF.LOADCHUNK key 1 <header>`, then one
/// `CF.LOADCHUNK key <next> <bytes>` per chunk of the SCANDUMP walk (a whole sub-filter, or
/// 16 MiB pieces of a bigger one). Unlike `CF.SCANDUMP`, a filter with no items is written
/// too: its header and its (zero) tables.
unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as in rdb_save.
    let cf = unsafe { &*value.cast::<Cuckoo>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        emit_loadchunk(aof, c"CF.LOADCHUNK", key, 1, &encode_header(cf));
        let mut pos = 1;
        while let Scan::Chunk(next, data) = table_chunk(cf, pos) {
            emit_loadchunk(aof, c"CF.LOADCHUNK", key, next, data);
            pos = next;
        }
    }));
}

/// `DEBUG DIGEST(-VALUE)`: the SCANDUMP header, then each sub-filter's table, as one
/// sequence (as the Bloom types digest).
unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: as in rdb_save.
    let cf = unsafe { &*value.cast::<Cuckoo>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        digest_filter(md, &encode_header(cf), cf.filters.iter().map(|f| f.data()))
    }));
}

unsafe extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the value was created with Box::into_raw(Box<Cuckoo>) by this module and
        // Redis frees it exactly once.
        let cf = unsafe { Box::from_raw(value.cast::<Cuckoo>()) };
        stats::cuckoo_freed(&cf);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            free_tables(cf.filters.into_vec(), &mut alloc::FreeBudget::new())
        }));
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

/// Work to free a filter, in Redis' units (allocations): the filter, its sub-filter table and
/// one per sub-filter, capped at Redis' lazyfree threshold (`free_effort_for`): freeing costs the calling thread a
/// bounded amount whatever the size (see the Bloom type's `free_effort`), so Redis frees
/// filters at once. Never 0.
unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: as in rdb_save.
    let cf = unsafe { &*value.cast::<Cuckoo>() };
    free_effort_for(cf.filters.len())
}

/// Active defrag: offers the filter, its sub-filter table and each small table to
/// `RedisModule_DefragAlloc` (which moves a block worth moving and returns null otherwise),
/// counting hits and misses in `INFO bf`. Always done in one call (returns 0).
unsafe extern "C" fn defrag(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: reading an API pointer set once by RedisModule_Init.
    let Some(defrag_alloc) = (unsafe { raw::RedisModule_DefragAlloc }) else {
        return 0;
    };
    // SAFETY (of each call): `ctx` is the live defrag context; every pointer offered is a live
    // allocation of Redis' allocator owned by this value.
    let moved = |ptr: *mut c_void| unsafe { defrag_move(defrag_alloc, ctx, ptr) };
    // SAFETY: `*value` is the boxed Cuckoo this module created, allocated (like its sub-filter slice and
    // tables) by Redis' allocator through alloc::BfAlloc; no one else uses it during the
    // call. DefragAlloc copies a block bit for bit and frees the old one, so after a move the
    // old owner is forgotten (never dropped) and a new owner is built on the new address with
    // the same length.
    unsafe {
        if let Some(new) = moved(*value) {
            *value = new;
        }
        let cf = &mut *(*value).cast::<Cuckoo>();
        let len = cf.filters.len();
        if len > 0 {
            if let Some(new) = moved(cf.filters.as_mut_ptr().cast()) {
                let table = Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    new.cast::<SubFilter>(),
                    len,
                ));
                std::mem::forget(std::mem::replace(&mut cf.filters, table));
            }
        }
        for f in cf.filters.iter_mut() {
            let len = f.data().len();
            if len == 0 || len > DEFRAG_MAX_BYTES {
                continue;
            }
            if let Some(new) = moved(f.table_ptr().cast()) {
                let data = Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.cast::<u8>(), len));
                std::mem::forget(f.replace_data(data));
            }
        }
    }
    0
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

impl crate::module::bloom::bloom_type::FilterValue for Cuckoo {
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
}
