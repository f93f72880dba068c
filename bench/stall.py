#!/usr/bin/env python3
"""Stall probe for big filters: how long the server stops answering while one operation runs.

For each scenario a fresh redis-server (temp dir, 127.0.0.1, free port) loads the module and is
prepared; then one connection sends PING in a tight loop while another runs the operation. The
stall is the longest gap between two PING replies in that window; `LATENCY LATEST` (with
`latency-monitor-threshold 1`) gives the server's own view (the largest latest event, ms). The
RSS of the server (VmRSS) is read before and after the operation.

Standard library only (a minimal RESP client), so it runs from a clean clone.

Usage: stall.py --module SO [--module SO2 ...] [--server redis-server] [--rounds N]
                [--scenario NAME ...] [--gib 2]
Prints one line per (scenario, module, round) and a table of medians.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Conn, free_port  # noqa: E402 (bench/defrag.py imports Conn from here)


class Server:
    def __init__(self, binary, module, extra=()):
        self.dir = tempfile.TemporaryDirectory(prefix="redis-bf-stall")
        self.port = free_port()
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir.name,
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--logfile", os.path.join(self.dir.name, "server.log"),
                "--loadmodule", module]
        for k, v in extra:
            args += ["--" + k, v]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                c = Conn(self.port)
                if c.call("PING") == "PONG":
                    c.close()
                    break
            except (OSError, ConnectionError, RuntimeError):
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("server did not start")
                time.sleep(0.05)

    def rss(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.dir.cleanup()


def info_field(con, section, name):
    for line in con.call("INFO", section).decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


def fill(con, key, items, batch=20000, prefix="i"):
    """Adds `items` distinct items (touching the bit array's pages)."""
    for start in range(0, items, batch):
        con.call("BF.MADD", key, *["%s%d" % (prefix, i) for i in range(start, min(items, start + batch))])


GIB = 1 << 30


def capacity_for(con, nbytes, error):
    """The capacity whose BF.RESERVE (scaling filter, this error rate) is about `nbytes`."""
    con.call("BF.RESERVE", "probe", error, 1000000)
    size = int(dict(zip(*[iter(con.call("BF.INFO", "probe"))] * 2))["Size"])
    con.call("DEL", "probe")
    return int(1000000 * nbytes / size)


# Each scenario: (server config, setup(con, gib), operation(con)). The operation's reply is
# not checked beyond not being an error.
def sc_reserve(con, gib):
    cap = capacity_for(con, gib * GIB, 0.001)
    return [("BF.RESERVE", "big", 0.001, cap)]


def sc_grow(con, gib):
    # A chain at 0.01 whose first layer holds 1000 items; its second layer (error 0.0025, the
    # first layer of a scaling filter reserved at 0.005) gets 1000 × EXPANSION items.
    expansion = max(2, capacity_for(con, gib * GIB, 0.005) // 1000)
    con.call("BF.RESERVE", "g", 0.01, 1000, "EXPANSION", expansion)
    n = 0
    while True:
        info = dict(zip(*[iter(con.call("BF.INFO", "g"))] * 2))
        left = int(info["Capacity"]) - int(info["Number of items inserted"])
        if left <= 0:
            break
        con.call("BF.MADD", "g", *["g%d" % i for i in range(n, n + left)])
        n += left
    return [("BF.MADD", "g") + tuple("grow%d" % i for i in range(200))]


def touched(con, key, gib, error=0.001):
    cap = capacity_for(con, gib * GIB, error)
    con.call("BF.RESERVE", key, error, cap)
    # Enough items to touch every page of the array (~20 bits set per 4 KiB page).
    fill(con, key, max(1000, int(gib * 500000)), prefix=key)


def sc_del(con, gib):
    touched(con, "big", gib)
    return [("DEL", "big")]


def sc_unlink(con, gib):
    touched(con, "big", gib)
    return [("UNLINK", "big")]


def sc_flushall_async(con, gib):
    for k in ("f1", "f2", "f3"):
        touched(con, k, gib / 2)
    return [("FLUSHALL", "ASYNC")]


def sc_idle(con, gib):
    return [("PING",)]


MIB = 1 << 20


def chain16(con, key, gib, layers=16, layer_bytes=None):
    """A chain of 16 equal layers of gib × 29.75 MiB each (59.5 MiB at 2 GiB, below the 64 MiB
    that daa546d freed on its own thread), every page touched: a BF.LOADCHUNK header announcing
    16 copies of one reserved layer, then chunks of set bits. (`layers`, `layer_bytes`: another
    shape.)"""
    layer_bytes = layer_bytes or int(gib * 29.75 * MIB)
    cap = capacity_for(con, layer_bytes, 0.001)
    con.call("BF.RESERVE", "tmpl", 0.001, cap)
    h = con.call("BF.SCANDUMP", "tmpl", 0)[1]
    con.call("DEL", "tmpl")
    layer = h[20:73]
    nbytes = int.from_bytes(layer[:8], "little")
    header = (0).to_bytes(8, "little") + layers.to_bytes(4, "little") + h[12:20] + layer * layers
    con.call("BF.LOADCHUNK", key, 1, header)
    chunk = b"\x11" * (16 * MIB)
    for j in range(layers):
        off = 0
        while off < nbytes:
            data = chunk[:min(len(chunk), nbytes - off)]
            con.call("BF.LOADCHUNK", key, 1 + j * nbytes + off + len(data), data)
            off += len(data)


def sc_chain_del(con, gib):
    chain16(con, "big", gib)
    return [("DEL", "big")]


def sc_chain_many_del(con, gib):
    # 4096 layers (the most a header may announce) of gib / 2 MiB each (1 MiB at 2 GiB).
    chain16(con, "big", gib, layers=4096, layer_bytes=int(gib / 2 * MIB))
    return [("DEL", "big")]


def sc_chain_unlink(con, gib):
    chain16(con, "big", gib)
    return [("UNLINK", "big")]


def sc_chain_expire(con, gib):
    chain16(con, "big", gib)
    # Redis' active expiry (serverCron, 10 times a second) deletes it during the probe.
    return [("PEXPIRE", "big", 1)]


def strings_and_ttl(con, key, n=2000):
    """Gives `key` the shortest TTL and adds `n` 5 KB strings with longer ones, in db 1, so
    that every pass of the eviction pool samples the filter (alone in db 0) and picks it first
    under volatile-ttl."""
    con.call("EXPIRE", key, 100000)
    con.call("SELECT", 1)
    for start in range(0, n, 500):
        for i in range(start, min(n, start + 500)):
            con.send("SET", "s%d" % i, b"v" * 5000, "EX", 1000000)
        for i in range(start, min(n, start + 500)):
            con.read()
    con.call("SELECT", 0)


# A 3 MiB SET with maxmemory set (just before it, "OVER") 1 MiB above used_memory: the server
# goes ~2 MiB over; report: keys evicted (1 when only the filter went).
EVICT_OPS = [("OVER", MIB), ("SET", "new", b"b" * (3 * MIB))]


def sc_chain_evict(con, gib):
    chain16(con, "big", gib)
    strings_and_ttl(con, "big")
    return EVICT_OPS


def sc_evict(con, gib):
    touched(con, "big", gib / 2)
    strings_and_ttl(con, "big")
    return EVICT_OPS


def quarter_s(gib):
    return max(0.25, min(1.5, gib))


def window5(con, key, gib):
    """A window filter with 5 generations of about gib × 29.75 MiB each, pages touched: one
    quarter of quarter_s(gib) seconds per generation, filled in its own quarter."""
    gen_bytes = gib * 29.75 * MIB
    cap = capacity_for(con, gen_bytes, 0.001 / 6) * 4
    q = quarter_s(gib)
    con.call("BF.RESERVE", key, 0.001, cap, "WINDOW", int(4 * q * 1000))
    items = max(1000, int(gen_bytes / 4096 * 20))
    start = time.time()
    for g in range(5):
        fill(con, key, items, prefix="%s-%d-" % (key, g))
        wait = start + (g + 1) * q - time.time()
        if g < 4 and wait > 0:
            time.sleep(wait)
    return q


def sc_window_unlink(con, gib):
    window5(con, "w", gib)
    return [("UNLINK", "w")]


def sc_window_idle_add(con, gib):
    q = window5(con, "w", gib)
    # Idle for more than a window: the next add drops all five generations.
    time.sleep(5 * q)
    return [("BF.ADD", "w", "after-idle")]


def sc_copy_sparse(con, gib):
    cap = capacity_for(con, gib * GIB, 0.001)
    con.call("BF.RESERVE", "src", 0.001, cap)
    con.call("BF.MADD", "src", *["sparse%d" % i for i in range(100)])
    return [("COPY", "src", "dst")]


def sc_copy_dense(con, gib):
    touched(con, "src", gib)
    return [("COPY", "src", "dst")]


def sc_bgsave_after_del(con, gib):
    touched(con, "a", gib * 0.3125)
    touched(con, "b", gib * 0.3125)
    return [("DEL", "a", "b"), ("BGSAVE",)]


def sc_bgsave_later(con, gib):
    touched(con, "a", gib * 0.3125)
    touched(con, "b", gib * 0.3125)
    return [("DEL", "a", "b"), ("SLEEP", 3), ("BGSAVE",)]


def cf_capacity(gib):
    """The capacity whose CF.RESERVE (bucket size 2) has a table of gib GiB (a power of two:
    the table is next_pow2(capacity / 2) buckets of 2 bytes)."""
    nbytes, cap = gib * GIB, 4
    while cap * 2 <= nbytes:
        cap *= 2
    return cap


def sc_cf_reserve(con, gib):
    return [("CF.RESERVE", "big", cf_capacity(gib))]


def sc_cf_del(con, gib):
    # The table loaded through CF.LOADCHUNK (a header, then 16 MiB chunks of fingerprints), so
    # that every page of it is touched; then DEL.
    buckets = cf_capacity(gib) // 2
    header = b"".join((buckets.to_bytes(8, "little"), buckets.to_bytes(8, "little"),
                       (0).to_bytes(8, "little"), (1).to_bytes(8, "little"),
                       (2).to_bytes(2, "little"), (20).to_bytes(2, "little"),
                       (1).to_bytes(2, "little")))
    con.call("CF.LOADCHUNK", "big", 1, header)
    chunk = b"\x11" * (16 * MIB)
    off, nbytes = 0, buckets * 2
    while off < nbytes:
        data = chunk[:min(len(chunk), nbytes - off)]
        con.call("CF.LOADCHUNK", "big", 1 + off + len(data), data)
        off += len(data)
    return [("DEL", "big")]


def cf_two_halves(con, gib, touch_newest):
    """A cuckoo filter of two sub-filters of gib/2 GiB each (a CF.LOADCHUNK header with
    expansion 1), its newest sub-filter full of fingerprints when touch_newest (else never
    written)."""
    buckets = cf_capacity(gib) // 4
    header = b"".join(((1).to_bytes(8, "little"), buckets.to_bytes(8, "little"),
                       (0).to_bytes(8, "little"), (2).to_bytes(8, "little"),
                       (2).to_bytes(2, "little"), (20).to_bytes(2, "little"),
                       (1).to_bytes(2, "little")))
    con.call("CF.LOADCHUNK", "big", 1, header)
    if touch_newest:
        chunk = b"\x11" * (16 * MIB)
        half = buckets * 2
        off = 0
        while off < half:
            data = chunk[:min(len(chunk), half - off)]
            con.call("CF.LOADCHUNK", "big", 1 + half + off + len(data), data)
            off += len(data)


def sc_cf_compact(con, gib):
    # CF.COMPACT reads the whole newest sub-filter (here empty: it is freed).
    cf_two_halves(con, gib, False)
    return [("CF.COMPACT", "big")]


def sc_cf_compact_touched(con, gib):
    # Every fingerprint of the newest sub-filter moves into the older one.
    cf_two_halves(con, gib, True)
    return [("CF.COMPACT", "big")]


def sc_cf_compact_many(con, gib):
    # 65 535 sub-filters of one slot (a CF.LOADCHUNK header with expansion 1), each slot
    # written but every 21st, then CF.COMPACT: each fingerprint looks for an older sub-filter
    # with room (RedisBloom tries every older one in turn). Independent of --gib.
    n = 65535
    header = b"".join((n.to_bytes(8, "little"), (1).to_bytes(8, "little"),
                       (0).to_bytes(8, "little"), n.to_bytes(8, "little"),
                       (1).to_bytes(2, "little"), (20).to_bytes(2, "little"),
                       (1).to_bytes(2, "little")))
    con.call("CF.LOADCHUNK", "big", 1, header)
    sent = 0
    for i in range(n):
        if i % 21:
            con.send("CF.LOADCHUNK", "big", i + 2, bytes([i % 255 + 1]))
            sent += 1
    for _ in range(sent):
        con.read()
    return [("CF.COMPACT", "big")]


CF_DEL_PAIRS = 20


def cf_add_del_pairs():
    # CF.ADD k x + CF.DEL k x, CF_DEL_PAIRS times: each CF.DEL compacts (deletions pass 10 % of
    # the items) and cannot empty the big newest sub-filter, so each reads it again unless the
    # compaction follows the occupied slots. The worst gap is one CF.DEL; op time / pairs is
    # the time of a pair.
    return [("CF.ADD", "big", "x"), ("CF.DEL", "big", "x")] * CF_DEL_PAIRS


def sc_cf_del_compact(con, gib):
    # CF.RESERVE big 16384 BUCKETSIZE 1 EXPANSION 32768, three CF.ADD big x (x's two buckets
    # in the first sub-filter fill up, the third copy grows a 512 MiB newest sub-filter), then
    # the pairs. Independent of --gib.
    con.call("CF.RESERVE", "big", 16384, "BUCKETSIZE", 1, "EXPANSION", 32768)
    for _ in range(3):
        con.call("CF.ADD", "big", "x")
    return cf_add_del_pairs()


def sc_cf_del_compact_4g(con, gib):
    # A CF.LOADCHUNK header of 2 sub-filters, 16 384 buckets of 8 and expansion 32768 (a 128 KiB
    # first sub-filter, a 4 GiB newest), 3 items; the first sub-filter written full, one
    # fingerprint near the end of the newest (it cannot move: its buckets in the first are
    # full); then the pairs. Independent of --gib.
    first, newest = 16384 * 8, 16384 * 32768 * 8
    header = b"".join(((3).to_bytes(8, "little"), (16384).to_bytes(8, "little"),
                       (0).to_bytes(8, "little"), (2).to_bytes(8, "little"),
                       (8).to_bytes(2, "little"), (20).to_bytes(2, "little"),
                       (32768).to_bytes(2, "little")))
    con.call("CF.LOADCHUNK", "big", 1, header)
    con.call("CF.LOADCHUNK", "big", 1 + first, b"\x11" * first)
    con.call("CF.LOADCHUNK", "big", 1 + first + newest - 5 * 4096 + 1, b"\x22")
    return cf_add_del_pairs()


def sc_cf_full_insert(con, gib):
    # The longest eviction walks the options allow: a full non-scaling filter of 2 buckets of
    # 255 with MAXITERATIONS 65535; each of 200 items walks 65 535 evictions, finds no room and
    # undoes them (answers -1). Independent of --gib.
    con.call("CF.RESERVE", "big", 510, "BUCKETSIZE", 255, "MAXITERATIONS", 65535, "EXPANSION", 0)
    i = 0
    while con.call("CF.INSERT", "big", "ITEMS", *["f%d" % (i + j) for j in range(50)]).count(1) == 50:
        i += 50
    return [("CF.INSERT", "big", "ITEMS", *["q%d" % j for j in range(200)])]


def rf_stage(con, key, items, batch=1000):
    """Stages `items` distinct items into a Ribbon key by RF.MADD batches of `batch`."""
    for start in range(0, items, batch):
        con.call("RF.MADD", key, *["r%d" % i for i in range(start, min(items, start + batch))])


def sc_rf_build(con, gib):
    # RF.BUILD of 1e7 items staged by RF.MADD batches of 1000 (independent of --gib): the build
    # runs on a worker thread, the main thread only blocks the client and installs the result.
    rf_stage(con, "big", 10_000_000)
    return [("RF.BUILD", "big")]


def sc_rf_staging_del(con, gib):
    # DEL of 1e7 staged items (a B-tree of about 160 MB; independent of --gib): the value goes
    # to the module's dropping thread, the main thread only hands it over.
    rf_stage(con, "big", 10_000_000)
    return [("DEL", "big")]


def sc_rf_built_del(con, gib):
    # DEL of a Ribbon filter built from 1e7 items (about 9 MB at 1 %; independent of --gib).
    rf_stage(con, "big", 10_000_000)
    con.call("RF.BUILD", "big")
    return [("DEL", "big")]


def report_fork(con):
    return "latest_fork_usec=%s" % info_field(con, "stats", "latest_fork_usec")


def report_evicted(con):
    return "evicted_keys=%s" % info_field(con, "stats", "evicted_keys")


SCENARIOS = {
    "idle": ([], sc_idle, "(noise floor: a PING instead of an operation)"),
    "reserve": ([], sc_reserve, "BF.RESERVE of {g} GiB"),
    "grow": ([], sc_grow, "BF.MADD growing a chain into a {g} GiB layer"),
    "del": ([], sc_del, "DEL of a {g} GiB filter (pages touched)"),
    "del-lazy": ([("lazyfree-lazy-user-del", "yes")], sc_del,
                 "DEL, lazyfree-lazy-user-del yes, {g} GiB"),
    "unlink": ([], sc_unlink, "UNLINK of a {g} GiB filter (pages touched)"),
    "unlink-lazy": ([("lazyfree-lazy-user-del", "yes")], sc_unlink,
                    "UNLINK, lazyfree-lazy-user-del yes, {g} GiB"),
    "flushall-async": ([], sc_flushall_async, "FLUSHALL ASYNC, three {h} GiB filters"),
    "chain-del": ([], sc_chain_del, "DEL, chain of 16 touched layers ({c} MiB each)"),
    "chain-many-del": ([], sc_chain_many_del, "DEL, chain of 4096 touched layers ({m} MiB each)"),
    "chain-unlink": ([], sc_chain_unlink, "UNLINK, chain of 16 × {c} MiB"),
    "chain-expire": ([], sc_chain_expire, "expiry, chain of 16 × {c} MiB"),
    "chain-evict": ([("maxmemory-policy", "volatile-ttl")], sc_chain_evict,
                    "eviction, chain of 16 × {c} MiB", report_evicted),
    "chain-evict-lazy": ([("maxmemory-policy", "volatile-ttl"), ("lazyfree-lazy-eviction", "yes")],
                         sc_chain_evict, "eviction (lazy), chain of 16 × {c} MiB", report_evicted),
    "evict": ([("maxmemory-policy", "volatile-ttl")], sc_evict,
              "eviction, a {h} GiB filter, 2000 strings", report_evicted),
    "evict-lazy": ([("maxmemory-policy", "volatile-ttl"), ("lazyfree-lazy-eviction", "yes")],
                   sc_evict, "eviction (lazy), {h} GiB, 2000 strings", report_evicted),
    "window-unlink": ([], sc_window_unlink, "UNLINK, window of 5 × {c} MiB"),
    "window-idle-add": ([], sc_window_idle_add, "BF.ADD dropping 5 × {c} MiB generations"),
    "copy-sparse": ([], sc_copy_sparse, "COPY, {g} GiB holding 100 items"),
    "copy-dense": ([], sc_copy_dense, "COPY, {g} GiB, pages touched"),
    "bgsave-after-del": ([], sc_bgsave_after_del, "BGSAVE right after DEL of 2 × {f} MiB",
                         report_fork),
    "bgsave-later": ([], sc_bgsave_later, "BGSAVE 3 s after DEL of 2 × {f} MiB", report_fork),
    "cf-reserve": ([], sc_cf_reserve, "CF.RESERVE of a {k} GiB cuckoo filter"),
    "cf-del": ([], sc_cf_del, "DEL of a {k} GiB cuckoo filter (pages touched)"),
    "cf-compact": ([], sc_cf_compact, "CF.COMPACT, 2 sub-filters of {h} GiB, the newest empty"),
    "cf-compact-touched": ([], sc_cf_compact_touched,
                           "CF.COMPACT, 2 sub-filters of {h} GiB, the newest full"),
    "cf-compact-many": ([], sc_cf_compact_many,
                        "CF.COMPACT, 65 535 one-slot sub-filters, 1 in 21 empty"),
    "cf-del-compact": ([], sc_cf_del_compact,
                       "%d x (CF.ADD + CF.DEL), each compacting a 512 MiB sub-filter of one item"
                       % CF_DEL_PAIRS),
    "cf-del-compact-4g": ([], sc_cf_del_compact_4g,
                          "%d x (CF.ADD + CF.DEL), a 4 GiB LOADCHUNK newest sub-filter of 2 items"
                          % CF_DEL_PAIRS),
    "rf-build": ([], sc_rf_build, "RF.BUILD of 1e7 items staged by RF.MADD x 1000"),
    "rf-staging-del": ([], sc_rf_staging_del, "DEL of a Ribbon key staging 1e7 items"),
    "rf-built-del": ([], sc_rf_built_del, "DEL of a Ribbon filter built from 1e7 items"),
    "cf-full-insert": ([], sc_cf_full_insert,
                       "CF.INSERT of 200 items into a full 2 x 255 filter, MAXITERATIONS 65535"),
}


def probe(server, ops, report=None, settle=0.5):
    """Runs `ops` on one connection while another PINGs (("SLEEP", s) pauses; ("OVER", n) sets
    maxmemory n bytes above used_memory; neither counted in the op time); returns (max gap s, op time s, LATENCY LATEST max ms, RSS growth bytes,
    events, and what `report(admin connection)` says after the settle time)."""
    admin = Conn(server.port)
    admin.call("CONFIG", "SET", "latency-monitor-threshold", "1")
    admin.call("LATENCY", "RESET")
    stop = threading.Event()
    gaps = []

    def pinger():
        c = Conn(server.port)
        last = time.perf_counter()
        worst = 0.0
        while not stop.is_set():
            c.send("PING")
            c.read()
            now = time.perf_counter()
            worst = max(worst, now - last)
            last = now
        gaps.append(worst)
        c.close()

    t = threading.Thread(target=pinger)
    t.start()
    time.sleep(0.3)
    rss0 = server.rss()
    op = Conn(server.port)
    errors = []
    t0 = time.perf_counter()
    for cmd in ops:
        if cmd[0] == "SLEEP":
            time.sleep(cmd[1])
            t0 += cmd[1]
        elif cmd[0] == "OVER":
            t_set = time.perf_counter()
            op.call("CONFIG", "SET", "maxmemory",
                    int(info_field(op, "memory", "used_memory")) + cmd[1])
            t0 += time.perf_counter() - t_set
        else:
            try:
                op.call(*cmd)
            except RuntimeError as e:
                errors.append("%s: %s" % (cmd[0], e))
    elapsed = time.perf_counter() - t0
    rss1 = server.rss()
    time.sleep(settle)
    stop.set()
    t.join()
    latest = admin.call("LATENCY", "LATEST") or []
    lat = max([int(e[2]) for e in latest], default=0)
    events = ",".join("%s=%d" % (e[0].decode(), int(e[2])) for e in latest)
    if report:
        events += (" " if events else "") + report(admin)
    for e in errors:
        events += " ERROR " + e
    op.close()
    admin.close()
    return gaps[0], elapsed, lat, rss1 - rss0, events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", action="append", required=True,
                    help="LABEL=PATH of a module build (repeat to compare, interleaved)")
    ap.add_argument("--server", default=os.environ.get("REDIS_SERVER", "redis-server"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    a = ap.parse_args()
    modules = [m.split("=", 1) if "=" in m else (os.path.basename(m), m) for m in a.module]
    modules = [(label, os.path.abspath(path)) for label, path in modules]
    names = a.scenario or list(SCENARIOS)
    results = {}
    for rnd in range(a.rounds):
        for name in names:
            extra, setup = SCENARIOS[name][:2]
            report = SCENARIOS[name][3] if len(SCENARIOS[name]) > 3 else None
            for label, path in modules:
                s = Server(a.server, path, extra)
                try:
                    con = Conn(s.port)
                    ops = setup(con, a.gib)
                    con.close()
                    gap, elapsed, lat, drss, events = probe(s, ops, report)
                finally:
                    s.stop()
                m = re.search(r"(?:latest_fork_usec|evicted_keys)=(\d+)", events)
                extra_v = float(m.group(1)) if m else 0.0
                results.setdefault((name, label), []).append((gap, elapsed, lat, drss, extra_v))
                print("round %d %-18s %-8s stall %8.1f ms  op %8.1f ms  LATENCY LATEST %5d ms"
                      "  RSS %+8.1f MiB  [%s]" % (rnd + 1, name, label, gap * 1e3, elapsed * 1e3,
                                                  lat, drss / (1 << 20), events), flush=True)
    print()
    print("medians over %d rounds, server %s, %g GiB" % (a.rounds, a.server, a.gib))
    print("%-48s %-8s %12s %10s %10s %12s  %s" % ("scenario", "module", "stall (ms)", "op (ms)",
                                                  "LATENCY", "RSS (MiB)", "report"))
    for name in names:
        desc = SCENARIOS[name][2].format(g=a.gib, h=a.gib / 2, c="%.1f" % (a.gib * 29.75), m="%g" % (a.gib / 2),
                                         f="%.0f" % (a.gib * 0.3125 * 1024),
                                         k="%g" % (cf_capacity(a.gib) / GIB))
        for label, _ in modules:
            r = results[(name, label)]
            med = [statistics.median(x) for x in zip(*r)]
            rep = ""
            if len(SCENARIOS[name]) > 3:
                rep = "%s %d" % (SCENARIOS[name][3].__name__[len("report_"):], med[4])
            print("%-48s %-8s %12.1f %10.1f %10d %+12.1f  %s" % (
                desc, label, med[0] * 1e3, med[1] * 1e3, med[2], med[3] / (1 << 20), rep))


if __name__ == "__main__":
    main()
