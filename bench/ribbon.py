#!/usr/bin/env python3
"""Ribbon filters on the server (issue #33's targets), one server, every ratio from the same run.

1. Stages n items (`%012d` of 0 … n−1, the form of redis-benchmark's `__rand_int__`) into a
   Ribbon key by pipelined `RF.MADD` batches of 1000, and the same items into a
   `BF.RESERVE … NONSCALING` Bloom filter of the same n and ε by `BF.MADD`.
2. Times `RF.BUILD` while another connection PINGs in a loop (bench/stall.py's probe: the longest
   gap between two PING replies, and `LATENCY LATEST` with `latency-monitor-threshold 1`).
3. `RF.MEXISTS` × 1000 against `BF.MEXISTS` × 1000, then `RF.EXISTS` against `BF.EXISTS` at
   pipeline 32, by redis-benchmark with `-r 2n` (about half members, half absent), the two
   families' runs interleaved round by round; the ratio RF / BF per round, by redis-benchmark's
   rate and by the server main thread's CPU time. Last, the ceiling: `RF.MEXISTS` × 1000 on a
   missing key (the same parsing and replies, no filter asked) against `BF.MEXISTS` × 1000.
   With --rb-module, RedisBloom's `BF.MEXISTS` × 1000 on its own server (the same binary, its
   Bloom filter of the same items) against `RF.MEXISTS` × 1000.

Standard library only. Usage: ribbon.py --module SO [--server redis-server] [--items N]
    [--error E] [--rounds R] [--requests Q] [--build-only] [--rb-module SO]
(Q: single-item commands per run; the ×1000 runs send Q / 100 commands; --build-only stops after
the build.)
"""

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Conn  # noqa: E402
from stall import Server, probe  # noqa: E402

BATCH = 1000


def stage(port, command, key, n):
    """Sends `command key item…` for items 0 … n−1 (see `batched`). Returns the seconds it
    took."""
    return batched(port, command, key, 0, n)[0]


def fill_bloom(port, n, eps, who):
    """`BF.RESERVE bf eps n NONSCALING` on the server at `port`, then the n items by `stage`;
    prints how long the filling took, `who` naming the module."""
    con = Conn(port)
    con.call("BF.RESERVE", "bf", eps, max(n, 1), "NONSCALING")
    con.close()
    t = stage(port, b"BF.MADD", b"bf", n)
    print("%sBF.MADD x%d filling: %.1f s, %.2f M items/s" % (who, BATCH, t, n / t / 1e6),
          flush=True)


def batched(port, command, key, start, count):
    """Sends `command key item…` for the items `%012d` of start … start + count − 1 in batches
    of BATCH, pipelined (one thread sends, this one reads); every reply must be an array of the
    batch's size of integers (an error reply breaks the count and is raised). Returns the
    seconds it took and how many of the answers were 1."""
    con = Conn(port)
    end = start + count
    batches = [(s, min(end, s + BATCH)) for s in range(start, end, BATCH)]
    head = b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(command), command, len(key), key)

    def sender():
        for s, e in batches:
            body = b"".join([b"$12\r\n%012d\r\n" % i for i in range(s, e)])
            con.sock.sendall(b"*%d\r\n" % (e - s + 2) + head + body)

    t0 = time.perf_counter()
    t = threading.Thread(target=sender)
    t.start()
    sizes = [(e - s, len(b"*%d\r\n" % (e - s)) + 4 * (e - s)) for s, e in batches]
    buf = b""
    ones = 0
    for items, size in sizes:
        while len(buf) < size:
            chunk = con.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        reply, buf = buf[:size], buf[size:]
        if not reply.startswith(b"*%d\r\n" % items):
            raise RuntimeError("%s: %r" % (command.decode(), reply[:200]))
        ones += reply.count(b":1\r\n")
    t.join()
    con.close()
    return time.perf_counter() - t0, ones


def main_thread_cpu(pid):
    """Seconds the server's main thread has run on a CPU (/proc/PID/task/PID/schedstat)."""
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[0]) / 1e9


def bench(server, requests, pipeline, n, *args):
    """(ops/s, ops per second of the server main thread's CPU time) of one redis-benchmark run
    (items drawn from 0 … 2n−1)."""
    cpu0 = main_thread_cpu(server.proc.pid)
    out = subprocess.run(["redis-benchmark", "-p", str(server.port), "-q", "--csv", "-n",
                          str(requests), "-P", str(pipeline), "-r", str(2 * n)] + list(args),
                         check=True, capture_output=True, text=True).stdout
    cpu = main_thread_cpu(server.proc.pid) - cpu0
    return float(out.strip().splitlines()[-1].split(",")[1].strip('"')), requests / cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--server", default=os.environ.get("REDIS_SERVER", "redis-server"))
    ap.add_argument("--items", type=int, default=100_000_000)
    ap.add_argument("--error", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--build-only", action="store_true",
                    help="stage and build only (no Bloom filter, no queries)")
    ap.add_argument("--rb-module", help="RedisBloom's module: also fill the same items into its "
                    "BF.RESERVE … NONSCALING filter on a second server (same binary) and run its "
                    "BF.MEXISTS x1000 against RF.MEXISTS")
    a = ap.parse_args()
    n, eps = a.items, a.error
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    s = Server(a.server, os.path.abspath(a.module))
    rb = None
    try:
        con = Conn(s.port)
        version = con.call("INFO", "server").decode().split("redis_version:")[1].split()[0]
        print("server %s %s, %d items, ε %g, load average %s at the start"
              % (a.server, version, n, eps, load0), flush=True)
        t = stage(s.port, b"RF.MADD", b"rf", n)
        assert con.call("RF.CARD", "rf") == n, "staged items were lost"
        print("RF.MADD x%d staging: %.1f s, %.2f M items/s" % (BATCH, t, n / t / 1e6), flush=True)
        if not a.build_only:
            fill_bloom(s.port, n, eps, "")
        gap, took, lat, drss, events = probe(s, [("RF.BUILD", "rf", "ERROR", eps)])
        if "ERROR" in events:
            raise RuntimeError(events)
        info = dict(zip(*[iter(con.call("RF.INFO", "rf"))] * 2))
        assert info["State"] == "built", info
        print("RF.BUILD: %.2f s, %.2f M items/s; longest PING gap %.1f ms; LATENCY LATEST max %d ms"
              " [%s]; RSS %+.0f MiB; %s bits per item"
              % (took, n / took / 1e6, gap * 1e3, lat, events, drss / (1 << 20),
                 info["Bits per item"].decode()), flush=True)
        con.close()
        if a.build_only:
            return
        args = ["__rand_int__"] * BATCH
        batches = max(a.requests // 100, 20)
        rows = [("MEXISTS x%d P=1" % BATCH, BATCH, batches, 1,
                 (s, ["RF.MEXISTS", "rf"] + args), (s, ["BF.MEXISTS", "bf"] + args)),
                ("EXISTS P=32", 1, a.requests, 32, (s, ["RF.EXISTS", "rf", "__rand_int__"]),
                 (s, ["BF.EXISTS", "bf", "__rand_int__"])),
                # The ceiling: RF.MEXISTS on a missing key parses the same arguments and
                # sends the same replies but asks no filter, so no query can beat it.
                ("no key MEXISTS x%d" % BATCH, BATCH, batches, 1,
                 (s, ["RF.MEXISTS", "nokey"] + args), (s, ["BF.MEXISTS", "bf"] + args))]
        if a.rb_module:
            rb = Server(a.server, os.path.abspath(a.rb_module))
            fill_bloom(rb.port, n, eps, "RedisBloom ")
            # "BF" in this row is RedisBloom's BF.MEXISTS on its own server.
            rows.append(("vs RedisBloom x%d" % BATCH, BATCH, batches, 1,
                         (s, ["RF.MEXISTS", "rf"] + args), (rb, ["BF.MEXISTS", "bf"] + args)))
        print("\n%-22s %5s %12s %12s %7s %14s %14s %7s" % (
            "items/s", "round", "RF", "BF", "RF/BF", "RF per CPU-s", "BF per CPU-s", "RF/BF"))
        summary = []
        for name, k, req, pipe, (rf_s, rf_cmd), (bf_s, bf_cmd) in rows:
            runs = []
            for rnd in range(a.rounds):
                rf, rf_cpu = bench(rf_s, req, pipe, n, *rf_cmd)
                bf, bf_cpu = bench(bf_s, req, pipe, n, *bf_cmd)
                runs.append((rf * k, bf * k, rf / bf, rf_cpu * k, bf_cpu * k, rf_cpu / bf_cpu))
                print("%-22s %5d %12.0f %12.0f %7.2f %14.0f %14.0f %7.2f"
                      % ((name, rnd + 1) + runs[-1]), flush=True)
            summary.append((name, list(zip(*runs))))
        with open("/proc/loadavg") as f:
            load1 = " ".join(f.read().split()[:3])
        print("\nmedians over %d rounds [min–max], load average %s at the end"
              % (a.rounds, load1))
        for name, cols in summary:
            m = ["%.3g [%.3g–%.3g]" % (statistics.median(c), min(c), max(c)) for c in cols]
            print("%s: RF %s, BF %s items/s, RF/BF %s; per CPU-second RF %s, BF %s, RF/BF %s"
                  % ((name,) + tuple(m)))
    finally:
        s.stop()
        if rb:
            rb.stop()


if __name__ == "__main__":
    main()
