#!/usr/bin/env python3
"""Active-defrag workload: many small per-user filters, most of them deleted, then
`activedefrag yes`; prints `allocator_frag_ratio`, the server's `active_defrag_hits` and the
module's `bf_defrag_hits` every few seconds.

Needs a server built with Redis' own jemalloc (Debian's redis-server refuses `activedefrag`).

Usage: defrag.py --server REDIS_SERVER --module LABEL=SO [--module ...] [--filters 200000]
                 [--keep-every 2] [--seconds 60] [--step 10]
A label starting with `redisbloom` loads that module instead (a reference run); a label
starting with `strings` loads the given module but stores Redis strings instead of filters, one
per key with the size of that filter's bit array (140 to 1 384 bytes): what the server's own
defragmentation reaches on the same pattern, without any module allocation.
Same settings on every side: active-defrag-ignore-bytes 1mb, active-defrag-threshold-lower 5,
everything else the server's defaults.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stall import Conn, Server  # noqa: E402


def info(con, section):
    out = {}
    for line in con.call("INFO", section).decode().splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def run(server_bin, label, module, filters, keep_every, seconds, step):
    s = Server(server_bin, os.path.abspath(module),
               [("active-defrag-ignore-bytes", "1mb"), ("active-defrag-threshold-lower", "5")])
    try:
        con = Conn(s.port)
        batch = 2000
        for start in range(0, filters, batch):
            n = 0
            for i in range(start, min(filters, start + batch)):
                if label.startswith("strings"):
                    # The bit array of BF.RESERVE … 0.01 <capacity>: 11.03 bits an item (the
                    # first layer's 0.005), rounded up to 8-byte words.
                    size = (int((100 + i % 901) * 11.0297) + 63) // 64 * 8
                    con.send("SET", "user:%d" % i, b"x" * size)
                    n += 1
                    continue
                con.send("BF.RESERVE", "user:%d" % i, 0.01, 100 + i % 901)
                con.send("BF.ADD", "user:%d" % i, "first")
                n += 2
            for _ in range(n):
                con.read()
        doomed = [i for i in range(filters) if i % keep_every != 0]
        for start in range(0, len(doomed), 1000):
            con.call("DEL", *["user:%d" % i for i in doomed[start:start + 1000]])
        time.sleep(1)
        m = info(con, "memory")
        print("%-10s %d filters, %d deleted: used_memory %.1f MiB, allocator_frag_ratio %s "
              "before defrag" % (label, filters, len(doomed), int(m["used_memory"]) / 2**20,
                                 m["allocator_frag_ratio"]), flush=True)
        con.call("CONFIG", "SET", "activedefrag", "yes")
        t0 = time.time()
        while True:
            time.sleep(step)
            m, st = info(con, "memory"), info(con, "stats")
            bf = info(con, "bf") if not label.startswith(("redisbloom", "strings")) else {}
            el = time.time() - t0
            print("%-10s t=%3.0fs allocator_frag_ratio %s active_defrag_hits %s misses %s%s" % (
                label, el, m["allocator_frag_ratio"], st["active_defrag_hits"],
                st["active_defrag_misses"],
                "  bf_defrag_hits %s misses %s" % (bf.get("bf_defrag_hits"),
                                                   bf.get("bf_defrag_misses")) if bf else ""),
                  flush=True)
            if el >= seconds - 0.5:
                return float(m["allocator_frag_ratio"]), int(st["active_defrag_hits"])
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--module", action="append", required=True)
    ap.add_argument("--filters", type=int, default=200000)
    ap.add_argument("--keep-every", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--step", type=float, default=10)
    a = ap.parse_args()
    rows = []
    for m in a.module:
        label, path = m.split("=", 1)
        frag, hits = run(a.server, label, path, a.filters, a.keep_every, a.seconds, a.step)
        rows.append((label, frag, hits))
    print()
    print("%d filters, all but 1 in %d deleted, after %g s of active defrag:" % (
        a.filters, a.keep_every, a.seconds))
    for label, frag, hits in rows:
        print("  %-12s allocator_frag_ratio %.2f  active_defrag_hits %d" % (label, frag, hits))


if __name__ == "__main__":
    main()
