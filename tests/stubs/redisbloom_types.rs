//! TEST STUB, not part of redis-bf: a tiny module (`rbtypes`) that registers the three data
//! type names of RedisBloom's families redis-bf does not implement — `CMSk-TYPE` (Count-Min
//! sketch), `TopK-TYPE` (Top-K), `TDIS-TYPE` (T-Digest), encoding version 0 as RedisBloom's —
//! so that tests can make RDB files and DUMP payloads holding such values without RedisBloom.
//! The values are not RedisBloom's: each holds a number and a string, saved as two RDB fields.
//!
//! `STUB.CREATE <cms|topk|tdigest> <key>` creates a key of that type (`OK`; an error on an
//! unknown family or an existing key). Built by `tests/switch.rs` with
//! `cargo build --release --example redisbloom_types_stub`; never loaded beside redis-bf, which
//! registers the same type names.

use redis_module::native_types::RedisType;
use redis_module::{raw, redis_module, Context, NextArg, RedisError, RedisResult, RedisString};
use std::os::raw::{c_int, c_void};

/// A stub value: two fields, as RDB saves them.
struct Value {
    number: u64,
    text: Vec<u8>,
}

macro_rules! methods {
    () => {
        raw::RedisModuleTypeMethods {
            version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
            rdb_load: Some(load),
            rdb_save: Some(save),
            aof_rewrite: None,
            free: Some(free),
            mem_usage: None,
            digest: None,
            aux_load: None,
            aux_save: None,
            aux_save2: None,
            aux_save_triggers: 0,
            free_effort: None,
            unlink: None,
            copy: None,
            defrag: None,
            copy2: None,
            free_effort2: None,
            mem_usage2: None,
            unlink2: None,
        }
    };
}

static CMS: RedisType = RedisType::new("CMSk-TYPE", 0, methods!());
static TOPK: RedisType = RedisType::new("TopK-TYPE", 0, methods!());
static TDIGEST: RedisType = RedisType::new("TDIS-TYPE", 0, methods!());

unsafe extern "C" fn load(io: *mut raw::RedisModuleIO, _encver: c_int) -> *mut c_void {
    let (Ok(number), Ok(text)) = (raw::load_unsigned(io), raw::load_string_buffer(io)) else {
        return std::ptr::null_mut();
    };
    let text = text.as_ref().to_vec();
    Box::into_raw(Box::new(Value { number, text })).cast()
}

unsafe extern "C" fn save(io: *mut raw::RedisModuleIO, value: *mut c_void) {
    let v = &*value.cast::<Value>();
    raw::save_unsigned(io, v.number);
    raw::save_slice(io, &v.text);
}

unsafe extern "C" fn free(value: *mut c_void) {
    drop(Box::from_raw(value.cast::<Value>()));
}

fn create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let family = args.next_string()?;
    let name = args.next_arg()?;
    let ty = match family.as_str() {
        "cms" => &CMS,
        "topk" => &TOPK,
        "tdigest" => &TDIGEST,
        _ => return Err(RedisError::Str("ERR unknown family")),
    };
    let key = ctx.open_key_writable(&name);
    if !key.is_empty() {
        return Err(RedisError::Str("ERR key exists"));
    }
    let text = name.as_slice().to_vec();
    key.set_value(ty, Value { number: 42, text })?;
    Ok("OK".into())
}

redis_module! {
    name: "rbtypes",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [CMS, TOPK, TDIGEST],
    commands: [
        ["stub.create", create, "write", 2, 2, 1, ""],
    ],
}
