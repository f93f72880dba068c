//! Limits for new bit arrays, and what replicated writes do when memory truly runs out
//! (`docs/commands.md` ("Memory limits")).
//!
//! A new filter or layer is a write like any other. Under an eviction policy Redis evicts
//! keys before a write runs (and again after it), so only what can never fit is refused: an
//! array larger than `maxmemory` itself (less the filter's existing arrays), larger than 15/16
//! of the memory the machine has available (a guard so that an over-committed allocation never
//! ends with the OOM killer), or making one filter larger than `bf.max-filter-bytes`. Under
//! `noeviction` an array that would push the memory Redis' eviction counts (`used_memory −
//! mem_not_counted_for_evict`: replica output and AOF buffers are not counted) past `maxmemory`
//! is refused too.
//!
//! Looking at the memory numbers costs an `INFO memory` and a read of `/proc/meminfo`, far more
//! than creating a small filter, so arrays below [`SMALL_ARRAY_BYTES`] skip it: they are
//! admitted as any small write is, by Redis' own out-of-memory check before the command runs
//! (commands are flagged `deny-oom`). The one case where a small array may still cross the
//! limit — `noeviction` with less than a quarter of `maxmemory` left, which the context flags
//! tell for free — is checked exactly.
//!
//! Replicated commands and loads (AOF, `DEBUG LOADAOF`) are never limited: a replica or a replay
//! must build what the primary built. When even that cannot be allocated, [`abort_diverging`]
//! stops the server as Redis stops on its own out-of-memory, instead of acknowledging a write
//! it did not apply.

use super::config;
use redis_module::{raw, Context, ContextFlags};
use std::ffi::CStr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Arrays strictly smaller than this many bytes are admitted without reading the memory
/// numbers (see the module doc): 64 KiB, small against any usable `maxmemory` and against a
/// quarter of it, so skipping the check never lets a `noeviction` server cross its limit.
pub const SMALL_ARRAY_BYTES: u64 = 64 * 1024;

/// True for writes that must be applied whatever the memory limits: commands from the
/// primary and commands replayed while loading.
fn must_apply(flags: &ContextFlags) -> bool {
    flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// The cheap budget: `Ok(bytes)` when it is final (unlimited for replicated writes and loads,
/// or the exact budget when it had to be read anyway), `Err(bytes)` when it only says that
/// arrays of at most `bytes` may be allocated and a larger one needs [`new_array_budget`].
fn quick_budget(ctx: &Context, existing_bytes: u64) -> Result<u64, u64> {
    let flags = ctx.get_flags();
    if must_apply(&flags) {
        return Ok(u64::MAX);
    }
    let noeviction_near_limit = flags.contains(ContextFlags::MAXMEMORY)
        && !flags.contains(ContextFlags::EVICTED)
        && flags.intersects(ContextFlags::OOM | ContextFlags::OOM_WARNING);
    if noeviction_near_limit {
        return Ok(exact_budget(ctx, &flags, existing_bytes));
    }
    Err(config::max_filter_bytes()
        .saturating_sub(existing_bytes)
        .min(SMALL_ARRAY_BYTES - 1))
}

/// Bytes a new bit array may take now, for a filter already holding `existing_bytes` of bit
/// arrays: unlimited (`u64::MAX`) for replicated commands and loads; otherwise the smallest of
/// - `bf.max-filter-bytes − existing_bytes` (when set),
/// - 15/16 of `MemAvailable` from `/proc/meminfo` (elsewhere `total_system_memory −
///   used_memory`),
/// - 15/16 of `total_system_memory`, less `used_memory` (which counts every bit array whole,
///   touched or not: new arrays are lazily zeroed and take RAM only as bits are set),
/// - when `maxmemory` is set: `maxmemory − existing_bytes` under an eviction policy, and
///   `maxmemory − (used_memory − mem_not_counted_for_evict)` under `noeviction`;
/// - under `ulimit -v` (`RLIMIT_AS`): 15/16 of the address space left (limit − `VmSize`).
///
/// Reads `INFO memory`, `/proc/meminfo` and `/proc/self/status`: use [`budget_for`] or [`with_budget`], which skip
/// that for small arrays.
pub fn new_array_budget(ctx: &Context, existing_bytes: u64) -> u64 {
    let flags = ctx.get_flags();
    if must_apply(&flags) {
        return u64::MAX;
    }
    exact_budget(ctx, &flags, existing_bytes)
}

fn exact_budget(ctx: &Context, flags: &ContextFlags, existing_bytes: u64) -> u64 {
    let [used, not_counted, total_system_memory, maxmemory] = memory_info(
        ctx,
        &[
            c"used_memory",
            c"mem_not_counted_for_evict",
            c"total_system_memory",
            c"maxmemory",
        ],
    );
    let available = mem_available().unwrap_or(match total_system_memory {
        0 => u64::MAX,
        total => total.saturating_sub(used),
    });
    let maxmemory = if maxmemory == 0 || !flags.contains(ContextFlags::MAXMEMORY) {
        u64::MAX
    } else if flags.contains(ContextFlags::EVICTED) {
        maxmemory.saturating_sub(existing_bytes)
    } else {
        maxmemory.saturating_sub(used.saturating_sub(not_counted))
    };
    // Redis' allocator (jemalloc) hands out a size class, up to 25% more than asked for, and
    // used_memory counts the class: a limit in used_memory admits arrays up to the largest
    // class under it.
    let maxmemory = largest_size_class_at_most(maxmemory);
    // Untouched arrays take no RAM yet, so MemAvailable alone would let ever more of them in;
    // used_memory counts each one whole, and together they may not exceed the machine's memory.
    let machine = match total_system_memory {
        0 => u64::MAX,
        total => largest_size_class_at_most((total - total / 16).saturating_sub(used)),
    };
    // Under `ulimit -v`, jemalloc also needs room to map the array (an extent of its own for a
    // large one): keep 1/16 of what is left for that and for everyone else.
    // The allocator maps the array's whole size class, so that is what must fit.
    let address_space = address_space_left().map_or(u64::MAX, |left| {
        largest_size_class_at_most(left - left / 16)
    });
    maxmemory
        .min(available - available / 16)
        .min(machine)
        .min(address_space)
        .min(config::max_filter_bytes().saturating_sub(existing_bytes))
}

/// The budget to compare a new array of `needed` bytes with, for a filter holding
/// `existing_bytes`: as [`new_array_budget`], but the memory numbers are read only when the
/// array is not small (or the server is near a `noeviction` limit).
pub fn budget_for(ctx: &Context, existing_bytes: u64, needed: u64) -> u64 {
    match quick_budget(ctx, existing_bytes) {
        Ok(b) => b,
        Err(small) if needed <= small => small,
        Err(_) => new_array_budget(ctx, existing_bytes),
    }
}

/// Runs `attempt` with a budget (as [`new_array_budget`]) when the array's size is known only
/// inside `attempt`: first with the cheap budget, and once more with the exact one when the
/// cheap one was not final and `attempt` failed with an error for which `refused` is true
/// (a refusal happens before anything is allocated, so the first attempt costs little).
pub fn with_budget<T, E>(
    ctx: &Context,
    existing_bytes: u64,
    refused: impl Fn(&E) -> bool,
    mut attempt: impl FnMut(u64) -> Result<T, E>,
) -> Result<T, E> {
    match quick_budget(ctx, existing_bytes) {
        Ok(b) => attempt(b),
        Err(small) => match attempt(small) {
            Err(e) if refused(&e) => attempt(new_array_budget(ctx, existing_bytes)),
            r => r,
        },
    }
}

/// For a write that must be applied (a command from the primary, or one replayed from the
/// AOF) but could not allocate `bytes` (0: a size not known here): logs a warning naming the command and key, and aborts
/// the server, as Redis aborts when its own allocator runs out. Answering an error instead
/// would leave this server acknowledging a write it did not apply: a replica would stay "in
/// sync" with missing items and, once promoted, answer false negatives.
///
/// Returns (doing nothing) for any other write, whose caller then replies with its error.
pub fn abort_diverging(ctx: &Context, command: &str, key: &[u8], bytes: u64) {
    if !must_apply(&ctx.get_flags()) {
        return;
    }
    let what = match bytes {
        0 => "its bit arrays".to_string(),
        n => format!("{n} bytes"),
    };
    ctx.log_warning(&format!(
        "bf: out of memory: cannot allocate {what} to apply a replicated or loaded \
         {command} on key '{}'; aborting the server rather than diverging from the primary \
         (give this server as much memory as its primary)",
        String::from_utf8_lossy(key)
    ));
    std::process::abort();
}

/// The module's detached context ([`set_detached_context`]), for callbacks Redis gives none
/// (`copy`): it reads the server's global flags.
static DETACHED: AtomicPtr<raw::RedisModuleCtx> = AtomicPtr::new(std::ptr::null_mut());

/// Keeps a detached context of the module for [`abort_copy_if_must_apply`] and
/// [`detached_flags`]; called once by the module's `init`.
pub fn set_detached_context(ctx: &Context) {
    // SAFETY: the load context is live during OnLoad; a detached context lives as long as the
    // module and is only read by callbacks, which run on the main thread or on a thread holding
    // the server's lock (a command filter of another module's RedisModule_Call).
    let detached =
        unsafe { raw::RedisModule_GetDetachedThreadSafeContext.map(|get| get(ctx.get_raw())) };
    if let Some(d) = detached {
        DETACHED.store(d, Ordering::Relaxed);
    }
}

/// The server's context flags read through the module's detached context
/// ([`set_detached_context`]), for callbacks Redis gives no context (command filters): the
/// global ones, such as `LUA` (a script or function runs) and `MULTI` (an `EXEC` runs). Empty
/// before `set_detached_context`.
pub fn detached_flags() -> ContextFlags {
    let ctx = DETACHED.load(Ordering::Relaxed);
    if ctx.is_null() {
        ContextFlags::empty()
    } else {
        Context::new(ctx).get_flags()
    }
}

/// For a value that could not be built (`action` says which, for the log line: a load, or a
/// `COPY` of a `type_name` value): when it had to be applied, logs a warning and aborts the
/// server, as [`abort_diverging`] does for commands. A value has to be applied while the
/// server loads (an RDB or AOF at start-up, including a `COPY` replayed from the AOF; a
/// replica's full synchronisation) and on a read-only replica, where only its primary can send
/// a `RESTORE` (`MIGRATE`'s too) or a `COPY`, one the primary carried out: answering an error
/// there would leave the replica "in sync" without the key. A writable replica
/// (`replica-read-only no`) cannot tell its primary's `RESTORE` from a client's and answers the
/// error. Returns in every other case.
pub fn abort_if_value_must_apply(ctx: &Context, action: &str) {
    let flags = ctx.get_flags();
    let read_only_replica = flags.contains(ContextFlags::SLAVE | ContextFlags::READONLY);
    if !(flags.contains(ContextFlags::LOADING) || read_only_replica) {
        return;
    }
    ctx.log_warning(&format!(
        "bf: cannot {action}: its bytes are malformed or were refused, or its arrays could \
         not be allocated; aborting the server rather than diverging from the primary (give \
         this server as much memory as its primary, and check where the data came from)"
    ));
    std::process::abort();
}

/// [`abort_if_value_must_apply`] for a `COPY` of a `type_name` value that could not be made.
pub fn abort_copy_if_must_apply(type_name: &str) {
    let ctx = DETACHED.load(Ordering::Relaxed);
    if !ctx.is_null() {
        abort_if_value_must_apply(
            &Context::new(ctx),
            &format!("COPY a {type_name} value from a replicated or loaded COPY"),
        );
    }
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
/// Address space the process may still map under `RLIMIT_AS` (`ulimit -v`): the limit less
/// `VmSize` from `/proc/self/status`, or `None` when there is no limit (or it cannot be
/// read). Without this, a server started under `ulimit -v` would pass the budget and then
/// meet the allocator's own out-of-memory abort on Redis 7.0–7.2, which have no
/// `RedisModule_TryCalloc`.
fn address_space_left() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid, writable struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(
        limit
            .rlim_cur
            .saturating_sub(proc_kib_field("/proc/self/status", "VmSize:")?),
    )
}

fn mem_available() -> Option<u64> {
    proc_kib_field("/proc/meminfo", "MemAvailable:")
}

/// A `name  <n> kB` line of a /proc file, in bytes.
fn proc_kib_field(path: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The largest allocator size class of at most `bytes` (jemalloc's classes above 16 KiB: four
/// per doubling, the multiples of 2^(⌊log2 n⌋−2)); an array of at most that many bytes takes
/// at most `bytes` of `used_memory`. Small values and `u64::MAX` (no limit) are returned as
/// they are.
fn largest_size_class_at_most(bytes: u64) -> u64 {
    if bytes < 16 * 1024 || bytes == u64::MAX {
        return bytes;
    }
    let step = 1u64 << (63 - bytes.leading_zeros() - 2);
    bytes - bytes % step
}

#[cfg(test)]
mod tests {
    use super::largest_size_class_at_most;

    #[test]
    fn size_classes() {
        // (limit, largest class at most the limit): 1.45e9 → 1.25 GiB, so a 1.378e9-byte
        // array (class 1.5 GiB) is refused.
        for (limit, class) in [
            (1_450_000_000, 1_342_177_280),
            (1 << 30, 1 << 30),
            ((1 << 30) + (1 << 28) - 1, 1 << 30),
            (1_610_612_736, 1_610_612_736),
            (100, 100),
            (u64::MAX, u64::MAX),
        ] {
            assert_eq!(largest_size_class_at_most(limit), class, "{limit}");
        }
    }
}
