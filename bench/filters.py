#!/usr/bin/env python3
"""Creates the benchmark filters in one or more running servers (bench/compare.sh).

Usage: bench/filters.py LARGE_ITEMS PORT [PORT ...]
       bench/filters.py --cf LARGE_ITEMS PORT [PORT ...]   (the cuckoo filters, below)
       bench/filters.py --cf-key KEY CAPACITY PORT [PORT ...]   (one filled cuckoo filter,
                        as `cflarge` below: bench/pressure.sh's cfbig part)

In every server:
- `f10m`: BF.RESERVE f10m 0.01 10000000 (the single-item rows);
- `small`: BF.RESERVE small 0.01 1000000 (1.3 MiB, stays in cache);
- `smalladd`, `smallins`: two more such filters, for BF.MADD and BF.INSERT of new items (they
  grow a second layer of 2.6 MiB once a million items are in);
- `large`: BF.RESERVE large 0.01 LARGE_ITEMS, its bits set to half density by BF.LOADCHUNK
  (what a filter filled to capacity looks like); its item count stays 0, so BF.MADD keeps
  adding to this layer;
- `grown`: the same layer with the same bits, but marked full (item counts = capacity, loaded
  through a BF.LOADCHUNK header), then one BF.ADD, so it has a second, empty layer of twice the
  capacity: every new item is looked up in the full layer and added to the second one;
- `set1`: a set of one member (the SMISMEMBER ceiling);
- `str1`: a short string (the GET / SET references on one existing key).
With --cf, the cuckoo filters of `CF=1 bench/compare.sh` instead (bucket size 2, RedisBloom's
default, so a filter reserved for c items has c bytes of table when c is a power of two):
- `cfsmall`, `cfdel`: CF.RESERVE … 1000000 (2^19 buckets, 1 MiB), three slots in four filled by
  CF.LOADCHUNK (fingerprints 64–255, what 750 000 items look like; `cfdel` for CF.DEL to
  empty);
- `cfadd`: CF.RESERVE cfadd 1000000, empty (CF.ADD fills it and grows it by 1 MiB sub-filters);
- `cflarge`: CF.RESERVE cflarge LARGE_ITEMS, filled the same way (2^26 buckets and 128 MiB for
  1e8: the 1e8-item filter of CF.MEXISTS) with its item count set to LARGE_ITEMS;
- `cfins`: CF.RESERVE cfins LARGE_ITEMS, empty (CF.INSERT of new items into a big table);
- `set1`, `str1` as above.
The same pseudo-random bytes go to every server.
"""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Conn  # noqa: E402


def cf_filled(conns, key, capacity, items, rnd):
    """CF.RESERVE-like `key` (bucket size 2, max iterations 20, expansion 1) with every slot
    whose random byte is under 64 left empty and the rest holding that byte as a fingerprint,
    loaded by CF.LOADCHUNK: a header, then 16 MiB chunks."""
    buckets = 1
    while buckets * 2 < capacity:
        buckets *= 2
    header = struct.pack("<QQQQHHH", items, buckets, 0, 1, 2, 20, 1)
    for c in conns:
        assert c.call("CF.LOADCHUNK", key, 1, header) == "OK"
    empty_low = bytes(0 if b < 64 else b for b in range(256))
    pos, left = 1, buckets * 2
    while left > 0:
        n = min(left, 16 << 20)
        chunk = rnd.randbytes(n).translate(empty_low)
        pos += n
        for c in conns:
            assert c.call("CF.LOADCHUNK", key, pos, chunk) == "OK"
        left -= n


def cuckoo(items, conns):
    for c in conns:
        c.call("CF.RESERVE", "cfadd", 1_000_000)
        c.call("CF.RESERVE", "cfins", items)
        c.call("SADD", "set1", "member")
        c.call("SET", "str1", "value")
    rnd = random.Random(7)
    cf_filled(conns, "cfsmall", 1_000_000, 750_000, rnd)
    cf_filled(conns, "cfdel", 1_000_000, 750_000, rnd)
    cf_filled(conns, "cflarge", items, items, rnd)


def main():
    if sys.argv[1] == "--cf-key":
        cap = int(sys.argv[3])
        cf_filled([Conn(int(p)) for p in sys.argv[4:]], sys.argv[2], cap, cap * 3 // 4,
                  random.Random(7))
        return
    if sys.argv[1] == "--cf":
        cuckoo(int(sys.argv[2]), [Conn(int(p)) for p in sys.argv[3:]])
        return
    items = int(sys.argv[1])
    conns = [Conn(int(p)) for p in sys.argv[2:]]
    for c in conns:
        c.call("BF.RESERVE", "f10m", "0.01", 10_000_000)
        c.call("BF.RESERVE", "small", "0.01", 1_000_000)
        c.call("BF.RESERVE", "large", "0.01", items)
        c.call("BF.RESERVE", "smalladd", "0.01", 1_000_000)
        c.call("BF.RESERVE", "smallins", "0.01", 1_000_000)
        c.call("SADD", "set1", "member")
        c.call("SET", "str1", "value")
    header = conns[0].call("BF.SCANDUMP", "large", 0)[1]
    # Header: size u64, layers u32, options u32, growth u32; per layer: bytes u64, bits u64,
    # size u64, error f64, bpe f64, hashes u32, entries u64, n2 u8.
    nbytes = struct.unpack_from("<Q", header, 20)[0]
    entries = struct.unpack_from("<Q", header, 20 + 44)[0]
    full = bytearray(header)
    struct.pack_into("<Q", full, 0, entries)
    struct.pack_into("<Q", full, 20 + 16, entries)
    for c in conns:
        assert c.call("BF.LOADCHUNK", "grown", 1, bytes(full)) == "OK"
    rnd = random.Random(7)
    it, left = 1, nbytes
    while left > 0:
        n = min(left, 16 << 20)
        chunk = rnd.randbytes(n)  # each bit set with probability 1/2
        it += n
        for c in conns:
            assert c.call("BF.LOADCHUNK", "large", it, chunk) == "OK"
            assert c.call("BF.LOADCHUNK", "grown", it, chunk) == "OK"
        left -= n
    for c in conns:
        n = 0
        while int(c.call("BF.INFO", "grown", "FILTERS")[0]) < 2:  # 1/256 is a false positive
            c.call("BF.ADD", "grown", "first item of the second layer %d" % n)
            n += 1


main()
