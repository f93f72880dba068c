#!/usr/bin/env python3
"""Creates the benchmark filters in one or more running servers (bench/compare.sh).

Usage: bench/filters.py LARGE_ITEMS PORT [PORT ...]

In every server:
- `f10m`: BF.RESERVE f10m 0.01 10000000 (the single-item rows);
- `small`: BF.RESERVE small 0.01 1000000 (1.3 MiB, stays in cache);
- `large`: BF.RESERVE large 0.01 LARGE_ITEMS, its bits set to half density by BF.LOADCHUNK
  (what a filter filled to capacity looks like); its item count stays 0, so BF.MADD keeps
  adding to this layer;
- `grown`: the same layer with the same bits, but marked full (item counts = capacity, loaded
  through a BF.LOADCHUNK header), then one BF.ADD, so it has a second, empty layer of twice the
  capacity: every new item is looked up in the full layer and added to the second one;
- `set1`: a set of one member (the SMISMEMBER ceiling).
The same pseudo-random bytes go to every server.
"""
import random
import socket
import struct
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            more = self.s.recv(1 << 20)
            if not more:
                raise EOFError
            self.buf += more
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 20)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self._reply()


def main():
    items = int(sys.argv[1])
    conns = [Conn(int(p)) for p in sys.argv[2:]]
    for c in conns:
        c.cmd("BF.RESERVE", "f10m", "0.01", 10_000_000)
        c.cmd("BF.RESERVE", "small", "0.01", 1_000_000)
        c.cmd("BF.RESERVE", "large", "0.01", items)
        c.cmd("SADD", "set1", "member")
    header = conns[0].cmd("BF.SCANDUMP", "large", 0)[1]
    # Header: size u64, layers u32, options u32, growth u32; per layer: bytes u64, bits u64,
    # size u64, error f64, bpe f64, hashes u32, entries u64, n2 u8.
    nbytes = struct.unpack_from("<Q", header, 20)[0]
    entries = struct.unpack_from("<Q", header, 20 + 44)[0]
    full = bytearray(header)
    struct.pack_into("<Q", full, 0, entries)
    struct.pack_into("<Q", full, 20 + 16, entries)
    for c in conns:
        assert c.cmd("BF.LOADCHUNK", "grown", 1, bytes(full)) == b"OK"
    rnd = random.Random(7)
    it, left = 1, nbytes
    while left > 0:
        n = min(left, 16 << 20)
        chunk = rnd.randbytes(n)  # each bit set with probability 1/2
        it += n
        for c in conns:
            assert c.cmd("BF.LOADCHUNK", "large", it, chunk) == b"OK"
            assert c.cmd("BF.LOADCHUNK", "grown", it, chunk) == b"OK"
        left -= n
    for c in conns:
        n = 0
        while int(c.cmd("BF.INFO", "grown", "FILTERS")[0]) < 2:  # 1/256 is a false positive
            c.cmd("BF.ADD", "grown", "first item of the second layer %d" % n)
            n += 1


main()
