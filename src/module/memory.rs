//! Limits for new bit arrays (DECISIONS.md D3): a new filter or layer must not push
//! `used_memory` past `maxmemory`, nor past the machine's physical memory (a bit array is
//! zeroed when allocated, so an allocation the kernel over-commits would otherwise end with
//! the OOM killer instead of an error), nor make one filter larger than `bf.max-filter-bytes`.

use super::config;
use redis_module::{Context, ContextFlags};

/// Bytes a new bit array may take now for a filter already holding `existing_bytes` of bit
/// arrays, on a primary serving a client: the smallest of `maxmemory − used_memory` (when
/// maxmemory is set), `total_system_memory − used_memory` (when the server reports it) and
/// `bf.max-filter-bytes − existing_bytes` (when set). Unlimited (`u64::MAX`) for replicated
/// commands and while loading, so replicas and AOF replays build exactly what the primary built.
pub fn new_array_budget(ctx: &Context, existing_bytes: u64) -> u64 {
    let flags = ctx.get_flags();
    if flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING) {
        return u64::MAX;
    }
    let info = ctx.server_info("memory");
    let field = |name: &str| {
        info.field(name)
            .and_then(|v| v.to_string_lossy().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let used = field("used_memory");
    [field("maxmemory"), field("total_system_memory")]
        .into_iter()
        .filter(|&limit| limit > 0)
        .map(|limit| limit.saturating_sub(used))
        .chain([config::max_filter_bytes().saturating_sub(existing_bytes)])
        .min()
        .unwrap_or(u64::MAX)
}
