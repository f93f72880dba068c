//! Memory limits for new bit arrays (DECISIONS.md D3): a new layer or filter must not push
//! `used_memory` past `maxmemory`, nor past the machine's physical memory (a bit array is
//! zeroed when allocated, so an allocation the kernel over-commits would otherwise end with
//! the OOM killer instead of an error). Replicated commands and loading are never limited, so a
//! replica or an AOF replay builds exactly what the primary built.

use redis_module::{Context, ContextFlags};

/// Bytes a new bit array may take now, on a primary serving a client: the smaller of
/// `maxmemory − used_memory` (when maxmemory is set) and `total_system_memory − used_memory`
/// (when the server reports it). Unlimited (`u64::MAX`) for replicated commands and loading.
pub fn new_array_budget(ctx: &Context) -> u64 {
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
        .min()
        .unwrap_or(u64::MAX)
}
