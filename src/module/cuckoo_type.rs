//! The native data type `MBbloomCF` (cuckoo filters, encoding version 4) and its callbacks
//! (`docs/format.md` ("Cuckoo filters")). Every callback catches panics: none may unwind into
//! Redis. (Skeleton: lookups, RDB and memory; AOF rewrite, copy, digest, defrag and background
//! freeing of big tables are still to come.)

use crate::bloom::cuckoo::{rdb, Cuckoo};
use crate::module::bloom_type::{type_methods, IoReader, IoWriter, Lookup};
use crate::module::reply::Reply;
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
    type_methods!(value: Cuckoo, defrag: None),
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
pub fn lookup_mut(key: &RedisKeyWritable) -> Lookup<&mut Cuckoo> {
    match key.get_value::<Cuckoo>(&CUCKOO_TYPE) {
        Ok(Some(c)) => Lookup::Found(c),
        Ok(None) => Lookup::Missing,
        Err(_) => Lookup::WrongType,
    }
}

/// Stores a newly created filter in an empty key opened for writing. Errors: `failure` when
/// the key cannot take it.
pub fn store_new(key: &RedisKeyWritable, cf: Cuckoo, failure: &'static str) -> Result<(), Reply> {
    key.set_value(&CUCKOO_TYPE, cf)
        .map_err(|_| Reply::Error(failure))
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = catch_unwind(AssertUnwindSafe(|| rdb::load(&mut IoReader(rdb), encver)));
    match loaded {
        Ok(Ok(cf)) => Box::into_raw(Box::new(cf)).cast(),
        _ => {
            crate::module::bloom_type::abort_if_load_must_apply(rdb, "MBbloomCF");
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value this module created (a boxed Cuckoo), alive for the call.
    let cf = unsafe { &*value.cast::<Cuckoo>() };
    let _ = catch_unwind(AssertUnwindSafe(|| rdb::save(cf, &mut IoWriter(rdb))));
}

unsafe extern "C" fn aof_rewrite(
    _aof: *mut raw::RedisModuleIO,
    _key: *mut raw::RedisModuleString,
    _value: *mut c_void,
) {
}

unsafe extern "C" fn digest(_md: *mut raw::RedisModuleDigest, _value: *mut c_void) {}

unsafe extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the value was created with Box::into_raw(Box<Cuckoo>) by this module and
        // Redis frees it exactly once.
        drop(unsafe { Box::from_raw(value.cast::<Cuckoo>()) });
    }
}

unsafe extern "C" fn free_effort(
    _key: *mut raw::RedisModuleString,
    _value: *const c_void,
) -> usize {
    1
}

impl crate::module::bloom_type::FilterValue for Cuckoo {
    const TYPE_NAME: &'static str = "MBbloomCF";
    fn mem_usage(&self) -> u64 {
        Cuckoo::mem_usage(self)
    }
    fn try_copy(&self) -> Option<Cuckoo> {
        Some(self.clone())
    }
    fn count_created(&self) {}
}
