//! The Redis layer: module registration, the native type, command handlers and settings.
//! Handlers only parse arguments, call [`crate::bloom`] and reply.

pub mod alloc;
pub mod args;
pub mod bloom_type;
pub mod command_info;
pub mod commands;
pub mod config;
pub mod load_guard;
pub mod memory;
pub mod reply;
pub mod stats;
pub mod window_type;

use bloom_type::BLOOM_TYPE;
use commands::{add, dump, exists, info, reserve};
use redis_module::{
    raw, redis_module, AclCategory, Context, ModuleOptions, RedisResult, RedisString, RedisValue,
    Status,
};
use reply::Reply;
use smallvec::SmallVec;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use window_type::WINDOW_TYPE;

/// The C signature of a command handler.
type RawCommand = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// Runs a handler, sends its reply, and turns a panic into an error reply so that no panic
/// ever unwinds into Redis.
fn run(
    ctx: &Context,
    args: Vec<RedisString>,
    handler: fn(&Context, &[RedisString]) -> Reply,
) -> RedisResult {
    let reply = catch_unwind(AssertUnwindSafe(|| handler(ctx, &args)))
        .unwrap_or(Reply::Error("ERR internal error in redis-bf"));
    reply::send(ctx, &reply);
    Ok(RedisValue::NoReply)
}

macro_rules! commands {
    ($($name:ident => $handler:path),* $(,)?) => {
        $(
            fn $name(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
                run(ctx, args, $handler)
            }
        )*
    };
}

commands! {
    cmd_reserve => reserve::bf_reserve,
    cmd_madd => add::bf_madd,
    cmd_insert => add::bf_insert,
    cmd_mexists => exists::bf_mexists,
    cmd_info => info::bf_info,
    cmd_card => info::bf_card,
    cmd_debug => info::bf_debug,
    cmd_scandump => dump::bf_scandump,
    cmd_loadchunk => dump::bf_loadchunk,
}

/// Runs a handler straight from Redis' `argv`, as [`run`] does, but keeps up to four
/// arguments on the stack: the crate's command wrapper collects every argument into a new
/// `Vec` per call, a heap allocation the single-item commands (BF.ADD, BF.EXISTS) skip.
fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: fn(&Context, &[RedisString]) -> Reply,
) -> c_int {
    let context = Context::new(ctx);
    let reply = catch_unwind(AssertUnwindSafe(|| {
        let raw_args: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
            // SAFETY: Redis passes `argc` valid string pointers in `argv`, alive for the call.
            Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
            _ => &[],
        };
        let args: SmallVec<[RedisString; 4]> = raw_args
            .iter()
            .map(|&a| RedisString::new(NonNull::new(ctx), a))
            .collect();
        handler(&context, &args)
    }))
    .unwrap_or(Reply::Error("ERR internal error in redis-bf"));
    reply::send(&context, &reply);
    raw::Status::Ok as c_int
}

macro_rules! raw_commands {
    ($($name:ident => $handler:path),* $(,)?) => {
        $(
            extern "C" fn $name(
                ctx: *mut raw::RedisModuleCtx,
                argv: *mut *mut raw::RedisModuleString,
                argc: c_int,
            ) -> c_int {
                dispatch(ctx, argv, argc, $handler)
            }
        )*
    };
}

raw_commands! {
    raw_add => add::bf_add,
    raw_exists => exists::bf_exists,
}

/// Registers a command served by [`dispatch`], with the flags, key positions (key at index
/// 1) and ACL categories the `redis_module!` list gives the others. Errors: Redis refused it.
fn register_raw(
    ctx: &Context,
    name: &CStr,
    handler: raw::RedisModuleCmdFunc,
    flags: &CStr,
    acl: &CStr,
) -> Result<(), ()> {
    // SAFETY: called during OnLoad with its live context; every string is NUL-terminated and
    // outlives the call (Redis copies names and flags). SetCommandACLCategories (Redis ≥ 7.2)
    // is used only when present, as the crate does.
    unsafe {
        let create = raw::RedisModule_CreateCommand.ok_or(())?;
        if create(
            ctx.get_raw(),
            name.as_ptr(),
            handler,
            flags.as_ptr(),
            1,
            1,
            1,
        ) != raw::Status::Ok as c_int
        {
            return Err(());
        }
        if let (Some(set_acl), Some(get)) = (
            raw::RedisModule_SetCommandACLCategories,
            raw::RedisModule_GetCommand,
        ) {
            let command = get(ctx.get_raw(), name.as_ptr());
            if command.is_null() {
                return Err(());
            }
            // As the crate does for the commands it registers: a refused category is a warning.
            if set_acl(command, acl.as_ptr()) != raw::Status::Ok as c_int {
                ctx.log_warning(&format!(
                    "redis-bf: failed to set the ACL categories {acl:?} of {name:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The crate version (`Cargo.toml`) in RedisBloom's encoding, major·10000 + minor·100 + patch
/// (0.1.0 → 100): what `MODULE LIST` shows as `ver` and `INFO bf` as `bf_version`.
pub const MODULE_VERSION: i32 = encode_version(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// `major·10000 + minor·100 + patch` from the three decimal strings Cargo provides.
const fn encode_version(major: &str, minor: &str, patch: &str) -> i32 {
    const fn num(s: &str) -> i32 {
        let b = s.as_bytes();
        let mut v = 0;
        let mut i = 0;
        while i < b.len() {
            assert!(b[i].is_ascii_digit(), "version parts are decimal numbers");
            v = v * 10 + (b[i] - b'0') as i32;
            i += 1;
        }
        v
    }
    let (minor, patch) = (num(minor), num(patch));
    assert!(
        minor < 100 && patch < 100,
        "minor and patch must stay below 100"
    );
    num(major) * 10000 + minor * 100 + patch
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    // Short reads in RDB / RESTORE become errors instead of aborting the server.
    ctx.set_module_options(ModuleOptions::HANDLE_IO_ERRORS);
    // Configs first (the config file's or LOADEX's values), then the load arguments, which win.
    if let Err(msg) = config::register(ctx) {
        ctx.log_warning(&format!("redis-bf: {msg}"));
        return Status::Err;
    }
    let raw: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    match config::apply_load_args(&raw) {
        Ok(notes) => notes
            .iter()
            .for_each(|n| ctx.log_notice(&format!("redis-bf: {n}"))),
        Err(msg) => {
            ctx.log_warning(&format!("redis-bf: {msg}"));
            return Status::Err;
        }
    }
    for (name, handler, flags, acl) in [
        (
            c"bf.add",
            raw_add as RawCommand,
            c"write deny-oom",
            c"write bloom",
        ),
        (c"bf.exists", raw_exists, c"readonly fast", c"read bloom"),
    ] {
        if register_raw(ctx, name, Some(handler), flags, acl).is_err() {
            ctx.log_warning(&format!("redis-bf: could not register {name:?}"));
            return Status::Err;
        }
    }
    command_info::register(ctx);
    // SAFETY: RegisterInfoFunc exists since Redis 6.0; it replaces the crate's default
    // (empty) info callback with ours during OnLoad, as the API allows.
    unsafe {
        if let Some(register) = raw::RedisModule_RegisterInfoFunc {
            register(ctx.get_raw(), Some(stats::info_callback));
        }
    }
    Status::Ok
}

// Commands are registered in lower case: Redis names the registered name in its arity error
// (`ERR wrong number of arguments for 'bf.add' command`), as RedisBloom's replies do.
redis_module! {
    name: "bf",
    version: MODULE_VERSION,
    allocator: (alloc::BfAlloc, alloc::BfAlloc),
    data_types: [BLOOM_TYPE, WINDOW_TYPE],
    acl_categories: ["bloom",],
    init: init,
    commands: [
        ["bf.reserve", cmd_reserve, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.madd", cmd_madd, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.insert", cmd_insert, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.mexists", cmd_mexists, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.info", cmd_info, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.card", cmd_card, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.debug", cmd_debug, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.scandump", cmd_scandump, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.loadchunk", cmd_loadchunk, "write deny-oom", 1, 1, 1, "", "write bloom"],
    ],
    // The bf.* configs are registered in `init` (config::register), not here: the crate's
    // `configurations` ignores RedisModule_LoadConfigs failing, which crashes Redis 7.4 / Valkey.
}
