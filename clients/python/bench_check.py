"""Checks per second of redis_bf_check's contains() for 16-byte items on a 1e6-item filter
(BF.RESERVE bench 0.01 1000000 and 1 000 000 items on a real server, downloaded with
BF.SCANDUMP); half members, half strangers. Median of 5 rounds, per wall-clock second and per
CPU second of this process.   clients/python/check_run.sh --bench"""

import os
import time

from redis_bf_check import BloomFilter
from test_check_identity import Server, scandump

N = 1_000_000
server = Server()
try:
    r = server.r
    r.execute_command("BF.RESERVE", "bench", "0.01", N)
    item = lambda i: "user:%011d" % i  # noqa: E731 (16 bytes)
    for i in range(0, N, 10_000):
        r.bf().madd("bench", *[item(j) for j in range(i, i + 10_000)])
    chunks = scandump(r, "bench")
    t = time.perf_counter()
    f = BloomFilter.from_scandump(chunks)
    load_ms = (time.perf_counter() - t) * 1000
    probes = [item(i) if i % 2 else "nope:%011d" % i for i in range(200_000)]
    wall, cpu = [], []
    for _ in range(5):
        t, c = time.perf_counter(), time.process_time()
        hits = sum(1 for p in probes if f.contains(p))
        cpu.append(len(probes) / (time.process_time() - c))
        wall.append(len(probes) / (time.perf_counter() - t))
    wall.sort()
    cpu.sort()
    print("filter: %d layer(s), %d bytes; from_scandump %.1f ms; hits %d of %d"
          % (f.layer_count, f.byte_length, load_ms, hits, len(probes)))
    print("contains(): median %.0f checks/s (wall), %.0f checks/s per CPU second; load average %s"
          % (wall[2], cpu[2], " ".join("%.1f" % x for x in os.getloadavg())))
finally:
    server.stop()
