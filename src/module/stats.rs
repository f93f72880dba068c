//! Module-wide counters behind the `INFO bf` section (`docs/commands.md` ("Additions")): filters, layers,
//! items and bit-array bytes currently held by this server, updated on every create, load,
//! copy, growth, add and free; plus active-defrag hits and misses and the bytes the background
//! freeing thread has yet to free. Filters may be freed on Redis' lazyfree thread: the main
//! thread updates its own counters without locked instructions, other threads add theirs
//! atomically or under a lock, and readers sum both.

use crate::bloom::cuckoo::Cuckoo;
use crate::bloom::Chain;
use crate::module::alloc::{FREE_PENDING_BYTES, HEAP_ALLOCATIONS};
use crate::module::counter::{add_unlocked, on_main_thread, SplitCounter};
use redis_module::raw;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI64, Ordering};

/// Filters, layers, items and bytes as changed on the main thread (its only writer).
static MAIN_THREAD_COUNTS: [AtomicI64; 4] = [const { AtomicI64::new(0) }; 4];
static DEFRAG_HITS: SplitCounter = SplitCounter::new();
static DEFRAG_MISSES: SplitCounter = SplitCounter::new();

/// Changes of the four filter counters made off the main thread (by Redis' lazyfree thread,
/// which frees big filters and, from Redis 7.4, every filter of a FLUSHALL), added up under
/// one lock: one locked instruction to take it and one to release it, instead of four locked
/// adds per filter freed.
static OTHER_THREADS: std::sync::Mutex<[i64; 4]> = std::sync::Mutex::new([0; 4]);

/// One allocation offered to active defrag: `moved` when the server moved it (a hit).
pub fn defrag_attempt(moved: bool) {
    let counter = if moved { &DEFRAG_HITS } else { &DEFRAG_MISSES };
    counter.add(1);
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
    let deltas = [filters, f.layers, f.items, f.bytes].map(|d| d * sign);
    if on_main_thread() {
        for (counter, delta) in MAIN_THREAD_COUNTS.iter().zip(deltas) {
            if delta != 0 {
                add_unlocked(counter, delta);
            }
        }
    } else {
        let mut other = OTHER_THREADS.lock().unwrap_or_else(|e| e.into_inner());
        for (sum, delta) in other.iter_mut().zip(deltas) {
            *sum = sum.wrapping_add(delta);
        }
    }
}

/// The filter counters: filters, layers, items, bytes.
fn filter_counts() -> [i64; 4] {
    let other = *OTHER_THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut counts = [0i64; 4];
    for ((c, main), o) in counts.iter_mut().zip(&MAIN_THREAD_COUNTS).zip(other) {
        *c = main.load(Ordering::Relaxed).wrapping_add(o);
    }
    counts
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

/// Cuckoo filters, sub-filters, items and table bytes as changed on the main thread.
static CUCKOO_MAIN_THREAD: [AtomicI64; 4] = [const { AtomicI64::new(0) }; 4];
/// The same changes made off the main thread (frees on Redis' lazyfree thread).
static CUCKOO_OTHER_THREADS: std::sync::Mutex<[i64; 4]> = std::sync::Mutex::new([0; 4]);

/// What a cuckoo filter contributes to the counters: sub-filters, items, table bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CuckooFootprint([i64; 3]);

impl CuckooFootprint {
    /// The footprint of `cf` now.
    pub fn of(cf: &Cuckoo) -> CuckooFootprint {
        let clamp = |v: u64| v.min(i64::MAX as u64) as i64;
        CuckooFootprint([
            cf.filters.len() as i64,
            clamp(cf.items),
            clamp(cf.table_bytes()),
        ])
    }
}

fn apply_cuckoo(deltas: [i64; 4]) {
    if on_main_thread() {
        for (counter, delta) in CUCKOO_MAIN_THREAD.iter().zip(deltas) {
            if delta != 0 {
                add_unlocked(counter, delta);
            }
        }
    } else {
        let mut other = CUCKOO_OTHER_THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for (sum, delta) in other.iter_mut().zip(deltas) {
            *sum = sum.wrapping_add(delta);
        }
    }
}

/// A cuckoo filter came into existence (created, loaded, copied, restored).
pub fn cuckoo_created(cf: &Cuckoo) {
    let [n, i, b] = CuckooFootprint::of(cf).0;
    apply_cuckoo([1, n, i, b]);
}

/// A cuckoo filter was freed.
pub fn cuckoo_freed(cf: &Cuckoo) {
    let [n, i, b] = CuckooFootprint::of(cf).0;
    apply_cuckoo([-1, -n, -i, -b]);
}

/// A cuckoo filter changed from `before` to its current state (adds, growth, deletions,
/// compaction, `CF.LOADCHUNK`).
pub fn cuckoo_changed(before: CuckooFootprint, cf: &Cuckoo) {
    let now = CuckooFootprint::of(cf).0;
    let b = before.0;
    apply_cuckoo([0, now[0] - b[0], now[1] - b[1], now[2] - b[2]]);
}

/// The cuckoo counters: filters, sub-filters, items, bytes.
fn cuckoo_counts() -> [i64; 4] {
    let other = *CUCKOO_OTHER_THREADS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut counts = [0i64; 4];
    for ((c, main), o) in counts.iter_mut().zip(&CUCKOO_MAIN_THREAD).zip(other) {
        *c = main.load(Ordering::Relaxed).wrapping_add(o);
    }
    counts
}

/// The `INFO` callback: section `bf` with `bf_version` (the `MODULE LIST` version), then
/// `bf_filters`, `bf_layers`, `bf_items`, `bf_bytes`
/// (bit-array bytes of the filters that exist), `bf_rf_filters`, `bf_rf_items`, `bf_rf_bytes`
/// (Ribbon filter keys, staging or built: their items and `MEMORY USAGE` bytes),
/// `bf_rf_builds_running` (`RF.BUILD`s whose worker has not been installed yet), `bf_cf_filters`, `bf_cf_sub_filters`,
/// `bf_cf_items`, `bf_cf_bytes` (the same for cuckoo filters: table bytes), `bf_defrag_hits` / `bf_defrag_misses`
/// (allocations active defrag moved / left in place), `bf_free_pending_bytes` (bytes of freed
/// filters' bit arrays the module's freeing thread has yet to give back to the kernel; no
/// longer in `used_memory` unless handed over whole: `alloc::FREE_PENDING_BYTES`)
/// and `bf_heap_allocations` (allocations the module has made through Redis'
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
            crate::module::version::MODULE_VERSION.into(),
        );
        let [filters, layers, items, bytes] = filter_counts();
        let [cf_filters, cf_sub_filters, cf_items, cf_bytes] = cuckoo_counts();
        for (name, v) in [
            (c"filters", filters),
            (c"layers", layers),
            (c"items", items),
            (c"bytes", bytes),
            (c"cf_filters", cf_filters),
            (c"cf_sub_filters", cf_sub_filters),
            (c"cf_items", cf_items),
            (c"cf_bytes", cf_bytes),
            (c"rf_filters", RIBBON[0].load(Ordering::Relaxed)),
            (c"rf_items", RIBBON[1].load(Ordering::Relaxed)),
            (c"rf_bytes", RIBBON[2].load(Ordering::Relaxed)),
            (c"rf_builds_running", RIBBON_BUILDS.load(Ordering::Relaxed)),
            (c"defrag_hits", DEFRAG_HITS.get()),
            (c"defrag_misses", DEFRAG_MISSES.get()),
        ] {
            raw::RedisModule_InfoAddFieldULongLong.unwrap()(ctx, name.as_ptr(), v.max(0) as u64);
        }
        raw::RedisModule_InfoAddFieldULongLong.unwrap()(
            ctx,
            c"free_pending_bytes".as_ptr(),
            FREE_PENDING_BYTES.load(Ordering::Relaxed),
        );
        raw::RedisModule_InfoAddFieldULongLong.unwrap()(
            ctx,
            c"heap_allocations".as_ptr(),
            HEAP_ALLOCATIONS.get().max(0) as u64,
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

/// Ribbon filter keys, their items and bytes (`bf_rf_filters`, `bf_rf_items`, `bf_rf_bytes`),
/// changed from any thread (a value may be freed on Redis' lazyfree thread).
static RIBBON: [AtomicI64; 3] = [const { AtomicI64::new(0) }; 3];
/// `RF.BUILD`s running (`bf_rf_builds_running`).
static RIBBON_BUILDS: AtomicI64 = AtomicI64::new(0);

/// Adds signed deltas to the Ribbon counters: `[filters, items, bytes]`.
pub fn ribbon_add(delta: [i64; 3]) {
    for (c, d) in RIBBON.iter().zip(delta) {
        if d != 0 {
            c.fetch_add(d, Ordering::Relaxed);
        }
    }
}

/// One more (`1`) or one fewer (`-1`) `RF.BUILD` running.
pub fn ribbon_builds(delta: i64) {
    RIBBON_BUILDS.fetch_add(delta, Ordering::Relaxed);
}
