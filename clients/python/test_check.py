"""Tests of the pure-Python checker (redis_bf_check) against recorded data: golden vectors,
every RedisBloom fixture key's SCANDUMP walk, items and probe answers, and hostile input.
Needs no server.   python3 -m unittest test_check   (from clients/python)"""

import json
import os
import random
import struct
import unittest

from redis_bf_check import BloomFilter, ScandumpError, hash_pair

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(ROOT, "tests", "data", "golden-vectors.json")) as f:
    GOLDEN = json.load(f)
FX = os.path.join(ROOT, "tests", "fixtures", "redisbloom", "keys")


def golden_chunks(gv):
    out = []
    for c in gv["scandump"]:
        if c["hex"] is not None:
            data = bytes.fromhex(c["hex"])
        else:
            b = bytearray(c["len"])
            for off, v in c["nonzero_bytes"].items():
                b[int(off)] = int(v, 16)
            data = bytes(b)
        out.append((c["reply_iter"], data))
    return out


class Golden(unittest.TestCase):
    def test_hash_pairs(self):
        n = 0
        for name, gv in GOLDEN.items():
            if name.startswith("_"):
                continue
            for item, pair in gv["hash64"].items():
                self.assertEqual(["%016x" % x for x in hash_pair(item)], pair, name)
                n += 1
        self.assertEqual(n, 8)
        self.assertEqual(hash_pair("hello", True), (0x7F1DDBBD, 0xED999D2D))
        self.assertEqual(hash_pair("", True), (0x106E08D9, 0x456D9087))

    def test_golden_walks(self):
        items = {"gv1": ["hello"], "gv2": list("abcdefghijkl"), "gv3": ["foo", "bar", "baz"], "gv4": [""]}
        for name, members in items.items():
            f = BloomFilter.from_scandump(golden_chunks(GOLDEN[name]))
            self.assertEqual(f.layer_count, len(GOLDEN[name]["links"]))
            self.assertEqual(f.size, len(members))
            for m in members:
                self.assertTrue(f.contains(m), (name, m))
                self.assertTrue(f.contains(m.encode()), (name, m))
        f = BloomFilter.from_scandump(golden_chunks(GOLDEN["gv1"]))
        self.assertFalse(f.contains("hellp"))
        self.assertFalse(f.contains(""))
        data = f.layers[0].data
        bits = [x for x in range(11072) if data[x >> 3] & (1 << (x & 7))]
        self.assertEqual(bits, sorted(GOLDEN["gv1"]["hello_bit_positions"]))

    def test_fixture_keys(self):
        checked = 0
        for name in sorted(os.listdir(FX)):
            with open(os.path.join(FX, name)) as fh:
                fx = json.load(fh)
            if fx["type"] != "MBbloom--" or any(c.get("data_hex") is None for c in fx["scandump"]):
                continue  # fx:big records only a digest of its chunk
            f = BloomFilter.from_scandump([(c["next_iter"], bytes.fromhex(c["data_hex"])) for c in fx["scandump"]])
            self.assertEqual(f.layer_count, fx["header"]["nfilters"], name)
            self.assertEqual(f.options, fx["header"]["options"], name)
            absent = set(fx["items_mexists_zero_n"])
            for i, h in enumerate(fx["items_hex"]):
                self.assertEqual(f.contains(bytes.fromhex(h)), i not in absent, (name, i))
            key = bytes.fromhex(fx["key_hex"])
            fps = [n for n in range(fx["probes"]["count"]) if f.contains(b"probe:" + key + b":%d" % n)]
            self.assertEqual(fps, fx["probes"]["false_positive_n"], name)
            checked += 1
        self.assertEqual(checked, 10)


# gv2: BF.RESERVE 0.1 4 EXPANSION 3 + 12 items: two layers of 8 and 16 bytes (offsets 0..24).
HEADER = bytes.fromhex(GOLDEN["gv2"]["header_hex"])
WALK = [(c["reply_iter"], bytes.fromhex(c["hex"])) for c in GOLDEN["gv2"]["scandump"]]
L0, L1 = 20, 20 + 53


def edited(**fields):
    """HEADER with struct fields overwritten: name=(format, offset, value)."""
    h = bytearray(HEADER)
    for fmt, off, value in fields.values():
        struct.pack_into(fmt, h, off, value)
    return bytes(h)


class Hostile(unittest.TestCase):
    def refused(self, code, fn, *args, **kw):
        with self.assertRaises(ScandumpError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.code, code, str(cm.exception))

    def bad_header(self, h):
        self.refused("BAD_DATA", BloomFilter.from_scandump, [(1, h)])

    def test_intact_and_reordered(self):
        f = BloomFilter.from_scandump(WALK)
        self.assertEqual((f.layer_count, f.byte_length), (2, 24))
        g = BloomFilter.from_scandump([WALK[0], WALK[2], WALK[1]])
        self.assertTrue(all(g.contains(x) for x in "abcdefghijkl"))
        # Iterators as redis-py may give them (int, or bytes when decode_responses is off).
        BloomFilter.from_scandump([(str(i).encode(), bytearray(d)) for i, d in WALK])

    def test_bad_headers(self):
        self.bad_header(HEADER[:-1])
        self.bad_header(HEADER[:19])
        self.bad_header(b"")
        self.bad_header(HEADER + b"\0")
        self.bad_header(edited(n=("<I", 8, 0)))
        self.bad_header(edited(n=("<I", 8, 0xFFFFFFFF)))
        self.bad_header(edited(o=("<I", 12, 5 | 16)))
        self.bad_header(edited(s=("<Q", 0, 13)))
        self.bad_header(edited(e=("<d", L0 + 24, 0.0)))
        self.bad_header(edited(e=("<d", L0 + 24, 1.0)))
        self.bad_header(edited(e=("<d", L1 + 24, float("nan"))))
        self.bad_header(edited(k=("<I", L0 + 40, 6)))
        self.bad_header(edited(b=("<d", L0 + 32, float("nan"))))
        self.bad_header(edited(b=("<d", L0 + 32, 4000.0), k=("<I", L0 + 40, 2773)))
        self.bad_header(edited(bits=("<Q", L0 + 8, 65)))
        self.bad_header(edited(by=("<Q", L0, 0), bits=("<Q", L0 + 8, 0)))
        self.bad_header(edited(n2=("<B", L0 + 52, 64)))
        self.bad_header(edited(n2=("<B", L0 + 52, 7)))
        self.bad_header(edited(s=("<Q", 0, 1 << 63)))
        BloomFilter.from_scandump([(1, edited(n2=("<B", L0 + 52, 6)))] + WALK[1:])

    def test_huge_header_refused_before_allocating(self):
        self.bad_header(edited(by=("<Q", L1, 1 << 40), bits=("<Q", L1 + 8, 1 << 43)))
        self.bad_header(edited(by=("<Q", L1, (1 << 64) - 1)))
        self.refused("BAD_DATA", BloomFilter.from_scandump, WALK, max_bytes=23)
        BloomFilter.from_scandump(WALK, max_bytes=24)

    def test_bad_chunks(self):
        f = lambda: BloomFilter.decode_header(HEADER)  # noqa: E731
        self.refused("BAD_DATA", f().apply_chunk, 0, b"")
        self.refused("BAD_DATA", f().apply_chunk, -5, b"")
        self.refused("BAD_DATA", f().apply_chunk, 2, b"abc")
        self.refused("NO_LINK", f().apply_chunk, 3, b"abc")
        self.refused("NO_LINK", f().apply_chunk, 26, b"")
        self.refused("NO_LINK", f().apply_chunk, 25, b"")
        f().apply_chunk(24, b"")
        self.refused("TOO_BIG", f().apply_chunk, 12, b"0123456789")
        self.refused("TOO_BIG", f().apply_chunk, 30, bytes(20))
        g = f()
        g.apply_chunk(9, b"01234567")
        self.assertEqual(bytes(g.layers[0].data), b"01234567")
        self.refused("BAD_DATA", f().apply_chunk, 1.5, b"")
        self.refused("BAD_DATA", f().apply_chunk, 1 << 70, b"")
        self.refused("BAD_DATA", f().apply_chunk, 9, "not bytes")

    def test_truncated_walks(self):
        self.refused("INCOMPLETE", BloomFilter.from_scandump, [])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, WALK[:1])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, WALK[:2])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, [WALK[0], (9, WALK[1][1][1:]), WALK[2]])
        self.refused("BAD_DATA", BloomFilter.from_scandump, WALK[1:])
        self.refused("BAD_DATA", BloomFilter.from_scandump, [(1, HEADER), (9,)])
        self.refused("BAD_DATA", BloomFilter.from_scandump, [(1, HEADER), "junk"])
        self.refused("TOO_BIG", BloomFilter.from_scandump, [WALK[0], (25, bytes(24))])

    def test_random_corruption(self):
        rnd = random.Random(0x2545F491)
        refused = 0
        for _ in range(3000):
            walk = [[i, bytearray(d)] for i, d in WALK]
            which = rnd.randrange(len(walk))
            d = walk[which][1]
            op = rnd.randrange(4)
            if op == 0 and d:
                d[rnd.randrange(len(d))] ^= 1 << rnd.randrange(8)
            elif op == 1:
                walk[which][1] = d[: rnd.randrange(len(d) + 1)]
            elif op == 2:
                walk[which][0] += rnd.randrange(40) - 20
            else:
                del walk[which]
            try:
                BloomFilter.from_scandump(walk)
            except ScandumpError:
                refused += 1
        self.assertGreater(refused, 600)


if __name__ == "__main__":
    unittest.main()
