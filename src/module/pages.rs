//! Page-level work on big bit arrays (Linux): moving a freed array's resident pages out of the
//! allocator's block so that freeing the block is cheap and the kernel's tear-down happens on
//! the module's background thread, in steps; and copying only the pages of an array that
//! were ever written (`COPY`).
//!
//! Why moving is sound for any allocator: only whole pages strictly inside one live
//! allocation are moved, and `mremap(MREMAP_DONTUNMAP)` leaves that range mapped, reading as
//! zeros (fresh anonymous memory). To the allocator that owns the block this is exactly as if
//! its user had written zeros there before freeing it — which a user may always do, since an
//! allocator keeps no metadata inside a live block's user bytes (glibc's chunk header sits
//! before the block, in a page that is never moved). The range is never left unmapped, so no
//! other thread's `mmap` can land inside the block.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::time::Duration;

/// The alignment of a page-table page's span on x86-64 and aarch64 with 4 KiB pages (2 MiB):
/// a move whose source and destination are congruent modulo this moves whole page-table pages
/// (one entry per 2 MiB) instead of every page's entry (0.2 ms for 1 GiB instead of 2.8 ms:
/// `bench/move_pages.py`).
const PMD_SPAN: usize = 2 << 20;

/// Bytes given back to the kernel per system call by the background thread: a fork (BGSAVE,
/// AOF rewrite, a replica's full sync), which needs the process' memory-map lock, waits for at
/// most one such step (1–2.5 ms for 16 MiB of touched 4 KiB pages, 0.2–0.3 ms with huge
/// pages: `bench/move_pages.py`).
pub const STEP_BYTES: usize = 16 << 20;

/// The pause between two steps, so that a waiting fork takes the memory-map lock first.
const STEP_PAUSE: Duration = Duration::from_micros(50);

/// The system's page size.
pub fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf only reads a system constant.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if n > 0 {
            n as usize
        } else {
            4096
        }
    })
}

/// The whole pages strictly inside `[addr, addr + len)`: (first byte, length), a multiple of
/// `page` (a power of two); `None` when there are none.
pub fn interior(addr: usize, len: usize, page: usize) -> Option<(usize, usize)> {
    let start = addr.checked_add(page - 1)? & !(page - 1);
    let end = addr.checked_add(len)? & !(page - 1);
    (end > start).then(|| (start, end - start))
}

/// A private mapping owned by the module alone, holding pages moved out of a freed bit array:
/// `[base, base + len)`, given back to the kernel by [`release`]. One mapping (one entry of
/// the process' map count, `vm.max_map_count`) until then.
#[derive(Debug)]
pub struct Moved {
    base: usize,
    len: usize,
}

/// Moves the pages of `[addr, addr + len)` (page-aligned, inside one live allocation that the
/// caller owns and frees next without reading it) to a new mapping, leaving the range mapped
/// and reading as zeros. The new mapping is excluded from forks (`MADV_DONTFORK`), so a
/// BGSAVE right after a delete does not copy its page tables. `None` (nothing changed) when
/// the kernel refuses: before Linux 5.7, a range not within one anonymous private mapping,
/// a commit limit (`vm.overcommit_memory` 2) or the map count reached.
///
/// # Safety
/// The range must be whole pages of one live allocation owned by the caller, which must not
/// rely on its contents afterwards (they read as zeros).
pub unsafe fn move_out(addr: usize, len: usize) -> Option<Moved> {
    let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_DONTUNMAP;
    if len < PMD_SPAN {
        // SAFETY: the caller guarantees the range is whole pages of its own live allocation;
        // DONTUNMAP keeps it mapped (zero-fill), so no pointer into the block dangles. The
        // new-address argument is passed (null: the kernel chooses) even without MREMAP_FIXED:
        // with DONTUNMAP the kernel reads it, and an unset variadic argument is garbage.
        let to = unsafe {
            libc::mremap(
                addr as *mut _,
                len,
                len,
                flags,
                std::ptr::null_mut::<libc::c_void>(),
            )
        };
        if to == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: an advice on the module's own new mapping; failure only means forks copy it.
        unsafe { libc::madvise(to, len, libc::MADV_DONTFORK) };
        return Some(Moved {
            base: to as usize,
            len,
        });
    }
    // A reservation of len + 2 MiB, in which the destination starts at the source's offset
    // modulo 2 MiB; the move replaces that part of it (MREMAP_FIXED).
    let span = len.checked_add(PMD_SPAN)?;
    // SAFETY: a new inaccessible anonymous mapping at an address the kernel chooses.
    let res = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if res == libc::MAP_FAILED {
        return None;
    }
    let base = res as usize;
    let dst = base + (addr.wrapping_sub(base) & (PMD_SPAN - 1));
    // SAFETY: as above for the source; the destination lies inside the reservation just made,
    // which no one else uses (MREMAP_FIXED replaces that part of it).
    let to = unsafe {
        libc::mremap(
            addr as *mut _,
            len,
            len,
            flags | libc::MREMAP_FIXED,
            dst as *mut libc::c_void,
        )
    };
    if to == libc::MAP_FAILED {
        // SAFETY: unmapping the reservation made above, which nothing else uses.
        unsafe { libc::munmap(res, span) };
        return None;
    }
    // The reservation's inaccessible head and tail go at once (no pages: cheap), so that a
    // pending move is one mapping.
    let (head, tail) = (dst - base, base + span - (dst + len));
    // SAFETY: unmapping the unused parts of the reservation made above, which nothing else
    // uses; the moved pages between them are untouched.
    unsafe {
        if head > 0 {
            libc::munmap(res, head);
        }
        if tail > 0 {
            libc::munmap((dst + len) as *mut libc::c_void, tail);
        }
    }
    // SAFETY: an advice on the module's own new mapping; failure only means forks copy it.
    unsafe { libc::madvise(to, len, libc::MADV_DONTFORK) };
    Some(Moved { base: dst, len })
}

/// Gives a moved range back to the kernel in steps of [`STEP_BYTES`] (with a short pause
/// between steps when `pause`), calling `done(bytes)` after each step.
pub fn release(moved: Moved, pause: bool, mut done: impl FnMut(usize)) {
    let mut at = moved.base;
    let end = moved.base + moved.len;
    while at < end {
        let n = STEP_BYTES.min(end - at);
        // SAFETY: `[at, at + n)` belongs to a mapping the module alone owns (a `Moved`,
        // consumed here), unmapped once.
        unsafe { libc::munmap(at as *mut libc::c_void, n) };
        at += n;
        done(n);
        if pause && at < end {
            std::thread::sleep(STEP_PAUSE);
        }
    }
}

/// Gives the pages of `[addr, addr + len)` back to the kernel in steps (`MADV_DONTNEED`: the
/// range stays mapped and reads as zeros), calling `done(bytes)` after each step: the way a
/// bit array whose pages could not be moved is emptied by the background thread before it is
/// freed, so that the free itself is cheap and a fork never waits for the whole array.
///
/// # Safety
/// As for [`move_out`].
pub unsafe fn discard(addr: usize, len: usize, mut done: impl FnMut(usize)) {
    let mut at = addr;
    let end = addr + len;
    while at < end {
        let n = STEP_BYTES.min(end - at);
        // SAFETY: whole pages of an allocation the caller owns and no longer reads.
        unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_DONTNEED) };
        at += n;
        done(n);
        if at < end {
            std::thread::sleep(STEP_PAUSE);
        }
    }
}

/// Gives back to the kernel the whole pages of `buf` that hold only zeros (`MADV_DONTNEED`,
/// one call per run of such pages): they stay mapped and read as zeros, so `buf`'s bytes do
/// not change, but they no longer count in the process' resident memory. The way a bit array
/// loaded into a buffer written whole (an RDB value, a `RESTORE` payload) becomes as sparse as
/// the filter it was saved from, without a second array: one scan of `buf` (a fast OR of each
/// page, [`is_zero`](crate::bloom::sparse::is_zero)) plus the calls. Buffers under
/// [`SPARSE_COPY_MIN_BYTES`] are left as they are (a few pages at most to gain). The partial
/// pages at `buf`'s ends stay.
///
/// `buf` must be memory of the process' allocator (private anonymous memory, whose discarded
/// pages read as zeros), as every `Vec` is.
pub fn discard_zero_pages(buf: &mut [u8]) {
    if buf.len() < SPARSE_COPY_MIN_BYTES {
        return;
    }
    let page = page_size();
    let base = buf.as_mut_ptr();
    let Some((addr, len)) = interior(base as usize, buf.len(), page) else {
        return;
    };
    let start = addr - base as usize;
    let give_back = |from: usize, to: usize| {
        // SAFETY: whole pages of `buf`, which the caller lends exclusively (`&mut`) and which
        // hold only zeros; private anonymous pages read as zeros after MADV_DONTNEED, so the
        // slice's contents are unchanged. A refusal leaves them as they were.
        unsafe { libc::madvise(base.add(from).cast(), to - from, libc::MADV_DONTNEED) };
    };
    let mut run = None;
    for at in (start..start + len).step_by(page) {
        if crate::bloom::sparse::is_zero(&buf[at..at + page]) {
            run.get_or_insert(at);
        } else if let Some(from) = run.take() {
            give_back(from, at);
        }
    }
    if let Some(from) = run {
        give_back(from, start + len);
    }
}

/// `/proc/self/pagemap` bit 63: the page is in memory.
const PAGEMAP_PRESENT: u64 = 1 << 63;
/// `/proc/self/pagemap` bit 62: the page is swapped out (or being migrated).
const PAGEMAP_SWAPPED: u64 = 1 << 62;

/// Whether a page with this `/proc/self/pagemap` entry may hold data: present or swapped
/// out. A page that is neither was never written (an anonymous private page that was written
/// is either in memory or in swap; one being migrated shows as swapped), so it reads as zeros.
pub fn may_hold_data(entry: u64) -> bool {
    entry & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED) != 0
}

/// Pages of pagemap entries read per system call (128 KiB of entries, 64 MiB of array).
const PAGEMAP_BATCH: usize = 16 << 10;

/// Copies `src` into `dst` (same length; `dst` all zeros, typically fresh from calloc and
/// never touched), writing only the pages of `dst` that receive a non-zero byte, and reading
/// only the pages of `src` that may hold data according to `/proc/self/pagemap` (present or
/// swapped: a swapped-out page is read back, never taken for zeros). Where the pagemap cannot
/// be read, every page of `src` is read and still only pages of `dst` that receive a non-zero
/// byte are written. The work goes by pages of `dst` (whose offset within a page may differ
/// from `src`'s: jemalloc offsets large blocks by a random multiple of the cache line), each
/// fed by at most two pages of `src`. So a copy of a sparse 2 GiB array costs what its written
/// pages cost, and the copy's untouched pages stay untouched (not resident).
///
/// Swapped pages cannot be tested here (the machines this runs on have no swap, and
/// `MADV_PAGEOUT` then leaves anonymous pages in place); they are read because a written page
/// that is not present can only be in swap (or migrating, which pagemap also shows as
/// swapped), and reading it through the slice brings it back like any other access.
///
/// Arrays under [`SPARSE_COPY_MIN_BYTES`] are copied whole: reading the pagemap (an open, a
/// read and a close) costs more than copying a few pages, and a filter of 65 535 one-byte
/// sub-filters would pay it 65 535 times.
pub fn copy_written(src: &[u8], dst: &mut [u8]) {
    if src.len() < SPARSE_COPY_MIN_BYTES {
        let n = src.len().min(dst.len());
        dst[..n].copy_from_slice(&src[..n]);
        return;
    }
    copy_written_with(src, dst, File::open("/proc/self/pagemap").ok().as_ref());
}

/// Arrays from this size on are copied page by page by [`copy_written`] (1 MiB).
pub const SPARSE_COPY_MIN_BYTES: usize = 1 << 20;

/// [`copy_written`] with the pagemap given (`None`: unreadable, read every page).
fn copy_written_with(src: &[u8], dst: &mut [u8], pagemap: Option<&File>) {
    let len = src.len().min(dst.len());
    if len == 0 {
        return;
    }
    let page = page_size();
    let s0 = src.as_ptr() as usize;
    let first = s0 / page;
    let pages = (s0 + len - 1) / page - first + 1;
    // Whether each page of `src` may hold data (one byte a page: 512 KiB for 2 GiB).
    let mut maybe = vec![pagemap.is_none(); pages];
    if let Some(f) = pagemap {
        let mut raw = vec![0u8; PAGEMAP_BATCH.min(pages) * 8];
        for (i, flags) in maybe.chunks_mut(PAGEMAP_BATCH).enumerate() {
            let buf = &mut raw[..flags.len() * 8];
            let at = ((first + i * PAGEMAP_BATCH) * 8) as u64;
            if f.read_exact_at(buf, at).is_err() {
                flags.fill(true);
                continue;
            }
            for (m, e) in flags.iter_mut().zip(buf.chunks_exact(8)) {
                *m = may_hold_data(u64::from_ne_bytes(e.try_into().unwrap_or([0xff; 8])));
            }
        }
    }
    let d0 = dst.as_ptr() as usize;
    let mut lo = 0;
    while lo < len {
        // One page of dst: bytes lo..hi, fed by src's pages p1..=p2 (at most two).
        let hi = (((d0 + lo) / page + 1) * page - d0).min(len);
        let p1 = (s0 + lo) / page - first;
        let p2 = (s0 + hi - 1) / page - first;
        if maybe[p1] || maybe[p2] {
            let s = &src[lo..hi];
            if !crate::bloom::sparse::is_zero(s) {
                dst[lo..hi].copy_from_slice(s);
            }
        }
        lo = hi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interior_pages() {
        let p = 4096;
        assert_eq!(interior(4096, 8192, p), Some((4096, 8192)));
        assert_eq!(interior(4097, 8192, p), Some((8192, 4096)));
        assert_eq!(interior(4097, 8190, p), None);
        assert_eq!(interior(100, 3 * 4096, p), Some((4096, 8192)));
        assert_eq!(interior(0, 4095, p), None);
    }

    #[test]
    fn only_present_or_swapped_pages_may_hold_data() {
        for (entry, want) in [
            (0u64, false),
            (PAGEMAP_PRESENT, true),
            (PAGEMAP_SWAPPED, true),
            (PAGEMAP_PRESENT | 12345, true),
            ((1 << 61) | 777, false), // file page / PFN bits alone: not ours, never written
            (PAGEMAP_SWAPPED | (5 << 5), true),
        ] {
            assert_eq!(may_hold_data(entry), want, "{entry:#x}");
        }
    }

    /// Whether the page holding `addr` is resident, from the pagemap.
    fn resident(addr: usize) -> bool {
        let f = File::open("/proc/self/pagemap").unwrap();
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, (addr / page_size() * 8) as u64)
            .unwrap();
        u64::from_ne_bytes(b) & PAGEMAP_PRESENT != 0
    }

    /// A fresh anonymous mapping of `len` bytes (never touched), unmapped when dropped.
    struct Fresh(*mut u8, usize);

    impl Fresh {
        fn new(len: usize) -> Fresh {
            // SAFETY: a new private anonymous mapping at an address the kernel chooses.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            Fresh(p.cast(), len)
        }

        fn bytes(&mut self, from: usize, len: usize) -> &mut [u8] {
            assert!(from + len <= self.1);
            // SAFETY: inside the mapping, which lives as long as `self` and is borrowed
            // mutably through it.
            unsafe { std::slice::from_raw_parts_mut(self.0.add(from), len) }
        }
    }

    impl Drop for Fresh {
        fn drop(&mut self) {
            // SAFETY: unmapping the mapping made in `new`, once.
            unsafe { libc::munmap(self.0.cast(), self.1) };
        }
    }

    #[test]
    fn a_move_leaves_zeros_behind_and_takes_the_data_along() {
        let page = page_size();
        // Below and above the 2 MiB that decides between a plain move and a congruent one.
        for len in [64 * page, (8 << 20) + 5 * page] {
            let mut map = Fresh::new(len);
            let block = map.bytes(0, len);
            for (i, b) in block.iter_mut().enumerate() {
                *b = (i % 251) as u8 + 1;
            }
            let (addr, n) = interior(block.as_ptr() as usize + 100, len - 200, page).unwrap();
            assert_eq!((addr, n), (block.as_ptr() as usize + page, len - 2 * page));
            // SAFETY: whole pages of the test's own mapping, not read as data afterwards
            // except to check they read as zeros.
            let moved = unsafe { move_out(addr, n) }.unwrap_or_else(|| {
                panic!(
                    "mremap refused: {} (len {len})",
                    std::io::Error::last_os_error()
                )
            });
            let off = addr - block.as_ptr() as usize;
            // The block: its edges keep their bytes, its interior reads as zeros, still mapped.
            assert!(block[..off]
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8 + 1));
            assert!(block[off..off + n].iter().all(|&b| b == 0));
            assert!(block[off + n..]
                .iter()
                .enumerate()
                .all(|(i, &b)| b == ((off + n + i) % 251) as u8 + 1));
            // The moved pages hold the data, at the source's offset modulo 2 MiB when it moved
            // into a reservation.
            let dst = moved.base;
            assert_eq!(moved.len, n);
            if n >= PMD_SPAN {
                assert_eq!(dst % PMD_SPAN, addr % PMD_SPAN, "congruent modulo 2 MiB");
            }
            // SAFETY: reading the moved pages, a live mapping until `release` below.
            let data = unsafe { std::slice::from_raw_parts(dst as *const u8, n) };
            assert!(data
                .iter()
                .enumerate()
                .all(|(i, &b)| b == ((off + i) % 251) as u8 + 1));
            let mut given_back = 0;
            release(moved, true, |k| given_back += k);
            assert_eq!(given_back, n);
        }
    }

    /// `/proc/self/pagemap` bit 56: the page is mapped once (a page this process wrote, not
    /// the kernel's shared zero page that a read of an untouched page maps).
    const PAGEMAP_EXCLUSIVE: u64 = 1 << 56;

    /// Whether the page holding `addr` was written: present and this process' own.
    fn written(addr: usize) -> bool {
        let f = File::open("/proc/self/pagemap").unwrap();
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, (addr / page_size() * 8) as u64)
            .unwrap();
        let e = u64::from_ne_bytes(b);
        e & PAGEMAP_PRESENT != 0 && e & PAGEMAP_EXCLUSIVE != 0
    }

    #[test]
    fn write_sparse_into_fresh_memory_writes_only_pages_with_data() {
        use crate::bloom::sparse::write_sparse;
        let page = page_size();
        let len = 64 * page;
        // At a page boundary and off it (jemalloc's large blocks start at a multiple of the
        // cache line); data in the first and last byte, and in two bytes of one page.
        for shift in [0, 64, 1000] {
            let mut map = Fresh::new(len + 2 * page);
            let dst = map.bytes(shift, len);
            let mut src = vec![0u8; len];
            let at = [0, 9 * page + 3, 9 * page + 4, 30 * page, len - 1];
            for i in at {
                src[i] = 0xa5;
            }
            write_sparse(dst, &src);
            let base = dst.as_ptr() as usize;
            let mut want: Vec<usize> = at.iter().map(|i| (base + i) / page).collect();
            want.dedup();
            let span = (base / page)..=((base + len - 1) / page);
            let got: Vec<usize> = span.filter(|p| written(p * page)).collect();
            assert_eq!(got, want, "pages written (shift {shift})");
            assert!(*dst == src[..], "shift {shift}");
        }
    }

    #[test]
    fn discarding_zero_pages_keeps_the_bytes_and_frees_the_pages() {
        let page = page_size();
        let len = SPARSE_COPY_MIN_BYTES + 5 * page;
        for shift in [0, 64, 1000] {
            let mut map = Fresh::new(len + 2 * page);
            let buf = map.bytes(shift, len);
            // Written whole (as a read into a buffer does), data in a few places: the first
            // and last byte (partial pages, which stay), two bytes of one page, a run's end.
            buf.fill(0);
            std::hint::black_box(&mut *buf);
            let at = [
                0,
                9 * page + 3,
                9 * page + 4,
                30 * page,
                31 * page - 1,
                len - 1,
            ];
            for i in at {
                buf[i] = 0x3c;
            }
            let want_bytes = buf.to_vec();
            discard_zero_pages(buf);
            let base = buf.as_ptr() as usize;
            let (first, last) = (base / page, (base + len - 1) / page);
            // The pages holding data, and the partial pages at both ends, stay resident.
            let mut want: Vec<usize> = at.iter().map(|i| (base + i) / page).collect();
            want.extend([first, last]);
            want.sort_unstable();
            want.dedup();
            let got: Vec<usize> = (first..=last).filter(|p| written(p * page)).collect();
            assert_eq!(got, want, "pages still resident (shift {shift})");
            assert!(*buf == want_bytes[..], "shift {shift}");
        }
    }

    #[test]
    fn copy_writes_only_written_pages() {
        let page = page_size();
        let len = 8 << 20;
        // src at a page boundary plus 16 (as glibc places a mapped block); dst at the same
        // offset within a page, and at others (as jemalloc's randomised large blocks).
        for (with_pagemap, shift) in [(true, 16), (true, 80), (false, 16), (false, 1000)] {
            let mut src_map = Fresh::new(len + 2 * page);
            let mut dst_map = Fresh::new(len + 2 * page);
            let src = src_map.bytes(16, len + 3);
            // Items scattered, including the first and last byte and a page read but never
            // written (present, all zeros).
            for at in [0, 1, 5 * page + 7, len / 2, len + 2] {
                src[at] = 0x5a;
            }
            std::hint::black_box(src[3 * page + 1]);
            let dst = dst_map.bytes(shift, len + 3);
            let pagemap = File::open("/proc/self/pagemap").ok();
            copy_written_with(src, dst, if with_pagemap { pagemap.as_ref() } else { None });
            // Exactly the pages of dst that received a non-zero byte are resident (checked
            // before the comparison below, whose reads map the zero page, which counts as
            // present).
            let base = dst.as_ptr() as usize;
            let mut want: Vec<usize> = [0, 1, 5 * page + 7, len / 2, len + 2]
                .iter()
                .map(|at| (base + at) / page)
                .collect();
            want.dedup();
            let span = (base / page)..=((base + len + 2) / page);
            let got: Vec<usize> = span.filter(|p| resident(p * page)).collect();
            assert_eq!(
                got, want,
                "resident pages of the copy (pagemap {with_pagemap}, shift {shift})"
            );
            assert!(
                *src == *dst,
                "copy differs (pagemap {with_pagemap}, shift {shift})"
            );
        }
    }
}
