//! Global allocator: Redis' allocator inside redis-server (so filters count in `used_memory`
//! and `maxmemory`), the system allocator anywhere else (unit tests, benches, tools that
//! use the core as a library).
//!
//! Allocation uses `RedisModule_TryAlloc` (Redis ≥ 7.0), which returns null on failure
//! instead of aborting the server; `Vec::try_reserve_exact` in the core therefore reports a
//! too-large bit array as an error (`docs/commands.md` ("Memory limits")).

use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout, System};

/// Redis' allocator once the module API is initialised, the system allocator otherwise.
///
/// The switch is safe because the API pointers are set once, in `RedisModule_OnLoad`,
/// before this module allocates anything, and never unset; a process that never loads the
/// module (tests, benches) always uses the system allocator.
pub struct BfAlloc;

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
                let size = (layout.size() + layout.align() - 1) & !(layout.align() - 1);
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
