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

use crate::module::counter::SplitCounter;
use crate::module::pages;
use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// Bit arrays whose page-aligned interior is at least this large (1 MiB) have their pages
/// moved out before the block is freed ([`free_bit_array`]).
pub const MOVE_MIN_BYTES: usize = 1 << 20;

/// Bytes of smaller arrays one [`FreeBudget`] frees directly (64 MiB: ~2 ms of page
/// tear-down at worst); the rest go to the background thread whole.
const DIRECT_BYTES_PER_FREE: usize = 64 << 20;

/// Moves one [`FreeBudget`] makes (each a few system calls, ~10 µs); further big arrays go to
/// the background thread whole.
const MOVES_PER_FREE: usize = 512;

/// Moves whose pages the background thread has not unmapped yet, at most
/// [`MAX_PENDING_MOVES`]: each is one mapping of the process, and a burst of deletes must not
/// bring the process near `vm.max_map_count` (65 530 by default), where Redis' own allocator
/// would fail to map memory. Past it, arrays are freed as when a move is refused.
static PENDING_MOVES: AtomicUsize = AtomicUsize::new(0);

/// See [`PENDING_MOVES`].
const MAX_PENDING_MOVES: usize = 8192;

/// What one free (of a filter, or of a window filter's dropped generations) may spend on the
/// calling thread, so that freeing any shape of filter — one huge layer, thousands of small
/// ones — stays a bounded amount of work for the main thread.
///
/// It also holds the free's jobs for the background thread until it is dropped, so that the
/// thread starts unmapping only once every move of this free is done: its unmapping holds the
/// process' memory-map lock, which each move needs too.
pub struct FreeBudget {
    direct_bytes: usize,
    moves: usize,
    jobs: Vec<(Job, usize)>,
}

impl FreeBudget {
    /// A fresh budget, for one free.
    pub fn new() -> FreeBudget {
        FreeBudget {
            direct_bytes: DIRECT_BYTES_PER_FREE,
            moves: MOVES_PER_FREE,
            jobs: Vec::new(),
        }
    }

    /// Keeps a job until the free ends (hands it over at once if it cannot be kept).
    fn later(&mut self, job: Job, pending: usize) {
        FREE_PENDING_BYTES.fetch_add(pending as u64, Ordering::Relaxed);
        if self.jobs.try_reserve(1).is_ok() {
            self.jobs.push((job, pending));
        } else {
            enqueue(vec![(job, pending)]);
        }
    }
}

impl Drop for FreeBudget {
    /// Hands the free's jobs to the background thread.
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            enqueue(std::mem::take(&mut self.jobs));
        }
    }
}

impl Default for FreeBudget {
    fn default() -> Self {
        FreeBudget::new()
    }
}

/// Work for the background freeing thread.
enum Job {
    /// Pages moved out of a freed bit array ([`pages::move_out`]): unmap them, in steps.
    Unmap(pages::Moved, usize),
    /// A whole bit array (the move was refused, or past the free's budget): empty its pages
    /// in steps, then free it with Redis' allocator.
    Free(Vec<u8>),
}

/// Jobs waiting for the background freeing thread, and whether that thread runs (started on
/// first use; `false` forever if it could not be started). A mutex and a condition variable
/// rather than a channel: std's channels need 128-byte alignment, which Redis' allocator does
/// not give.
static QUEUE: Mutex<(Vec<Job>, Option<bool>)> = Mutex::new((Vec::new(), None));
static QUEUED: Condvar = Condvar::new();

/// Bytes of freed bit arrays the background thread has yet to give back to the kernel
/// (resident as far as they were touched; `INFO bf`, `bf_free_pending_bytes`). Moved pages are no longer in
/// `used_memory` (their block was freed at the delete); only arrays queued whole (the kernel
/// refused the move, or one free held more arrays than its [`FreeBudget`]) still are.
pub static FREE_PENDING_BYTES: AtomicU64 = AtomicU64::new(0);

/// Frees a bit array at a bounded cost to the calling thread (the main thread, or Redis'
/// lazyfree thread) while `used_memory` drops at once, as it does for a string of that size,
/// so eviction counts what a filter's eviction freed:
/// - an array with at least [`MOVE_MIN_BYTES`] of whole pages: those pages are moved to a
///   mapping of the module's ([`pages::move_out`], ~0.2 ms for 1 GiB), the block — now
///   without resident pages — is freed through Redis' allocator, and the background thread
///   gives the moved pages back to the kernel in steps ([`pages::release`]);
/// - a smaller array is freed directly while the budget's direct bytes last;
/// - otherwise (move refused, budget spent, 8192 moves still pending, thread not
///   started) the array goes to the
///   background thread whole, which empties it in steps and then frees it (`used_memory`
///   drops then); without the thread it is freed here.
pub fn free_bit_array(data: Vec<u8>, budget: &mut FreeBudget) {
    let cap = data.capacity();
    if cap == 0 {
        return;
    }
    let page = pages::page_size();
    let inner = pages::interior(data.as_ptr() as usize, cap, page);
    if let Some((addr, len)) = inner.filter(|&(_, len)| len >= MOVE_MIN_BYTES) {
        if budget.moves > 0 && PENDING_MOVES.load(Ordering::Relaxed) < MAX_PENDING_MOVES {
            budget.moves -= 1;
            // SAFETY: `[addr, addr + len)` is whole pages inside `data`'s live allocation,
            // which this function owns and frees next without reading it.
            if let Some(moved) = unsafe { pages::move_out(addr, len) } {
                PENDING_MOVES.fetch_add(1, Ordering::Relaxed);
                drop(data);
                budget.later(Job::Unmap(moved, len), len);
                return;
            }
        }
    }
    if cap <= budget.direct_bytes {
        budget.direct_bytes -= cap;
        drop(data);
        return;
    }
    budget.later(Job::Free(data), cap);
}

/// Hands jobs (already counted in [`FREE_PENDING_BYTES`]) to the background thread, starting
/// it on first use; does them here when the thread cannot run.
fn enqueue(mut jobs: Vec<(Job, usize)>) {
    if let Ok(mut queue) = QUEUE.lock() {
        let running = *queue.1.get_or_insert_with(|| {
            std::thread::Builder::new()
                .name("bf-free".into())
                .spawn(free_loop)
                .is_ok()
        });
        if running && queue.0.try_reserve(jobs.len()).is_ok() {
            queue.0.extend(jobs.drain(..).map(|(job, _)| job));
            QUEUED.notify_one();
        }
    }
    for (job, _) in jobs {
        run(job, false);
    }
}

/// Does one job, lowering [`FREE_PENDING_BYTES`] as it goes; `background`: in steps with
/// pauses (the freeing thread), else at once (the caller's thread, when that one cannot run).
fn run(job: Job, background: bool) {
    match job {
        Job::Unmap(moved, mut pending) => {
            pages::release(moved, background, |n| {
                let n = n.min(pending);
                pending -= n;
                FREE_PENDING_BYTES.fetch_sub(n as u64, Ordering::Relaxed);
            });
            PENDING_MOVES.fetch_sub(1, Ordering::Relaxed);
        }
        Job::Free(data) => {
            let cap = data.capacity();
            let mut left = cap;
            let inner = pages::interior(data.as_ptr() as usize, cap, pages::page_size());
            if let Some((addr, len)) = inner.filter(|_| background) {
                // SAFETY: whole pages inside `data`'s live allocation, owned here and freed
                // next without being read.
                unsafe {
                    pages::discard(addr, len, |n| {
                        let n = n.min(left);
                        left -= n;
                        FREE_PENDING_BYTES.fetch_sub(n as u64, Ordering::Relaxed);
                    })
                };
            }
            drop(data);
            FREE_PENDING_BYTES.fetch_sub(left as u64, Ordering::Relaxed);
        }
    }
}

/// The background freeing thread: does what is queued, oldest first, then waits for more.
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
        for job in batch {
            run(job, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits until the freeing thread has done everything queued so far.
    fn wait_pending_zero() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while FREE_PENDING_BYTES.load(Ordering::Relaxed) != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "pending never reached 0: {}",
                FREE_PENDING_BYTES.load(Ordering::Relaxed)
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn every_path_gives_everything_back() {
        // (budget's moves, budget's direct bytes): moved; freed directly; handed over whole.
        for (moves, direct) in [(MOVES_PER_FREE, 0), (0, 64 << 20), (0, 0)] {
            let mut budget = FreeBudget {
                direct_bytes: direct,
                moves,
                jobs: Vec::new(),
            };
            let mut data = vec![0u8; 24 << 20];
            for b in data.iter_mut().step_by(4096) {
                *b = 1;
            }
            free_bit_array(data, &mut budget);
            assert_eq!(budget.moves, moves.saturating_sub(1), "{moves}/{direct}");
            let spent_direct = direct - budget.direct_bytes;
            assert_eq!(
                spent_direct,
                if moves == 0 { direct.min(24 << 20) } else { 0 }
            );
            // Moved or handed over whole: the job waits for the end of the free.
            assert_eq!(
                budget.jobs.len(),
                usize::from(direct == 0),
                "{moves}/{direct}"
            );
            drop(budget);
            wait_pending_zero();
        }
    }
}
