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
use crate::bloom::rdb::{self, DecodeError, ValueReader, ValueWriter};
use crate::bloom::Chain;
use crate::module::alloc;
use crate::module::pages;
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::c_void;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The method table of a filter type whose values are `value` (a [`FilterValue`], for the
/// shared `mem_usage` and `copy` callbacks) and whose other callbacks, named `rdb_load`,
/// `rdb_save`, `aof_rewrite`, `digest`, `free` and `free_effort`, are in scope where it is used;
/// `defrag` is the type's active-defrag callback, if any.
macro_rules! type_methods {
    (value: $value:ty, defrag: $defrag:expr) => {
        raw::RedisModuleTypeMethods {
            version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
            rdb_load: Some(rdb_load),
            rdb_save: Some(rdb_save),
            aof_rewrite: Some(aof_rewrite),
            mem_usage: Some($crate::module::bloom::bloom_type::mem_usage::<$value>),
            digest: Some(digest),
            free: Some(free),
            aux_load: None,
            aux_save: None,
            aux_save_triggers: 0,
            free_effort: Some(free_effort),
            unlink: None,
            copy: Some($crate::module::bloom::bloom_type::copy::<$value>),
            defrag: $defrag,
            mem_usage2: None,
            free_effort2: None,
            unlink2: None,
            copy2: None,
            aux_save2: None,
        }
    };
}
pub(crate) use type_methods;

/// The Bloom type as RedisBloom names it, so RDB files and DUMP payloads interchange.
pub static BLOOM_TYPE: RedisType = RedisType::new(
    "MBbloom--",
    rdb::ENCODING_VERSION,
    type_methods!(value: Chain, defrag: Some(defrag)),
);

/// A key's Bloom value: missing, present, or another type (WRONGTYPE).
pub enum Lookup<T> {
    /// The key does not exist.
    Missing,
    /// The key holds a Bloom filter.
    Found(T),
    /// The key holds another type.
    WrongType,
}

impl<T> Lookup<T> {
    /// The value when the key holds one of this type; none when the key is missing or of
    /// another type (the read commands of RedisBloom answer 0 for both, without an error).
    pub fn found(self) -> Option<T> {
        match self {
            Lookup::Found(v) => Some(v),
            Lookup::Missing | Lookup::WrongType => None,
        }
    }
}

/// Reads the filter of a key opened read-only.
pub fn lookup(key: &RedisKey) -> Lookup<&Chain> {
    match key.get_value::<Chain>(&BLOOM_TYPE) {
        Ok(Some(c)) => Lookup::Found(c),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
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
    match key.get_value::<Chain>(&BLOOM_TYPE) {
        Ok(Some(c)) => Lookup::Found(c),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
}

/// Module-API value reader over an RDB / DUMP stream.
pub(crate) struct IoReader(pub(crate) *mut raw::RedisModuleIO);

impl ValueReader for IoReader {
    fn read_unsigned(&mut self) -> Result<u64, DecodeError> {
        raw::load_unsigned(self.0).map_err(|_| DecodeError)
    }
    fn read_double(&mut self) -> Result<f64, DecodeError> {
        raw::load_double(self.0).map_err(|_| DecodeError)
    }
    /// Takes ownership of the buffer Redis loaded instead of copying it, so loading a 1 GiB
    /// layer never holds two copies of it. That buffer (`RedisModule_LoadStringBuffer`: a plain
    /// allocation the read wrote whole, so every page of it is resident) then gives its
    /// all-zero pages back to the kernel ([`pages::discard_zero_pages`]): a value loaded from
    /// an RDB file, a full sync, a `RESTORE` or an atomic slot migration is resident as far as
    /// it holds data, as its source is, and the peak stays the one buffer.
    fn read_bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let mut len = 0usize;
        // SAFETY: `self.0` is the live RDB/DUMP stream of this rdb_load call. The buffer comes
        // from Redis' allocator (RM_Alloc / zmalloc). Inside redis-server the module's global
        // allocator (alloc::BfAlloc) frees with RedisModule_Free whatever the layout, so a Vec
        // owning this buffer is freed correctly; u8 needs no alignment. On an I/O error
        // (HANDLE_IO_ERRORS is set) Redis may return a pointer we must free ourselves.
        unsafe {
            let load = raw::RedisModule_LoadStringBuffer.ok_or(DecodeError)?;
            let ptr = load(self.0, &mut len);
            let failed = raw::RedisModule_IsIOError.is_some_and(|f| f(self.0) != 0);
            if ptr.is_null() {
                return Err(DecodeError);
            }
            let redis_alloc = raw::RedisModule_Alloc;
            if failed || len == 0 || redis_alloc.is_none() {
                raw::RedisModule_Free.ok_or(DecodeError)?(ptr.cast());
                return if failed {
                    Err(DecodeError)
                } else {
                    Ok(Vec::new())
                };
            }
            let mut buf = Vec::from_raw_parts(ptr.cast::<u8>(), len, len);
            pages::discard_zero_pages(&mut buf);
            Ok(buf)
        }
    }
}

/// Module-API value writer over an RDB / DUMP stream.
pub(crate) struct IoWriter(pub(crate) *mut raw::RedisModuleIO);

impl ValueWriter for IoWriter {
    fn write_unsigned(&mut self, v: u64) {
        raw::save_unsigned(self.0, v);
    }
    fn write_double(&mut self, v: f64) {
        raw::save_double(self.0, v);
    }
    fn write_bytes(&mut self, v: &[u8]) {
        raw::save_slice(self.0, v);
    }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = catch_unwind(AssertUnwindSafe(|| rdb::load(&mut IoReader(rdb), encver)));
    match loaded {
        Ok(Ok(chain)) => {
            stats::filter_created(&chain);
            Box::into_raw(Box::new(chain)).cast()
        }
        _ => {
            abort_if_load_must_apply(rdb, "MBbloom--");
            std::ptr::null_mut()
        }
    }
}

/// For a value of `type_name` that could not be loaded (its bit arrays could not be
/// allocated — Redis allocates big RDB strings fallibly — or its bytes were refused): aborts
/// the server when the value had to be applied (see
/// [`abort_if_value_must_apply`](crate::module::memory::abort_if_value_must_apply)); returns
/// otherwise (a client's `RESTORE` on a primary), and Redis answers `ERR Bad data format`.
pub(crate) fn abort_if_load_must_apply(rdb: *mut raw::RedisModuleIO, type_name: &str) {
    // SAFETY: `rdb` is the live I/O handle of the rdb_load call in progress; the context Redis
    // returns for it lives as long as the handle.
    let io_ctx = unsafe { raw::RedisModule_GetContextFromIO.map(|from_io| from_io(rdb)) };
    if let Some(ctx) = io_ctx.filter(|c| !c.is_null()) {
        crate::module::memory::abort_if_value_must_apply(
            &redis_module::Context::new(ctx),
            &format!("load a {type_name} value from a replicated RESTORE or while loading"),
        );
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value this module created (a boxed Chain), alive for the call.
    let chain = unsafe { &*value.cast::<Chain>() };
    let _ = catch_unwind(AssertUnwindSafe(|| rdb::save(chain, &mut IoWriter(rdb))));
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

/// Emits `<command> key iter data` (`BF.LOADCHUNK`, `CF.LOADCHUNK`) into an AOF rewrite.
pub(crate) fn emit_loadchunk(
    aof: *mut raw::RedisModuleIO,
    command: &CStr,
    key: *mut raw::RedisModuleString,
    iter: i64,
    data: &[u8],
) {
    // SAFETY: `aof` and `key` are the live arguments of an aof_rewrite callback; `command` is
    // NUL-terminated; EmitAOF is variadic: format "slb" takes the key (RedisModuleString*), a long long and a (pointer,
    // length) buffer, all valid for the call.
    unsafe {
        raw::RedisModule_EmitAOF.unwrap()(
            aof,
            command.as_ptr(),
            c"slb".as_ptr(),
            key,
            iter as std::os::raw::c_longlong,
            data.as_ptr().cast::<c_char>(),
            data.len(),
        );
    }
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as in rdb_save.
    let chain = unsafe { &*value.cast::<Chain>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        emit_scandump_walk(aof, key, &encode_header(chain), |i| chunk_at(chain, i))
    }));
}

/// A value of one of the module's data types: what the callbacks shared by both types
/// ([`mem_usage`], [`copy`]) need of it.
pub(crate) trait FilterValue: Sized {
    /// The type's name, for the log.
    const TYPE_NAME: &'static str;
    /// Bytes the value holds, as `MEMORY USAGE` and `BF.INFO` Size count them.
    fn mem_usage(&self) -> u64;
    /// A deep copy with fallibly allocated bit arrays (`None` when memory runs out).
    fn try_copy(&self) -> Option<Self>;
    /// Counts a new value in the `INFO bf` totals.
    fn count_created(&self);
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
}

/// The `mem_usage` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn mem_usage<T: FilterValue>(value: *const c_void) -> usize {
    // SAFETY: Redis passes a live value of the type whose method table names this callback,
    // which the module created as a `Box<T>`; it is only read.
    let v = unsafe { &*value.cast::<T>() };
    v.mem_usage() as usize
}

unsafe extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the value was created with Box::into_raw(Box<Chain>) by this module and
        // Redis frees it exactly once.
        let chain = unsafe { Box::from_raw(value.cast::<Chain>()) };
        stats::filter_freed(&chain);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            free_arrays(*chain, &mut alloc::FreeBudget::new())
        }));
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

/// The `free_effort` at or below which Redis frees a value at once rather than on its lazyfree
/// thread (`LAZYFREE_THRESHOLD` in Redis' lazyfree.c).
pub(crate) const LAZYFREE_THRESHOLD: usize = 64;

/// Work to free a filter, in Redis' units (allocations): the chain, its layer table and one
/// per layer, capped at [`LAZYFREE_THRESHOLD`]. Freeing any filter costs the calling thread a
/// bounded amount ([`alloc::FreeBudget`]: big arrays' pages are moved out, not torn down), so
/// Redis always frees filters synchronously — `DEL`, `UNLINK`, expiry, eviction (with or
/// without `lazyfree-lazy-eviction`) — and `used_memory` drops inside the delete, as for a
/// string of that size; that is what eviction measures. It also keeps every filter within
/// `active-defrag-max-scan-fields`, so active defrag handles it in one call. Never 0 (Redis
/// reads 0 as "unknown, very large").
unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: as in rdb_save.
    let chain = unsafe { &*value.cast::<Chain>() };
    free_effort_of(chain)
}

/// See [`free_effort`].
pub(crate) fn free_effort_of(chain: &Chain) -> usize {
    free_effort_for(chain.layers.len())
}

/// The free effort of a value made of a record, a table of `parts` and each part: `2 + parts`,
/// capped at [`LAZYFREE_THRESHOLD`] (both types' `free_effort`).
pub(crate) fn free_effort_for(parts: usize) -> usize {
    (2 + parts).min(LAZYFREE_THRESHOLD)
}

/// Bit arrays above this size are not offered to active defrag: jemalloc moves only its small
/// size classes (up to 14 KiB with 4 KiB pages), so larger ones would only count as misses.
pub(crate) const DEFRAG_MAX_BYTES: usize = 16 << 10;

/// `RedisModule_DefragAlloc`'s signature.
pub(crate) type DefragAlloc =
    unsafe extern "C" fn(*mut raw::RedisModuleDefragCtx, *mut c_void) -> *mut c_void;

/// Offers one allocation to active defrag and counts the attempt in `INFO bf`: Some(new
/// address) when it moved (the old block is then freed), None when it stayed.
///
/// # Safety
/// `ctx` is the live defrag context and `ptr` a live allocation of Redis' allocator owned by
/// the value being defragmented; after a move the caller must forget its old owner.
pub(crate) unsafe fn defrag_move(
    defrag_alloc: DefragAlloc,
    ctx: *mut raw::RedisModuleDefragCtx,
    ptr: *mut c_void,
) -> Option<*mut c_void> {
    // SAFETY: as the caller promises.
    let new = unsafe { defrag_alloc(ctx, ptr) };
    stats::defrag_attempt(!new.is_null());
    (!new.is_null()).then_some(new)
}

/// Active defrag: lets the server move the filter's allocations (the chain, its layer table,
/// each bit array) out of fragmented pages with `RedisModule_DefragAlloc`, which copies the
/// block and frees the old one when it is worth moving and returns null otherwise (large
/// allocations are never moved). Counts hits and misses in `INFO bf`. Always done in one
/// call (returns 0).
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
    // SAFETY: `*value` is the boxed Chain this module created (Box::into_raw), whose memory
    // came from Redis' allocator through alloc::BfAlloc; Redis hands it to no one else during
    // the call. DefragAlloc copies a block bit for bit and frees the old one, so after a move
    // the old owner is forgotten (never dropped) and a new owner built on the new address
    // with the same length (boxed slices: their allocation is exactly their length).
    unsafe {
        if let Some(new) = moved(*value) {
            *value = new;
        }
        let chain = &mut *(*value).cast::<Chain>();
        let len = chain.layers.len();
        if len > 0 {
            if let Some(new) = moved(chain.layers.as_mut_ptr().cast()) {
                let table =
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.cast::<Layer>(), len));
                std::mem::forget(std::mem::replace(&mut chain.layers, table));
            }
        }
        for layer in chain.layers.iter_mut() {
            let len = layer.data.len();
            if len == 0 || len > DEFRAG_MAX_BYTES {
                continue;
            }
            if let Some(new) = moved(layer.data.as_mut_ptr().cast()) {
                let data = Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.cast::<u8>(), len));
                std::mem::forget(std::mem::replace(&mut layer.data, data));
            }
        }
    }
    0
}

/// The `COPY` callback of a data type whose values are `T`: an independent deep copy, or null
/// (a client's `COPY` then fails with an error; a replica's or a replay's aborts rather than
/// diverge, `memory::abort_copy_if_must_apply`).
pub(crate) unsafe extern "C" fn copy<T: FilterValue>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: as in `mem_usage`.
    let v = unsafe { &*value.cast::<T>() };
    match catch_unwind(AssertUnwindSafe(|| v.try_copy())) {
        Ok(Some(c)) => {
            c.count_created();
            Box::into_raw(Box::new(c)).cast()
        }
        _ => {
            crate::module::memory::abort_copy_if_must_apply(T::TYPE_NAME);
            std::ptr::null_mut()
        }
    }
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

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: as in rdb_save.
    let chain = unsafe { &*value.cast::<Chain>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        digest_filter(
            md,
            &encode_header(chain),
            chain.layers.iter().map(|l| &*l.data),
        )
    }));
}

/// Feeds a filter to `DEBUG DIGEST`: its SCANDUMP header, then each bit array, as one
/// sequence (both types digest this way).
pub(crate) fn digest_filter<'a>(
    md: *mut raw::RedisModuleDigest,
    header: &[u8],
    arrays: impl Iterator<Item = &'a [u8]>,
) {
    let add = |b: &[u8]| {
        // SAFETY: `md` is the live digest of the digest callback calling this; `b` outlives
        // the call.
        unsafe {
            raw::RedisModule_DigestAddStringBuffer.unwrap()(
                md,
                b.as_ptr().cast::<c_char>(),
                b.len(),
            )
        }
    };
    add(header);
    arrays.for_each(add);
    // SAFETY: as above.
    unsafe { raw::RedisModule_DigestEndSequence.unwrap()(md) };
}
