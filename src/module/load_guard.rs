//! A plain log line when another module already owns the name `bf`.
//!
//! Redis 8's full builds (and its Docker image) load their own RedisBloom, whose module name
//! is `bf` and whose data type is `MBbloom--`, the same names redis-bf uses so that data moves
//! between the two. Redis refuses a second module of the same name inside
//! `RedisModule_Init`, before any code of ours runs, and only logs "Module … initialization
//! failed". So the cdylib is linked with `-Wl,--wrap=Export_RedisModule_Init` (see
//! `build.rs`): the redis-module crate's call to its `Export_RedisModule_Init` lands in
//! [`__wrap_Export_RedisModule_Init`], which does what `RedisModule_Init` does and, when the
//! name is taken, says so in the server log. docs/redis8-valkey.md ("Redis 8") tells the user
//! what to do about it.

use redis_module::raw;
use std::os::raw::{c_char, c_int};

/// What the log says when the module name is taken (after Redis' own `<module>` prefix).
pub const NAME_TAKEN: &str = "redis-bf: cannot load: another module named 'bf' is already \
loaded (RedisBloom, which Redis 8 full builds load by default, or a second copy of redis-bf); \
it owns the BF.* commands and the MBbloom-- data type. Load only one of them: on Redis 8 start \
from the core redis.conf (not redis-full.conf) or remove the bundled Bloom module (redisbloom.so) \
from the modules folder";

/// `RedisModule_Init` (the header's static function) with a log line when the name is taken.
/// Replaces `Export_RedisModule_Init` of the redis-module crate in the cdylib; unused (but
/// harmless) in the test and bench binaries, which are not linked with `--wrap`.
///
/// # Safety
/// Called once by the `RedisModule_OnLoad` of the `redis_module!` macro with the live load
/// context and a NUL-terminated module name.
#[no_mangle]
pub unsafe extern "C" fn __wrap_Export_RedisModule_Init(
    ctx: *mut raw::RedisModuleCtx,
    name: *const c_char,
    ver: c_int,
    apiver: c_int,
) -> c_int {
    // SAFETY: `ctx` is the load context Redis passed to RedisModule_OnLoad; InitAPI fills the
    // API function pointers from it, exactly as RedisModule_Init does first.
    unsafe { raw::Export_RedisModule_InitAPI(ctx) };
    // SAFETY: the pointers were just filled in by InitAPI; `name` is NUL-terminated (the
    // macro copies the module name into a zeroed buffer); the log call passes our text as
    // the argument of a "%s" format, so nothing in it is read as a format.
    unsafe {
        if let Some(busy) = raw::RedisModule_IsModuleNameBusy {
            if busy(name) != 0 {
                if let Some(log) = raw::RedisModule_Log {
                    let msg = std::ffi::CString::new(NAME_TAKEN).unwrap_or_default();
                    log(ctx, c"warning".as_ptr(), c"%s".as_ptr(), msg.as_ptr());
                }
                return raw::REDISMODULE_ERR as c_int;
            }
        }
        quiet_defrag_registration();
        match raw::RedisModule_SetModuleAttribs {
            Some(set) => set(ctx, name, ver, apiver),
            None => return raw::REDISMODULE_ERR as c_int,
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// Stands in for `RedisModule_RegisterDefragFunc` / `RedisModule_RegisterDefragCallbacks` on
/// servers that lack them; never called (see [`quiet_defrag_registration`]). Refuses, so that a
/// registration through it could never pass silently.
unsafe extern "C" fn no_defrag_func(
    _ctx: *mut raw::RedisModuleCtx,
    _f: raw::RedisModuleDefragFunc,
) -> c_int {
    raw::REDISMODULE_ERR as c_int
}

/// See [`no_defrag_func`].
unsafe extern "C" fn no_defrag_callbacks(
    _ctx: *mut raw::RedisModuleCtx,
    _start: raw::RedisModuleDefragFunc,
    _end: raw::RedisModuleDefragFunc,
) -> c_int {
    raw::REDISMODULE_ERR as c_int
}

/// The redis-module crate's load sequence logs a warning ("defrag callbacks is not supported on
/// the current Redis server") whenever the server lacks the global defrag registration
/// functions (`RedisModule_RegisterDefragCallbacks` is Redis ≥ 8.0), although this module
/// registers no global defrag function and its types' per-value `defrag` callbacks work
/// wherever active defrag does (Redis 7.x and Valkey included). The crate only registers when
/// its lists of global defrag functions are not empty (they are empty here), so giving it
/// refusing stand-ins for the missing pointers silences the misleading line and changes
/// nothing else.
///
/// # Safety
/// Called once, during `RedisModule_OnLoad` on the main thread, right after the API pointers
/// were filled in and before anything reads these two.
unsafe fn quiet_defrag_registration() {
    // SAFETY: see the function's contract: single-threaded, before any reader.
    unsafe {
        let (func, callbacks) = (
            raw::RedisModule_RegisterDefragFunc,
            raw::RedisModule_RegisterDefragCallbacks,
        );
        if func.is_none() {
            raw::RedisModule_RegisterDefragFunc = Some(no_defrag_func);
        }
        if callbacks.is_none() {
            raw::RedisModule_RegisterDefragCallbacks = Some(no_defrag_callbacks);
        }
    }
}
