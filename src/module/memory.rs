//! Limits for new bit arrays (`docs/commands.md` ("Memory limits")): a new filter or layer must not push
//! `used_memory` past `maxmemory`, nor take more than the memory the machine has available
//! (a bit array is zeroed when allocated, so an allocation the kernel over-commits would
//! otherwise end with the OOM killer instead of an error), nor make one filter larger than
//! `bf.max-filter-bytes`.

use super::config;
use redis_module::{raw, Context, ContextFlags};
use std::ffi::CStr;

/// Bytes a new bit array may take now for a filter already holding `existing_bytes` of bit
/// arrays, on a primary serving a client: the smallest of `maxmemory − used_memory` (when
/// maxmemory is set), 15/16 of the machine's available memory (`MemAvailable` of
/// `/proc/meminfo`; elsewhere `total_system_memory − used_memory`) and
/// `bf.max-filter-bytes − existing_bytes` (when set). Unlimited (`u64::MAX`) for replicated
/// commands and while loading, so replicas and AOF replays build exactly what the primary built.
pub fn new_array_budget(ctx: &Context, existing_bytes: u64) -> u64 {
    let flags = ctx.get_flags();
    if flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING) {
        return u64::MAX;
    }
    let [used, total_system_memory, maxmemory] =
        memory_info(ctx, &[c"used_memory", c"total_system_memory", c"maxmemory"]);
    let available = mem_available().unwrap_or(match total_system_memory {
        0 => u64::MAX,
        total => total.saturating_sub(used),
    });
    let maxmemory = match maxmemory {
        0 => u64::MAX,
        max => max.saturating_sub(used),
    };
    maxmemory
        .min(available - available / 16)
        .min(config::max_filter_bytes().saturating_sub(existing_bytes))
}

/// Unsigned fields of the `memory` INFO section (0 when absent), read without creating any
/// string (the crate's `ServerInfo::field` leaks one per call in redis-module 2.0.8).
fn memory_info<const N: usize>(ctx: &Context, names: &[&CStr; N]) -> [u64; N] {
    let mut out = [0u64; N];
    // SAFETY: the three API functions exist since Redis 6.0; `data` is used only between
    // GetServerInfo and FreeServerInfo, with the live context of the running command.
    unsafe {
        let (Some(get), Some(field), Some(free)) = (
            raw::RedisModule_GetServerInfo,
            raw::RedisModule_ServerInfoGetFieldUnsigned,
            raw::RedisModule_FreeServerInfo,
        ) else {
            return out;
        };
        let data = get(ctx.get_raw(), c"memory".as_ptr());
        if data.is_null() {
            return out;
        }
        for (o, name) in out.iter_mut().zip(names) {
            let mut err = 0;
            let v = field(data, name.as_ptr(), &mut err);
            *o = if err == 0 { v } else { 0 };
        }
        free(ctx.get_raw(), data);
    }
    out
}

/// `MemAvailable` of `/proc/meminfo` in bytes (Linux), the kernel's estimate of memory that can
/// be allocated without swapping.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
