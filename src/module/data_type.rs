//! What the module's data types share, whatever the family (`MBbloom--`, `bf-window`,
//! `MBbloomCF`): the method table (`type_methods!`), the lookups of a key's value, the RDB
//! reader and writer on the module IO, loading with the abort rule, the AOF `LOADCHUNK`
//! emitter, and the callbacks and helpers all types use (memory usage, copy, free effort,
//! active defrag, digest). Each family's type file (`bloom/bloom_type.rs`,
//! `bloom/window_type.rs`, `cuckoo/cuckoo_type.rs`) holds only what is its own.

use crate::bloom::rdb::{DecodeError, ValueReader, ValueWriter};
use crate::module::pages;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::c_void;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The method table of a filter type whose values are `$value` (a [`FilterValue`]): every
/// callback is this file's generic one for that type; with `defrag`, active defrag goes through
/// [`FilterValue::defrag`] too.
macro_rules! type_methods {
    ($value:ty) => {
        $crate::module::data_type::type_methods!($value, None)
    };
    ($value:ty, defrag) => {
        $crate::module::data_type::type_methods!(
            $value,
            Some($crate::module::data_type::defrag::<$value>)
        )
    };
    ($value:ty, $defrag:expr) => {
        raw::RedisModuleTypeMethods {
            version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
            rdb_load: Some($crate::module::data_type::rdb_load::<$value>),
            rdb_save: Some($crate::module::data_type::rdb_save::<$value>),
            aof_rewrite: Some($crate::module::data_type::aof_rewrite::<$value>),
            mem_usage: Some($crate::module::data_type::mem_usage::<$value>),
            digest: Some($crate::module::data_type::digest::<$value>),
            free: Some($crate::module::data_type::free::<$value>),
            aux_load: None,
            aux_save: None,
            aux_save_triggers: 0,
            free_effort: Some($crate::module::data_type::free_effort::<$value>),
            unlink: None,
            copy: Some($crate::module::data_type::copy::<$value>),
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

/// A key's value of one of the module's types: missing, present, or another type (WRONGTYPE).
pub enum Lookup<T> {
    /// The key does not exist.
    Missing,
    /// The key holds a value of the type looked for.
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

/// A value of one of the module's data types: what a family supplies so that this file's
/// generic callbacks ([`rdb_load`], [`rdb_save`], [`aof_rewrite`], [`mem_usage`], [`digest`],
/// [`free`], [`free_effort`], [`copy`], [`defrag`]) serve its type. None of these may panic
/// into Redis: the callbacks catch panics around them.
pub(crate) trait FilterValue: Sized {
    /// The type's name, for the log.
    const TYPE_NAME: &'static str;
    /// Bytes the value holds, as `MEMORY USAGE` and `BF.INFO` Size count them.
    fn mem_usage(&self) -> u64;
    /// A deep copy with fallibly allocated bit arrays (`None` when memory runs out).
    fn try_copy(&self) -> Option<Self>;
    /// Counts a new value in the `INFO bf` totals.
    fn count_created(&self);
    /// Decodes a value of RDB encoding version `encver` (errors: the bytes were refused or
    /// could not be allocated).
    fn load(io: &mut IoReader, encver: c_int) -> Result<Self, DecodeError>;
    /// Encodes the value into an RDB / DUMP stream.
    fn save(&self, io: &mut IoWriter);
    /// Emits the commands that rebuild the value under `key` into an AOF rewrite.
    fn rewrite(&self, aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString);
    /// Feeds the value to `DEBUG DIGEST` (usually [`digest_filter`]).
    fn digest(&self, md: *mut raw::RedisModuleDigest);
    /// Uncounts the value from `INFO bf` and frees it within a bounded time on the calling
    /// thread (big arrays through `alloc::free_bit_array`); may run off the main thread.
    fn free(self);
    /// Work to free the value in Redis' units, at least 1 (usually [`free_effort_for`]).
    fn free_effort(&self) -> usize;
    /// Active defrag of the boxed value at `*value` (usually [`defrag_value`]); returns 0 when
    /// done. Only called for types registered with `type_methods!(T, defrag)`.
    ///
    /// # Safety
    /// `ctx` is the live defrag context; `*value` is a boxed `Self` this module created, whose
    /// parts came from Redis' allocator; Redis hands it to no one else during the call.
    unsafe fn defrag(_ctx: *mut raw::RedisModuleDefragCtx, _value: *mut *mut c_void) -> c_int {
        0
    }
}

/// The `rdb_load` callback of a data type whose values are `T` ([`load_value`]).
pub(crate) unsafe extern "C" fn rdb_load<T: FilterValue>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    load_value(rdb, |io| T::load(io, encver))
}

/// The `rdb_save` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn rdb_save<T: FilterValue>(
    rdb: *mut raw::RedisModuleIO,
    value: *mut c_void,
) {
    // SAFETY: Redis passes a value this module created (a boxed T), alive for the call.
    let v = unsafe { &*value.cast::<T>() };
    let _ = catch_unwind(AssertUnwindSafe(|| v.save(&mut IoWriter(rdb))));
}

/// The `aof_rewrite` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn aof_rewrite<T: FilterValue>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as in `rdb_save`.
    let v = unsafe { &*value.cast::<T>() };
    let _ = catch_unwind(AssertUnwindSafe(|| v.rewrite(aof, key)));
}

/// The `digest` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn digest<T: FilterValue>(
    md: *mut raw::RedisModuleDigest,
    value: *mut c_void,
) {
    // SAFETY: as in `rdb_save`.
    let v = unsafe { &*value.cast::<T>() };
    let _ = catch_unwind(AssertUnwindSafe(|| v.digest(md)));
}

/// The `free` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn free<T: FilterValue>(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the value was created with Box::into_raw(Box<T>) by this module and Redis
        // frees it exactly once.
        let v = unsafe { Box::from_raw(value.cast::<T>()) };
        let _ = catch_unwind(AssertUnwindSafe(|| v.free()));
    }
}

/// The `free_effort` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn free_effort<T: FilterValue>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    // SAFETY: as in `rdb_save`.
    let v = unsafe { &*value.cast::<T>() };
    catch_unwind(AssertUnwindSafe(|| v.free_effort())).unwrap_or(1)
}

/// The `defrag` callback of a data type whose values are `T` ([`FilterValue::defrag`]).
pub(crate) unsafe extern "C" fn defrag<T: FilterValue>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: Redis passes the live defrag context and the key's value, a boxed T this module
    // created, and hands it to no one else during the call.
    catch_unwind(AssertUnwindSafe(|| unsafe { T::defrag(ctx, value) })).unwrap_or(0)
}

/// The `mem_usage` callback of a data type whose values are `T`.
pub(crate) unsafe extern "C" fn mem_usage<T: FilterValue>(value: *const c_void) -> usize {
    // SAFETY: Redis passes a live value of the type whose method table names this callback,
    // which the module created as a `Box<T>`; it is only read.
    let v = unsafe { &*value.cast::<T>() };
    v.mem_usage() as usize
}

/// The `free_effort` at or below which Redis frees a value at once rather than on its lazyfree
/// thread (`LAZYFREE_THRESHOLD` in Redis' lazyfree.c).
pub(crate) const LAZYFREE_THRESHOLD: usize = 64;

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

/// Feeds a filter to `DEBUG DIGEST`: its SCANDUMP header, then each bit array, as one
/// sequence (both types digest this way).
pub(crate) fn digest_filter<A: AsRef<[u8]>>(
    md: *mut raw::RedisModuleDigest,
    header: &[u8],
    arrays: impl Iterator<Item = A>,
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
    arrays.for_each(|a| add(a.as_ref()));
    // SAFETY: as above.
    unsafe { raw::RedisModule_DigestEndSequence.unwrap()(md) };
}

/// Reads the value of type `ty` (whose values are `T`) of a key opened read-only.
pub fn lookup<'k, T>(key: &'k RedisKey, ty: &RedisType) -> Lookup<&'k T> {
    match key.get_value::<T>(ty) {
        Ok(Some(v)) => Lookup::Found(v),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
}

/// Borrows the value of type `ty` (whose values are `T`) of a key opened for writing. The
/// borrow must not outlive `key`.
pub fn lookup_mut<'k, T>(key: &'k RedisKeyWritable, ty: &RedisType) -> Lookup<&'k mut T> {
    match key.get_value::<T>(ty) {
        Ok(Some(v)) => Lookup::Found(v),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
}

/// The body of an `rdb_load` callback: decodes a value with `load` from the module IO (panics
/// caught), counts it in `INFO bf` and hands it to Redis boxed; on failure applies
/// [`abort_if_load_must_apply`] and returns null.
pub(crate) fn load_value<T: FilterValue, E>(
    rdb: *mut raw::RedisModuleIO,
    load: impl FnOnce(&mut IoReader) -> Result<T, E>,
) -> *mut c_void {
    match catch_unwind(AssertUnwindSafe(|| load(&mut IoReader(rdb)))) {
        Ok(Ok(v)) => {
            v.count_created();
            Box::into_raw(Box::new(v)).cast()
        }
        _ => {
            abort_if_load_must_apply(rdb, T::TYPE_NAME);
            std::ptr::null_mut()
        }
    }
}

/// Active defrag of a value made of a record (the boxed `T` at `*value`), its table of parts
/// (`parts`: a chain's layers, a cuckoo filter's sub-filters) and each part's bytes (`bytes`):
/// offers the record, the table and every part of at most [`DEFRAG_MAX_BYTES`] to
/// `RedisModule_DefragAlloc`, which copies a block worth moving and frees the old one and
/// returns null otherwise, counting hits and misses in `INFO bf`. Always done in one call
/// (returns 0).
///
/// # Safety
/// `ctx` is the live defrag context; `*value` is a boxed `T` this module created, whose record,
/// table and parts came from Redis' allocator through `alloc::BfAlloc`; Redis hands it to no
/// one else during the call.
pub(crate) unsafe fn defrag_value<T, P>(
    ctx: *mut raw::RedisModuleDefragCtx,
    value: *mut *mut c_void,
    parts: impl Fn(&mut T) -> &mut Box<[P]>,
    bytes: impl Fn(&mut P) -> &mut Box<[u8]>,
) -> c_int {
    // SAFETY: reading an API pointer set once by RedisModule_Init.
    let Some(defrag_alloc) = (unsafe { raw::RedisModule_DefragAlloc }) else {
        return 0;
    };
    // SAFETY (of each call): `ctx` is the live defrag context; every pointer offered is a live
    // allocation of Redis' allocator owned by this value.
    let moved = |ptr: *mut c_void| unsafe { defrag_move(defrag_alloc, ctx, ptr) };
    // SAFETY: as the caller promises. DefragAlloc copies a block bit for bit and frees the old
    // one, so after a move the old owner is forgotten (never dropped) and a new owner built on
    // the new address with the same length (boxed slices: their allocation is exactly their
    // length).
    unsafe {
        if let Some(new) = moved(*value) {
            *value = new;
        }
        let table = parts(&mut *(*value).cast::<T>());
        let len = table.len();
        if len > 0 {
            if let Some(new) = moved(table.as_mut_ptr().cast()) {
                let moved_table =
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.cast::<P>(), len));
                std::mem::forget(std::mem::replace(table, moved_table));
            }
        }
        for part in table.iter_mut() {
            let data = bytes(part);
            let len = data.len();
            if len == 0 || len > DEFRAG_MAX_BYTES {
                continue;
            }
            if let Some(new) = moved(data.as_mut_ptr().cast()) {
                let moved_data =
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(new.cast::<u8>(), len));
                std::mem::forget(std::mem::replace(data, moved_data));
            }
        }
    }
    0
}
