//! The Redis layer: module registration, the data types, the filter kinds, command
//! handlers and settings. Handlers parse their arguments, call a filter kind (`filter`), which
//! calls [`crate::bloom`], and reply.

pub mod alloc;
pub mod args;
pub mod bloom;
pub mod command_info;
pub mod config;
pub mod counter;
pub mod cuckoo;
pub mod data_type;
pub mod load_guard;
pub mod membership;
pub mod memory;
pub mod notify;
pub mod pages;
pub mod replicate;
pub mod reply;
pub mod ribbon;
pub mod server;
pub mod slot_migration;
pub mod stats;
pub mod unsupported_types;
pub mod version;

pub use version::MODULE_VERSION;

use args::Arg;
use bloom::bloom_type::BLOOM_TYPE;
use bloom::commands::{add, dump, exists, info, reserve};
use bloom::window_type::WINDOW_TYPE;
use cuckoo::commands as cf;
use cuckoo::cuckoo_type::CUCKOO_TYPE;
use redis_module::{raw, redis_module, AclCategory, Context, RedisString, Status};
use reply::Reply;
use ribbon::commands as rf;
use ribbon::ribbon_type::RIBBON_TYPE;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use unsupported_types::{CMS_PLACEHOLDER, TDIGEST_PLACEHOLDER, TOPK_PLACEHOLDER};

/// The C signature of a command handler.
type RawCommand = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// Runs a handler straight from Redis' `argv`, sends its reply, and turns a panic into an
/// error reply so that no panic ever unwinds into Redis. Every command goes through here
/// rather than the crate's command wrapper, which collects the arguments into a new `Vec` of
/// 16 bytes an argument per call (16 MiB for a `BF.MADD` of a million items) and retains
/// each one (`RedisModule_RetainString`, then `FreeString` when it drops: two API calls per
/// argument). Here the handler gets `argv` itself as a slice of [`Arg`]: no copy, no
/// allocation, no retain, so BF.ADD and BF.EXISTS allocate nothing.
fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: fn(&Context, &[Arg]) -> Reply,
) -> c_int {
    let context = Context::new(ctx);
    let reply = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Redis passes `argc` valid string pointers in `argv`, alive for the call.
        let args = unsafe { Arg::from_argv(argv, argc) };
        handler(&context, args)
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
    raw_reserve => reserve::bf_reserve,
    raw_add => add::bf_add,
    raw_madd => add::bf_madd,
    raw_insert => add::bf_insert,
    raw_exists => exists::bf_exists,
    raw_mexists => exists::bf_mexists,
    raw_info => info::bf_info,
    raw_card => info::bf_card,
    raw_debug => info::bf_debug,
    raw_scandump => dump::bf_scandump,
    raw_loadchunk => dump::bf_loadchunk,
    raw_cf_reserve => cf::reserve::cf_reserve,
    raw_cf_add => cf::add::cf_add,
    raw_cf_addnx => cf::add::cf_addnx,
    raw_cf_insert => cf::add::cf_insert,
    raw_cf_insertnx => cf::add::cf_insertnx,
    raw_cf_exists => cf::exists::cf_exists,
    raw_cf_mexists => cf::exists::cf_mexists,
    raw_cf_count => cf::exists::cf_count,
    raw_cf_del => cf::del::cf_del,
    raw_cf_compact => cf::del::cf_compact,
    raw_cf_info => cf::info::cf_info,
    raw_cf_debug => cf::info::cf_debug,
    raw_cf_scandump => cf::dump::cf_scandump,
    raw_cf_loadchunk => cf::dump::cf_loadchunk,
    raw_rf_add => rf::add::rf_add,
    raw_rf_madd => rf::add::rf_madd,
    raw_rf_build => rf::build::rf_build,
    raw_rf_exists => rf::exists::rf_exists,
    raw_rf_mexists => rf::exists::rf_mexists,
    raw_rf_card => rf::info::rf_card,
    raw_rf_info => rf::info::rf_info,
    raw_rf_scandump => rf::dump::rf_scandump,
    raw_rf_loadchunk => rf::dump::rf_loadchunk,
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

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    counter::mark_main_thread();
    let line = server::detect(ctx);
    ctx.log_notice(&format!("redis-bf: server line {line:?}"));
    // Short reads in RDB / RESTORE become errors instead of aborting the server; on Valkey,
    // the opt-in to atomic slot migration.
    slot_migration::set_module_options(ctx, line);
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
    memory::set_detached_context(ctx);
    if let Err(msg) = bloom::filter::window::register_clock(ctx) {
        ctx.log_warning(&format!(
            "redis-bf: cannot follow the event loop for window filters' clock: {msg}"
        ));
        return Status::Err;
    }
    // Commands are registered in lower case: Redis names the registered name in its arity
    // error (`ERR wrong number of arguments for 'bf.add' command`), as RedisBloom's replies do.
    // The flags and ACL categories are RedisBloom 8's (`fast` on BF.RESERVE, BF.INFO, BF.CARD).
    const WRITE: &CStr = c"write deny-oom";
    const READ: &CStr = c"readonly fast";
    for (name, handler, flags, acl) in [
        (
            c"bf.reserve",
            raw_reserve as RawCommand,
            WRITE,
            c"write fast bloom",
        ),
        (c"bf.add", raw_add, WRITE, c"write bloom"),
        (c"bf.madd", raw_madd, WRITE, c"write bloom"),
        (c"bf.insert", raw_insert, WRITE, c"write bloom"),
        (c"bf.exists", raw_exists, READ, c"read bloom"),
        (c"bf.mexists", raw_mexists, READ, c"read bloom"),
        (c"bf.info", raw_info, READ, c"read fast bloom"),
        (c"bf.card", raw_card, READ, c"read fast bloom"),
        (c"bf.debug", raw_debug, READ, c"read bloom"),
        (c"bf.scandump", raw_scandump, READ, c"read bloom"),
        (c"bf.loadchunk", raw_loadchunk, WRITE, c"write bloom"),
        // RedisBloom 8's flags and categories. CF.COMPACT and CF.DEBUG are `readonly` there
        // too (CF.COMPACT refuses to run on a replica itself: `cuckoo/commands/del.rs`).
        (c"cf.reserve", raw_cf_reserve, WRITE, c"write fast cuckoo"),
        (c"cf.add", raw_cf_add, WRITE, c"write cuckoo"),
        (c"cf.addnx", raw_cf_addnx, WRITE, c"write cuckoo"),
        (c"cf.insert", raw_cf_insert, WRITE, c"write cuckoo"),
        (c"cf.insertnx", raw_cf_insertnx, WRITE, c"write cuckoo"),
        (c"cf.exists", raw_cf_exists, READ, c"read cuckoo"),
        (c"cf.mexists", raw_cf_mexists, READ, c"read cuckoo"),
        (c"cf.count", raw_cf_count, READ, c"read cuckoo"),
        (c"cf.del", raw_cf_del, c"write fast", c"write cuckoo"),
        (c"cf.compact", raw_cf_compact, READ, c"read cuckoo"),
        (c"cf.info", raw_cf_info, READ, c"read fast cuckoo"),
        (c"cf.debug", raw_cf_debug, READ, c"read cuckoo"),
        (c"cf.scandump", raw_cf_scandump, READ, c"read cuckoo"),
        (c"cf.loadchunk", raw_cf_loadchunk, WRITE, c"write cuckoo"),
        // RF.BUILD blocks its client while the build runs off the main thread.
        (c"rf.add", raw_rf_add, WRITE, c"write ribbon"),
        (c"rf.madd", raw_rf_madd, WRITE, c"write ribbon"),
        (c"rf.build", raw_rf_build, WRITE, c"write ribbon"),
        (c"rf.exists", raw_rf_exists, READ, c"read ribbon"),
        (c"rf.mexists", raw_rf_mexists, READ, c"read ribbon"),
        (c"rf.card", raw_rf_card, READ, c"read fast ribbon"),
        (c"rf.info", raw_rf_info, READ, c"read fast ribbon"),
        (c"rf.scandump", raw_rf_scandump, READ, c"read ribbon"),
        (c"rf.loadchunk", raw_rf_loadchunk, WRITE, c"write ribbon"),
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

redis_module! {
    name: "bf",
    version: MODULE_VERSION,
    allocator: (alloc::BfAlloc, alloc::BfAlloc),
    // The placeholders only explain, in the log, why a value of RedisBloom's other families is
    // refused (`unsupported_types.rs`).
    data_types: [BLOOM_TYPE, WINDOW_TYPE, CUCKOO_TYPE, RIBBON_TYPE, CMS_PLACEHOLDER, TOPK_PLACEHOLDER, TDIGEST_PLACEHOLDER],
    acl_categories: ["bloom", "cuckoo", "ribbon",],
    init: init,
    // Commands are registered in `init` (register_raw), all served by `dispatch`.
    // The bf.* configs are registered in `init` (config::register), not here: the crate's
    // `configurations` ignores RedisModule_LoadConfigs failing, which crashes Redis 7.4 / Valkey.
}
