#!/usr/bin/env python3
"""What freeing a big touched array costs the thread that frees it, without a server.

For each size and THP setting, an anonymous mapping is touched page by page, then either
  - unmapped at once (`munmap`: what a free of a big block costs when the allocator gives it
    back to the kernel, as jemalloc and glibc do for big blocks), or
  - its interior (all but the first and last page, as for a block behind a header) moved out
    with `mremap(MREMAP_MAYMOVE | MREMAP_DONTUNMAP)`, unaligned (the kernel picks the address)
    or to a reservation congruent modulo 2 MiB (MREMAP_FIXED: whole page-table pages move, as
    `src/module/pages.rs::move_out` does), then the emptied block unmapped;
and the background side: unmapping the moved pages in 16 MiB steps (the longest step is what a
fork may wait for). THP "off" is what Redis sets for itself (prctl PR_SET_THP_DISABLE);
"on" asks for huge pages with madvise(MADV_HUGEPAGE).

Standard library only (ctypes). Usage: move_pages.py [--mib 1024 2048] [--rounds 3]
Prints medians in ms.
"""

import argparse
import ctypes
import mmap
import statistics
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                        ctypes.c_void_p]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]

PAGE = mmap.PAGESIZE
MAP_FAILED = ctypes.c_void_p(-1).value
MREMAP_MAYMOVE, MREMAP_FIXED, MREMAP_DONTUNMAP = 1, 2, 4
MADV_HUGEPAGE, MADV_NOHUGEPAGE = 14, 15
PR_SET_THP_DISABLE = 41
PMD = 2 << 20
STEP = 16 << 20


def new_map(length, prot=mmap.PROT_READ | mmap.PROT_WRITE):
    p = libc.mmap(None, length, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if p == MAP_FAILED or p is None:
        raise OSError(ctypes.get_errno(), "mmap")
    return p


def touched(length, thp):
    p = new_map(length)
    libc.madvise(p, length, MADV_HUGEPAGE if thp else MADV_NOHUGEPAGE)
    ctypes.memset(p, 1, length)
    return p


def ms(f):
    t = time.perf_counter()
    r = f()
    return (time.perf_counter() - t) * 1e3, r


def one(length, thp):
    out = {}
    p = touched(length, thp)
    out["munmap"], _ = ms(lambda: libc.munmap(p, length))

    for name, aligned in (("move, unaligned", False), ("move, 2 MiB-congruent", True)):
        p = touched(length, thp)
        src, n = p + PAGE, length - 2 * PAGE

        def move():
            if not aligned:
                return libc.mremap(src, n, n, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, None), None
            res = new_map(n + PMD, 0)  # PROT_NONE
            dst = res + ((src - res) & (PMD - 1))
            return libc.mremap(src, n, n, MREMAP_MAYMOVE | MREMAP_DONTUNMAP | MREMAP_FIXED,
                               dst), res

        t_move, (to, res) = ms(move)
        if to == MAP_FAILED or to is None:
            raise OSError(ctypes.get_errno(), "mremap")
        t_free, _ = ms(lambda: libc.munmap(p, length))
        out[name] = t_move
        out[name + " + free of the block"] = t_move + t_free
        if aligned:
            steps = []
            base, span = res, n + PMD
            for at in range(0, span, STEP):
                t, _ = ms(lambda: libc.munmap(base + at, min(STEP, span - at)))
                steps.append(t)
            out["background: longest 16 MiB step"] = max(steps)
            out["background: all steps"] = sum(steps)
        else:
            libc.munmap(to, n)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rows = {}
    # THP on first: PR_SET_THP_DISABLE cannot be undone portably within the process.
    for thp in (True, False):
        if not thp:
            libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)
        for mib in a.mib:
            for _ in range(a.rounds):
                for k, v in one(mib << 20, thp).items():
                    rows.setdefault((mib, thp, k), []).append(v)
    print("medians of %d rounds (ms)" % a.rounds)
    print("%-6s %-4s %-40s %10s" % ("MiB", "THP", "operation", "ms"))
    for (mib, thp, k), v in rows.items():
        print("%-6d %-4s %-40s %10.3f" % (mib, "on" if thp else "off", k, statistics.median(v)))


if __name__ == "__main__":
    main()
