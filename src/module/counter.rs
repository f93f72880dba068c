//! [`SplitCounter`], the counter behind the `INFO bf` figures, and which thread is the main
//! one. Used by the allocator (`alloc`, its allocation count) and by `stats` (every other
//! counter), so it depends on neither.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

thread_local! {
    /// True on the thread that loaded the module: Redis' main thread, which runs every command.
    static MAIN_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as the main thread (called once, from the module's OnLoad).
pub fn mark_main_thread() {
    MAIN_THREAD.with(|m| m.set(true));
}

/// True on the thread [`mark_main_thread`] marked.
#[inline]
pub fn on_main_thread() -> bool {
    MAIN_THREAD.with(Cell::get)
}

/// A counter that the main thread updates without a locked instruction. Counters change on
/// every filter created and freed (and every allocation), and a relaxed atomic add is a locked
/// read-modify-write. The main thread, the only writer of its half, adds with a plain load and
/// store; any other thread adds atomically to the other half. Readers get the sum.
pub struct SplitCounter {
    main: AtomicI64,
    other: AtomicI64,
}

impl Default for SplitCounter {
    fn default() -> SplitCounter {
        SplitCounter::new()
    }
}

impl SplitCounter {
    /// A counter at 0.
    pub const fn new() -> SplitCounter {
        SplitCounter {
            main: AtomicI64::new(0),
            other: AtomicI64::new(0),
        }
    }

    /// Adds `delta` (negative to subtract).
    #[inline]
    pub fn add(&self, delta: i64) {
        if on_main_thread() {
            self.add_on_main(delta);
        } else {
            self.other.fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// [`SplitCounter::add`] for a caller that knows it runs on the main thread.
    #[inline]
    fn add_on_main(&self, delta: i64) {
        add_unlocked(&self.main, delta);
    }

    /// The count.
    pub fn get(&self) -> i64 {
        self.main
            .load(Ordering::Relaxed)
            .wrapping_add(self.other.load(Ordering::Relaxed))
    }
}

/// Adds `delta` to a counter only the calling thread writes: a plain load and store.
#[inline]
pub(crate) fn add_unlocked(counter: &AtomicI64, delta: i64) {
    let v = counter.load(Ordering::Relaxed);
    counter.store(v.wrapping_add(delta), Ordering::Relaxed);
}
