//! Global allocator: Redis' allocator inside redis-server (so filters count in `used_memory`
//! and `maxmemory`), the system allocator anywhere else (unit tests, benches, tools that
//! use the core as a library).
//!
//! Allocation uses `RedisModule_TryAlloc` (Redis ≥ 7.0), which returns null on failure
//! instead of aborting the server; `Vec::try_reserve_exact` in the core therefore reports a
//! too-large bit array as an error (`docs/commands.md` ("Memory limits")).
//!
//! Zeroed allocations (every new bit array) use `RedisModule_TryCalloc` (Redis ≥ 7.4, Valkey)
//! or, where it does not exist, `RedisModule_Calloc` (Redis 7.0–7.2, which aborts on failure:
//! every bit array is checked against the memory budget first). Calloc hands out fresh pages
//! that the kernel zeroes on first touch, so creating a 2 GiB filter takes microseconds and
//! the server's resident memory grows only as bits are set, while `used_memory` counts the
//! whole array at once (so `maxmemory` still applies to it). Reallocation uses
//! `RedisModule_TryRealloc` where it exists, else allocate–copy–free with `TryAlloc`.

use crate::module::stats::SplitCounter;
use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Redis' allocator once the module API is initialised, the system allocator otherwise.
///
/// The switch is safe because the API pointers are set once, in `RedisModule_OnLoad`,
/// before this module allocates anything, and never unset; a process that never loads the
/// module (tests, benches) always uses the system allocator.
pub struct BfAlloc;

/// Allocations (plain, zeroed and reallocations) made through Redis' allocator since the
/// module loaded: `INFO bf` `bf_heap_allocations`, so that a test can see that a command
/// (BF.ADD or BF.EXISTS on an existing filter) allocates nothing. One add per allocation,
/// unlocked on the main thread ([`SplitCounter`]).
pub static HEAP_ALLOCATIONS: SplitCounter = SplitCounter::new();

/// Redis' allocator returns memory aligned for any fundamental type (16 bytes on x86-64 and
/// aarch64); larger alignments are refused.
const MAX_ALIGN: usize = 16;

// SAFETY: every pointer is freed by the allocator that produced it (see the type's doc),
// allocations are at least `layout.size()` bytes and aligned to `layout.align()` (sizes are
// rounded up to a multiple of the alignment, which jemalloc's size classes then honour).
unsafe impl GlobalAlloc for BfAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: reading the API pointers set once by RedisModule_Init.
        let (try_alloc, alloc) = unsafe { (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) };
        match (try_alloc, alloc) {
            (None, None) => {
                // SAFETY: forwarding the caller's valid layout to the system allocator.
                unsafe { System.alloc(layout) }
            }
            _ if layout.align() > MAX_ALIGN => std::ptr::null_mut(),
            (t, a) => {
                HEAP_ALLOCATIONS.add(1);
                let size = rounded_size(layout);
                // SAFETY: calling Redis' allocator with a non-zero size.
                unsafe {
                    match t {
                        Some(f) => f(size).cast(),
                        None => a.map_or(std::ptr::null_mut(), |f| f(size).cast()),
                    }
                }
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: reading the API pointers set once by RedisModule_Init.
        let (try_calloc, calloc, alloc) = unsafe {
            (
                raw::RedisModule_TryCalloc,
                raw::RedisModule_Calloc,
                raw::RedisModule_Alloc,
            )
        };
        if alloc.is_none() {
            // SAFETY: forwarding the caller's valid layout to the system allocator.
            return unsafe { System.alloc_zeroed(layout) };
        }
        if layout.align() > MAX_ALIGN {
            return std::ptr::null_mut();
        }
        HEAP_ALLOCATIONS.add(1);
        let size = rounded_size(layout);
        // SAFETY: calling Redis' allocator with a non-zero size; both return zeroed memory.
        unsafe {
            match (try_calloc, calloc) {
                (Some(f), _) => f(1, size).cast(),
                (None, Some(f)) => f(1, size).cast(),
                // No calloc in the API (never the case on Redis ≥ 7.0): allocate and zero.
                (None, None) => {
                    let p = self.alloc(layout);
                    if !p.is_null() {
                        std::ptr::write_bytes(p, 0, layout.size());
                    }
                    p
                }
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: reading the API pointers set once by RedisModule_Init.
        let (try_realloc, alloc) = unsafe { (raw::RedisModule_TryRealloc, raw::RedisModule_Alloc) };
        match (try_realloc, alloc) {
            (_, None) => {
                // SAFETY: forwarding the caller's valid arguments to the system allocator,
                // which produced `ptr` (see the type's doc).
                unsafe { System.realloc(ptr, layout, new_size) }
            }
            (Some(f), Some(_)) if layout.align() <= MAX_ALIGN => {
                HEAP_ALLOCATIONS.add(1);
                // SAFETY: the caller guarantees `new_size` rounded to the alignment does not
                // overflow isize; `ptr` came from Redis' allocator (same branch as `alloc`).
                let new_layout =
                    unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: `ptr` is a live allocation of Redis' allocator; TryRealloc keeps it
                // valid and untouched when it returns null.
                unsafe { f(ptr.cast(), rounded_size(new_layout)).cast() }
            }
            _ => {
                // SAFETY: the default allocate–copy–free through `alloc` / `dealloc` above,
                // with the caller's guarantees forwarded unchanged.
                unsafe {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, which used the same branch (see the type's doc).
        unsafe {
            let (free, alloc) = (raw::RedisModule_Free, raw::RedisModule_Alloc);
            match free {
                Some(free) if alloc.is_some() => free(ptr.cast()),
                _ => System.dealloc(ptr, layout),
            }
        }
    }
}

/// `layout.size()` rounded up to a multiple of its alignment (jemalloc's size classes then
/// honour alignments up to [`MAX_ALIGN`]).
fn rounded_size(layout: Layout) -> usize {
    (layout.size() + layout.align() - 1) & !(layout.align() - 1)
}

/// Bit arrays at least this large (64 MiB) are freed by the module's background thread rather
/// than by the thread that drops the filter: giving 1 GiB of touched pages back to the kernel
/// takes ~80 ms, which a plain `DEL` would otherwise spend on Redis' main thread. Smaller ones
/// (≤ ~5 ms to free) are freed at once, so that `used_memory` drops as soon as `DEL` returns.
pub const BACKGROUND_FREE_BYTES: usize = 64 << 20;

/// Arrays waiting for the background freeing thread, and whether that thread runs (started on
/// first use; `false` forever if it could not be started). A mutex and a condition variable
/// rather than a channel: std's channels need 128-byte alignment, which Redis' allocator does
/// not give.
static QUEUE: Mutex<(Vec<Vec<u8>>, Option<bool>)> = Mutex::new((Vec::new(), None));
static QUEUED: Condvar = Condvar::new();

/// Bytes queued for the background thread and not freed yet (`INFO bf`, `bf_free_pending_bytes`).
pub static FREE_PENDING_BYTES: AtomicU64 = AtomicU64::new(0);

/// Frees `data` now if it is small, else hands it to the module's background thread, which
/// frees it with Redis' allocator (thread-safe; `used_memory` drops when it is done). If the
/// thread cannot be started the array is freed here.
pub fn free_bit_array(data: Vec<u8>) {
    if data.capacity() < BACKGROUND_FREE_BYTES {
        drop(data);
        return;
    }
    let Ok(mut queue) = QUEUE.lock() else {
        drop(data);
        return;
    };
    let running = *queue.1.get_or_insert_with(|| {
        std::thread::Builder::new()
            .name("bf-free".into())
            .spawn(free_loop)
            .is_ok()
    });
    if !running || queue.0.try_reserve(1).is_err() {
        drop(queue);
        drop(data);
        return;
    }
    FREE_PENDING_BYTES.fetch_add(data.capacity() as u64, Ordering::Relaxed);
    queue.0.push(data);
    QUEUED.notify_one();
}

/// The background freeing thread: frees what is queued, oldest first, then waits for more.
fn free_loop() {
    loop {
        let batch = {
            let Ok(mut queue) = QUEUE.lock() else { return };
            while queue.0.is_empty() {
                queue = match QUEUED.wait(queue) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
            std::mem::take(&mut queue.0)
        };
        for data in batch {
            let len = data.capacity() as u64;
            drop(data);
            FREE_PENDING_BYTES.fetch_sub(len, Ordering::Relaxed);
        }
    }
}
