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

use bloom_type::BLOOM_TYPE;
use commands::{add, dump, exists, info, reserve};
use redis_module::configuration::ConfigurationFlags;
use redis_module::{
    raw, redis_module, AclCategory, Context, ModuleOptions, RedisResult, RedisString, RedisValue,
    Status,
};
use reply::Reply;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    cmd_add => add::bf_add,
    cmd_madd => add::bf_madd,
    cmd_insert => add::bf_insert,
    cmd_exists => exists::bf_exists,
    cmd_mexists => exists::bf_mexists,
    cmd_info => info::bf_info,
    cmd_card => info::bf_card,
    cmd_debug => info::bf_debug,
    cmd_scandump => dump::bf_scandump,
    cmd_loadchunk => dump::bf_loadchunk,
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
    let raw: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    if let Err(msg) = config::apply_load_args(&raw) {
        ctx.log_warning(&format!("redis-bf: {msg}"));
        return Status::Err;
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
    data_types: [BLOOM_TYPE],
    acl_categories: ["bloom",],
    init: init,
    commands: [
        ["bf.reserve", cmd_reserve, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.add", cmd_add, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.madd", cmd_madd, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.insert", cmd_insert, "write deny-oom", 1, 1, 1, "", "write bloom"],
        ["bf.exists", cmd_exists, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.mexists", cmd_mexists, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.info", cmd_info, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.card", cmd_card, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.debug", cmd_debug, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.scandump", cmd_scandump, "readonly fast", 1, 1, 1, "", "read bloom"],
        ["bf.loadchunk", cmd_loadchunk, "write deny-oom", 1, 1, 1, "", "write bloom"],
    ],
    configurations: [
        i64: [
            ["initial-size", &config::INITIAL_SIZE, config::DEFAULT_INITIAL_SIZE, 1, i64::MAX, ConfigurationFlags::DEFAULT, None],
            ["expansion-factor", &config::EXPANSION_FACTOR, config::DEFAULT_EXPANSION_FACTOR, 0, u32::MAX as i64, ConfigurationFlags::DEFAULT, None],
            ["max-filter-bytes", &config::MAX_FILTER_BYTES, 0, 0, i64::MAX, ConfigurationFlags::DEFAULT, None],
        ],
        string: [
            ["error-rate", &config::ERROR_RATE, "0.01", ConfigurationFlags::DEFAULT, None],
        ],
        bool: [],
        enum: [],
        module_args_as_configuration: false,
    ]
}
