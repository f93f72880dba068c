//! The Redis layer: module registration, the native type, command handlers and settings.
//! Handlers only parse arguments, call [`crate::bloom`] and reply.

pub mod alloc;
pub mod args;
pub mod bloom_type;
pub mod commands;
pub mod config;
pub mod memory;
pub mod reply;

use bloom_type::BLOOM_TYPE;
use commands::{add, dump, exists, info, reserve};
use redis_module::{
    redis_module, Context, ModuleOptions, RedisResult, RedisString, RedisValue, Status,
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

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    // Short reads in RDB / RESTORE become errors instead of aborting the server.
    ctx.set_module_options(ModuleOptions::HANDLE_IO_ERRORS);
    let raw: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    match config::apply_load_args(&raw) {
        Ok(()) => Status::Ok,
        Err(msg) => {
            ctx.log_warning(&format!("redis-bf: {msg}"));
            Status::Err
        }
    }
}

redis_module! {
    name: "bf",
    version: 1,
    allocator: (alloc::BfAlloc, alloc::BfAlloc),
    data_types: [BLOOM_TYPE],
    init: init,
    commands: [
        ["BF.RESERVE", cmd_reserve, "write deny-oom", 1, 1, 1, ""],
        ["BF.ADD", cmd_add, "write deny-oom", 1, 1, 1, ""],
        ["BF.MADD", cmd_madd, "write deny-oom", 1, 1, 1, ""],
        ["BF.INSERT", cmd_insert, "write deny-oom", 1, 1, 1, ""],
        ["BF.EXISTS", cmd_exists, "readonly fast", 1, 1, 1, ""],
        ["BF.MEXISTS", cmd_mexists, "readonly fast", 1, 1, 1, ""],
        ["BF.INFO", cmd_info, "readonly fast", 1, 1, 1, ""],
        ["BF.CARD", cmd_card, "readonly fast", 1, 1, 1, ""],
        ["BF.DEBUG", cmd_debug, "readonly fast", 1, 1, 1, ""],
        ["BF.SCANDUMP", cmd_scandump, "readonly fast", 1, 1, 1, ""],
        ["BF.LOADCHUNK", cmd_loadchunk, "write deny-oom", 1, 1, 1, ""],
    ],
}
