//! Module-wide counters behind the `INFO bf` section (`docs/commands.md` ("Additions")): filters, layers,
//! items and bit-array bytes currently held by this server, updated on every create, load,
//! copy, growth, add and free; plus active-defrag hits and misses and the bytes the background
//! freeing thread has yet to free. All counters are atomics: filters may be freed on Redis'
//! lazyfree thread.

use crate::bloom::Chain;
use crate::module::alloc::{FREE_PENDING_BYTES, HEAP_ALLOCATIONS};
use redis_module::raw;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI64, Ordering};

static FILTERS: AtomicI64 = AtomicI64::new(0);
static LAYERS: AtomicI64 = AtomicI64::new(0);
static ITEMS: AtomicI64 = AtomicI64::new(0);
static BYTES: AtomicI64 = AtomicI64::new(0);
static DEFRAG_HITS: AtomicI64 = AtomicI64::new(0);
static DEFRAG_MISSES: AtomicI64 = AtomicI64::new(0);

/// One allocation offered to active defrag: `moved` when the server moved it (a hit).
pub fn defrag_attempt(moved: bool) {
    let counter = if moved { &DEFRAG_HITS } else { &DEFRAG_MISSES };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A snapshot of what a chain contributes to the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    layers: i64,
    items: i64,
    bytes: i64,
}

impl Footprint {
    /// The footprint of `chain` now.
    pub fn of(chain: &Chain) -> Footprint {
        Footprint {
            layers: chain.layers.len() as i64,
            items: chain.size.min(i64::MAX as u64) as i64,
            bytes: chain.bit_array_bytes().min(i64::MAX as u64) as i64,
        }
    }
}

fn apply(filters: i64, f: Footprint, sign: i64) {
    // Zero deltas are skipped: most commands change one counter or none, and every
    // `fetch_add` is a locked instruction.
    for (counter, delta) in [
        (&FILTERS, filters),
        (&LAYERS, f.layers),
        (&ITEMS, f.items),
        (&BYTES, f.bytes),
    ] {
        if delta != 0 {
            counter.fetch_add(delta * sign, Ordering::Relaxed);
        }
    }
}

/// A filter came into existence (created, loaded, copied).
pub fn filter_created(chain: &Chain) {
    apply(1, Footprint::of(chain), 1);
}

/// A filter was freed.
pub fn filter_freed(chain: &Chain) {
    apply(1, Footprint::of(chain), -1);
}

/// A filter changed from `before` to its current state.
pub fn filter_changed(before: Footprint, chain: &Chain) {
    let now = Footprint::of(chain);
    apply(
        0,
        Footprint {
            layers: now.layers - before.layers,
            items: now.items - before.items,
            bytes: now.bytes - before.bytes,
        },
        1,
    );
}

/// The `INFO` callback: section `bf` with `bf_version` (the `MODULE LIST` version), then
/// `bf_filters`, `bf_layers`, `bf_items`, `bf_bytes`
/// (bit-array bytes of the filters that exist), `bf_defrag_hits` / `bf_defrag_misses`
/// (allocations active defrag moved / left in place), `bf_free_pending_bytes` (bit-array
/// bytes of deleted filters the background thread has not freed yet; `used_memory` still
/// counts them) and `bf_heap_allocations` (allocations the module has made through Redis'
/// allocator since it loaded; this callback makes none).
///
/// # Safety
/// Called by Redis with a live info context.
pub unsafe extern "C" fn info_callback(ctx: *mut raw::RedisModuleInfoCtx, _for_crash: c_int) {
    // SAFETY: `ctx` is the live info context; the strings are NUL-terminated literals.
    unsafe {
        raw::RedisModule_InfoAddSection.unwrap()(ctx, std::ptr::null());
        raw::RedisModule_InfoAddFieldLongLong.unwrap()(
            ctx,
            c"version".as_ptr(),
            super::MODULE_VERSION.into(),
        );
        for (name, v) in [
            (c"filters", &FILTERS),
            (c"layers", &LAYERS),
            (c"items", &ITEMS),
            (c"bytes", &BYTES),
            (c"defrag_hits", &DEFRAG_HITS),
            (c"defrag_misses", &DEFRAG_MISSES),
        ] {
            raw::RedisModule_InfoAddFieldULongLong.unwrap()(
                ctx,
                name.as_ptr(),
                v.load(Ordering::Relaxed).max(0) as u64,
            );
        }
        raw::RedisModule_InfoAddFieldULongLong.unwrap()(
            ctx,
            c"free_pending_bytes".as_ptr(),
            FREE_PENDING_BYTES.load(Ordering::Relaxed),
        );
        raw::RedisModule_InfoAddFieldULongLong.unwrap()(
            ctx,
            c"heap_allocations".as_ptr(),
            HEAP_ALLOCATIONS.load(Ordering::Relaxed),
        );
    }
}

/// Adds signed deltas to the counters directly, for values that are not one chain (window
/// filters: all their generations' layers, items and bytes together).
pub fn add_raw(filters: i64, layers: i64, items: i64, bytes: i64) {
    apply(
        filters,
        Footprint {
            layers,
            items,
            bytes,
        },
        1,
    );
}
