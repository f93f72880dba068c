//! Command metadata for `COMMAND INFO` / `COMMAND DOCS` / `COMMAND GETKEYS` (`docs/commands.md` ("Additions")):
//! arity, summary and one key spec (the key at index 1) per command, registered with
//! `RedisModule_SetCommandInfo` directly because the crate's path needs Redis ≥ 7.2 (on 7.0 its
//! `#[command]` macro makes the module fail to load).

use redis_module::commands::{BeginSearch, FindKeys, KeySpec, KeySpecFlags};
use redis_module::{raw, Context};
use std::ffi::CString;

/// (name, arity, key-spec flags, summary, complexity).
const COMMANDS: [(&str, i32, &str, &str, &str); 11] = [
    (
        "BF.RESERVE",
        -4,
        "RW INSERT",
        "Creates an empty Bloom filter with an error rate and capacity",
        "O(1)",
    ),
    (
        "BF.ADD",
        3,
        "RW INSERT",
        "Adds an item, creating the filter if needed",
        "O(k), k the hash count",
    ),
    (
        "BF.MADD",
        -3,
        "RW INSERT",
        "Adds items, creating the filter if needed",
        "O(k * n), n the number of items",
    ),
    (
        "BF.INSERT",
        -4,
        "RW INSERT",
        "Adds items, creating the filter with given parameters if needed",
        "O(k * n), n the number of items",
    ),
    (
        "BF.EXISTS",
        3,
        "RO ACCESS",
        "Tells whether an item may have been added",
        "O(k), k the hash count",
    ),
    (
        "BF.MEXISTS",
        -3,
        "RO ACCESS",
        "Tells for each item whether it may have been added",
        "O(k * n), n the number of items",
    ),
    (
        "BF.INFO",
        -2,
        "RO",
        "Returns the filter's capacity, size, layers, items and expansion",
        "O(1)",
    ),
    (
        "BF.CARD",
        2,
        "RO",
        "Returns the number of items added to the filter",
        "O(1)",
    ),
    (
        "BF.DEBUG",
        2,
        "RO",
        "Returns the filter's layers, one line each",
        "O(layers)",
    ),
    (
        "BF.SCANDUMP",
        3,
        "RO ACCESS",
        "Returns the next chunk of an incremental dump of the filter",
        "O(n), n the chunk size",
    ),
    (
        "BF.LOADCHUNK",
        4,
        "RW UPDATE",
        "Restores a filter from a chunk produced by BF.SCANDUMP",
        "O(n), n the chunk size",
    ),
];

fn key_spec_flags(text: &str) -> KeySpecFlags {
    text.split(' ').fold(KeySpecFlags::empty(), |acc, f| {
        acc | match f {
            "RW" => KeySpecFlags::READ_WRITE,
            "RO" => KeySpecFlags::READ_ONLY,
            "INSERT" => KeySpecFlags::INSERT,
            "UPDATE" => KeySpecFlags::UPDATE,
            "ACCESS" => KeySpecFlags::ACCESS,
            _ => KeySpecFlags::empty(),
        }
    })
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// Sets the metadata of every BF command. Failures are logged, never fatal: the commands
/// work without metadata (Redis then derives a key spec from the (1, 1, 1) key triple).
pub fn register(ctx: &Context) {
    // SAFETY: both functions exist since Redis 7.0 (checked for None anyway); every string and
    // array passed stays alive until SetCommandInfo returns (Redis copies what it keeps).
    unsafe {
        let (Some(get_command), Some(set_info)) =
            (raw::RedisModule_GetCommand, raw::RedisModule_SetCommandInfo)
        else {
            ctx.log_notice("redis-bf: server has no command metadata API; skipped");
            return;
        };
        for (name, arity, flags, summary, complexity) in COMMANDS {
            let cname = CString::new(name).unwrap_or_default();
            let command = get_command(ctx.get_raw(), cname.as_ptr());
            if command.is_null() {
                continue;
            }
            let spec = KeySpec::new(
                None,
                key_spec_flags(flags),
                BeginSearch::new_index(1),
                FindKeys::new_range(0, 1, 0),
            );
            let mut specs: [raw::RedisModuleCommandKeySpec; 2] =
                [(&spec).into(), std::mem::zeroed()];
            let summary = CString::new(summary).unwrap_or_default();
            let complexity = CString::new(complexity).unwrap_or_default();
            let since = c"0.1.0";
            let info = raw::RedisModuleCommandInfo {
                version: &INFO_VERSION,
                summary: summary.as_ptr(),
                complexity: complexity.as_ptr(),
                since: since.as_ptr(),
                history: std::ptr::null_mut(),
                tips: std::ptr::null(),
                arity,
                key_specs: specs.as_mut_ptr(),
                args: std::ptr::null_mut(),
            };
            if set_info(command, &info) != raw::REDISMODULE_OK as i32 {
                ctx.log_warning(&format!("redis-bf: could not set command info of {name}"));
            }
        }
    }
}
