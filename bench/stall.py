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
import socket
import statistics
import subprocess
import tempfile
import threading
import time


class Conn:
    """A blocking RESP2 connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(max(1 << 20, n + 2 - len(self.buf)))
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError("bad RESP: %r" % line)

    def call(self, *args):
        self.send(*args)
        r = self.read()
        if isinstance(r, RuntimeError):
            raise r
        return r

    def close(self):
        self.sock.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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
}


def probe(server, ops, settle=0.5):
    """Runs `ops` on one connection while another PINGs; returns (max gap s, op time s,
    LATENCY LATEST max ms, RSS growth bytes)."""
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
    t0 = time.perf_counter()
    for cmd in ops:
        op.call(*cmd)
    elapsed = time.perf_counter() - t0
    rss1 = server.rss()
    time.sleep(settle)
    stop.set()
    t.join()
    latest = admin.call("LATENCY", "LATEST") or []
    lat = max([int(e[2]) for e in latest], default=0)
    events = ",".join("%s=%d" % (e[0].decode(), int(e[2])) for e in latest)
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
            extra, setup, _ = SCENARIOS[name]
            for label, path in modules:
                s = Server(a.server, path, extra)
                try:
                    con = Conn(s.port)
                    ops = setup(con, a.gib)
                    con.close()
                    gap, elapsed, lat, drss, events = probe(s, ops)
                finally:
                    s.stop()
                results.setdefault((name, label), []).append((gap, elapsed, lat, drss))
                print("round %d %-15s %-8s stall %8.1f ms  op %8.1f ms  LATENCY LATEST %5d ms"
                      "  RSS %+8.1f MiB  [%s]" % (rnd + 1, name, label, gap * 1e3, elapsed * 1e3,
                                                  lat, drss / (1 << 20), events), flush=True)
    print()
    print("medians over %d rounds, server %s, %g GiB" % (a.rounds, a.server, a.gib))
    print("%-48s %-8s %12s %10s %10s %12s" % ("scenario", "module", "stall (ms)", "op (ms)",
                                              "LATENCY", "RSS (MiB)"))
    for name in names:
        desc = SCENARIOS[name][2].format(g=a.gib, h=a.gib / 2)
        for label, _ in modules:
            r = results[(name, label)]
            med = [statistics.median(x) for x in zip(*r)]
            print("%-48s %-8s %12.1f %10.1f %10d %+12.1f" % (desc, label, med[0] * 1e3,
                                                           med[1] * 1e3, med[2], med[3] / (1 << 20)))


if __name__ == "__main__":
    main()
