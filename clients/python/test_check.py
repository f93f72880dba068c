"""Tests of the pure-Python checker (redis_bf_check) against recorded data: golden vectors,
every RedisBloom fixture key's SCANDUMP walk, items and probe answers, and hostile input.
Needs no server.   python3 -m unittest test_check   (from clients/python)"""

import json
import os
import random
import struct
import tracemalloc
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


def layer_record(nbytes, items=0, bpe=None, hashes=None):
    """A consistent 53-byte layer record of nbytes bytes (gv2's first layer's error and k)."""
    rec = bytearray(HEADER[L0 : L0 + 53])
    struct.pack_into("<QQQ", rec, 0, nbytes, nbytes * 8, items)
    if bpe is not None:
        struct.pack_into("<d", rec, 32, bpe)
    if hashes is not None:
        struct.pack_into("<I", rec, 40, hashes)
    return bytes(rec)


def chain(records, size=None, options=5, growth=3):
    """A header of the given layer records; size defaults to the sum of their item counts."""
    if size is None:
        size = sum(struct.unpack_from("<Q", r, 16)[0] for r in records)
    return struct.pack("<QIII", size, len(records), options, growth) + b"".join(records)


#: A window filter's header: magic, zero layer count, then the window fields (64 bytes).
WINDOW_HEADER = b"BFwindow" + bytes(4) + struct.pack("<IQQdIIQII", 1, 1000, 100, 0.01, 2, 0, 0, 0, 0)

#: Hostile headers: (name, header, checker's code, words its message must contain, the
#: server's reply to BF.LOADCHUNK key 1 header on a missing key, or None when it depends on
#: the memory budget). The live test (test_check_identity) sends every one to the server.
HOSTILE_HEADERS = [
    ("empty", b"", "BAD_DATA", "0 bytes, at least 20", "received bad data"),
    ("19 bytes", HEADER[:19], "BAD_DATA", "19 bytes, at least 20", "received bad data"),
    ("one byte short", HEADER[:-1], "BAD_DATA", "125 bytes for 2 layers (126 expected)", "received bad data"),
    ("one byte too many", HEADER + b"\0", "BAD_DATA", "127 bytes for 2 layers", "received bad data"),
    ("no layers", edited(n=("<I", 8, 0)), "BAD_DATA", "no layers", "received bad data"),
    ("2^32-1 layers", edited(n=("<I", 8, 0xFFFFFFFF)), "BAD_DATA", "4294967295 layers, more than the server's limit of 4096", "received bad data"),
    ("4097 layers", chain([layer_record(8)] * 4097), "BAD_DATA", "4097 layers, more than the server's limit of 4096", "received bad data"),
    ("window filter", WINDOW_HEADER, "UNSUPPORTED", "window filter dump", "OK"),
    ("window magic, 12 bytes", WINDOW_HEADER[:12], "UNSUPPORTED", "window filter dump", "received bad data"),
    ("BFwindow with layers", b"BFwindow\x01\0\0\0" + HEADER[12:], "BAD_DATA", "", "received bad data"),
    ("option bit 16", edited(o=("<I", 12, 5 | 16)), "BAD_DATA", "unknown option bits 0x10", "received bad data"),
    ("sizes do not add up", edited(s=("<Q", 0, 13)), "BAD_DATA", "add up to 12, not the chain's 13", "received bad data"),
    ("chain size 2^63", edited(s=("<Q", 0, 1 << 63)), "BAD_DATA", "add up to 12", "received bad data"),
    ("error 0", edited(e=("<d", L0 + 24, 0.0)), "BAD_DATA", "layer 0: error rate 0.0", "received bad data"),
    ("error 1", edited(e=("<d", L0 + 24, 1.0)), "BAD_DATA", "layer 0: error rate 1.0", "received bad data"),
    ("error NaN", edited(e=("<d", L1 + 24, float("nan"))), "BAD_DATA", "layer 1: error rate nan", "received bad data"),
    ("k != ceil(ln2 bpe)", edited(k=("<I", L0 + 40, 6)), "BAD_DATA", "layer 0: 6 hashes, but ceil", "received bad data"),
    ("bpe NaN", edited(b=("<d", L0 + 32, float("nan"))), "BAD_DATA", "layer 0: 5 hashes, but ceil(ln2 x bpe nan) = 0", "received bad data"),
    ("bpe -inf, k 0", edited(b=("<d", L0 + 32, float("-inf")), k=("<I", L0 + 40, 0)), "BAD_DATA", "layer 0: 0 hashes, outside 1..2048", "received bad data"),
    ("bpe -inf", edited(b=("<d", L0 + 32, float("-inf"))), "BAD_DATA", "ceil(ln2 x bpe -inf) = 0", "received bad data"),
    ("k 2773", edited(b=("<d", L0 + 32, 4000.0), k=("<I", L0 + 40, 2773)), "BAD_DATA", "2773 hashes, outside 1..2048", "received bad data"),
    ("bits != 8 bytes", edited(bits=("<Q", L0 + 8, 65)), "BAD_DATA", "layer 0: 65 bits is not 8 x 8 bytes", "received bad data"),
    ("bytes 2^64-1", edited(by=("<Q", L1, (1 << 64) - 1)), "BAD_DATA", "layer 1: 128 bits is not 8 x", "received bad data"),
    ("0 bits", edited(by=("<Q", L0, 0), bits=("<Q", L0 + 8, 0)), "BAD_DATA", "layer 0: 0 bits", "received bad data"),
    ("n2 64", edited(n2=("<B", L0 + 52, 64)), "BAD_DATA", "n2 64 is above 63", "received bad data"),
    ("bits < 2^n2", edited(n2=("<B", L0 + 52, 7)), "BAD_DATA", "64 bits, fewer than 2^n2 = 2^7", "received bad data"),
    ("item counts overflow", chain([layer_record(8, 1 << 63), layer_record(8, 1 << 63)], size=0), "BAD_DATA", "item counts overflow 64 bits at layer 1", "received bad data"),
    ("byte counts overflow", chain([layer_record(1 << 60)] * 16), "BAD_DATA", "byte counts overflow 64 bits at layer 15", "received bad data"),
    ("2^40 bytes", edited(by=("<Q", L1, 1 << 40), bits=("<Q", L1 + 8, 1 << 43)), "OUT_OF_MEMORY", "the layers take 1099511627784 bytes, more than the limit of 1073741824", "received bad data"),
    ("2^60 bytes x 15", chain([layer_record(1 << 60)] * 15), "OUT_OF_MEMORY", "more than the limit", "received bad data"),
    ("1 GiB + 1 byte", chain([layer_record(1 << 30), layer_record(8)]), "OUT_OF_MEMORY", "the layers take 1073741832 bytes, more than the limit of 1073741824 (argument max_bytes)", None),
]

#: Headers the server accepts and so does the checker (decode_header alone: no chunks).
ACCEPTED_HEADERS = [
    ("n2 6 (64-bit power-of-two layer)", edited(n2=("<B", L0 + 52, 6))),
    ("4096 layers", chain([layer_record(8)] * 4096)),
    ("item counts above 2^53", chain([layer_record(8, (1 << 62) + 1), layer_record(8, 3)])),
    ("growth 0, options 0", chain([layer_record(8)], options=0, growth=0)),
    ("exactly 1 GiB", chain([layer_record(1 << 30)])),
]

#: Iterators: (value, the verdict of apply_chunk(value, b"") on a gv2 filter: a code, or None
#: when accepted; words the message must contain). The live test sends every str, bytes and
#: int one to the server as BF.LOADCHUNK's iterator.
ITERATORS = [
    (9, None, ""),
    ("9", None, ""),
    (b"9", None, ""),
    ("24", None, ""),
    ("\u0661\u0662", "NOT_NUMERIC", "'\u0661\u0662' is not a Redis integer (ASCII digits"),
    ("\u00b2", "NOT_NUMERIC", "not a Redis integer"),
    ("1e3", "NOT_NUMERIC", "'1e3' is not a Redis integer"),
    ("9.0", "NOT_NUMERIC", "not a Redis integer"),
    (" 9", "NOT_NUMERIC", "not a Redis integer"),
    ("9 ", "NOT_NUMERIC", "not a Redis integer"),
    ("9\n", "NOT_NUMERIC", "not a Redis integer"),
    ("+9", "NOT_NUMERIC", "not a Redis integer"),
    ("09", "NOT_NUMERIC", "no leading zeros"),
    ("-0", "NOT_NUMERIC", "no leading zeros, no '-0'"),
    ("00", "NOT_NUMERIC", "no leading zeros"),
    ("", "NOT_NUMERIC", "not a Redis integer"),
    ("-", "NOT_NUMERIC", "not a Redis integer"),
    ("--9", "NOT_NUMERIC", "not a Redis integer"),
    (b"\xff", "NOT_NUMERIC", "not a Redis integer"),
    ("9223372036854775808", "NOT_NUMERIC", "outside the signed 64-bit range"),
    ("-9223372036854775809", "NOT_NUMERIC", "outside the signed 64-bit range"),
    (1 << 63, "NOT_NUMERIC", "9223372036854775808 is outside the signed 64-bit range"),
    (1 << 70, "NOT_NUMERIC", "outside the signed 64-bit range"),
    (-(1 << 63) - 1, "NOT_NUMERIC", "outside the signed 64-bit range"),
    (1.5, "NOT_NUMERIC", "iterator must be an int, str or bytes, not float"),
    (9.0, "NOT_NUMERIC", "not float"),
    (None, "NOT_NUMERIC", "not NoneType"),
    (True, "NOT_NUMERIC", "not bool"),
    ("9223372036854775807", "NO_LINK", "iterator 9223372036854775807: its start, offset 9223372036854775806"),
    (1 << 62, "NO_LINK", "outside every layer (24 bytes)"),
    ("-9223372036854775808", "BAD_DATA", "iterator -9223372036854775808 for 0 bytes (not positive)"),
    (0, "BAD_DATA", "not positive"),
    ("-5", "BAD_DATA", "not positive"),
]

#: Chunks on a gv2 filter (layers of 8 and 16 bytes): (iterator, data, code or None, words).
CHUNKS = [
    (0, b"", "BAD_DATA", "iterator 0 for 0 bytes (not positive)"),
    (-5, b"", "BAD_DATA", "not positive"),
    (2, b"abc", "BAD_DATA", "iterator 2 for 3 bytes (smaller than the chunk's length)"),
    (3, b"abc", "NO_LINK", "its start, offset -1, is outside every layer"),
    (26, b"", "NO_LINK", "offset 25, is outside every layer (24 bytes)"),
    (25, b"", "NO_LINK", "offset 24"),
    (24, b"", None, ""),
    (12, b"0123456789", "TOO_BIG", "10 bytes from offset 1 run past the end of layer 0 (7 bytes left)"),
    (30, bytes(20), "TOO_BIG", "20 bytes from offset 9 run past the end of layer 1 (15 bytes left)"),
    (9, b"01234567", None, ""),
    (25, bytes(16), None, ""),
]


class Hostile(unittest.TestCase):
    def refused(self, code, fn, *args, **kw):
        with self.assertRaises(ScandumpError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        return str(cm.exception)

    def test_intact_and_reordered(self):
        f = BloomFilter.from_scandump(WALK)
        self.assertEqual((f.layer_count, f.byte_length), (2, 24))
        g = BloomFilter.from_scandump([WALK[0], WALK[2], WALK[1]])
        self.assertTrue(all(g.contains(x) for x in "abcdefghijkl"))
        # Iterators as redis-py may give them (int, or bytes when decode_responses is off).
        BloomFilter.from_scandump([(str(i).encode(), bytearray(d)) for i, d in WALK])

    def test_bad_headers(self):
        for name, h, code, words, _server in HOSTILE_HEADERS:
            with self.subTest(name):
                msg = self.refused(code, BloomFilter.from_scandump, [(1, h)])
                self.assertIn(words, msg)
                self.refused(code, BloomFilter.decode_header, h)

    def test_accepted_headers(self):
        for name, h in ACCEPTED_HEADERS:
            with self.subTest(name):
                f = BloomFilter.decode_header(h)
                self.assertEqual(f.size, struct.unpack_from("<Q", h)[0])
                self.assertFalse(f.contains("a"))
        BloomFilter.from_scandump([(1, edited(n2=("<B", L0 + 52, 6)))] + WALK[1:])

    def test_max_bytes(self):
        msg = self.refused("OUT_OF_MEMORY", BloomFilter.from_scandump, WALK, max_bytes=23)
        self.assertIn("the layers take 24 bytes, more than the limit of 23 (argument max_bytes)", msg)
        BloomFilter.from_scandump(WALK, max_bytes=24)
        # The limit is checked after every BAD_DATA check, as the server checks its budget.
        self.refused("BAD_DATA", BloomFilter.decode_header, HEADER[:-1], max_bytes=0)
        for bad in (-1, 1.5, None, True):
            with self.assertRaises(TypeError):
                BloomFilter.from_scandump(WALK, max_bytes=bad)

    def test_huge_header_costs_no_memory(self):
        # A valid header announcing exactly the default limit (1 GiB): decoding it, and a walk
        # of it without its chunks, allocate nothing for the bit arrays (the walk is then
        # refused as incomplete). Measured as peak traced memory, not time.
        gib = chain([layer_record(1 << 29), layer_record(1 << 29)])
        tracemalloc.start()
        try:
            f = BloomFilter.decode_header(gib)
            self.assertEqual(f.byte_length, 1 << 30)
            self.assertFalse(f.contains("a"))  # a query of the header alone allocates nothing either
            msg = self.refused("INCOMPLETE", BloomFilter.from_scandump, [(1, gib), (17, bytes(16))])
            self.assertIn("bytes from offset 16 of 1073741824 are missing", msg)
            self.refused("OUT_OF_MEMORY", BloomFilter.from_scandump, [(1, gib)], max_bytes=(1 << 30) - 1)
            self.refused("OUT_OF_MEMORY", BloomFilter.from_scandump, [(1, chain([layer_record(1 << 40)]))])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertLess(peak, 1 << 20, "%d bytes allocated" % peak)

    def test_walk_memory_is_what_the_chunks_bring(self):
        # A 4 MiB layer walked in 1 MiB chunks, then queried: the filter takes one copy of the
        # chunks, and queries read it in place (no second copy of the bit array); a single
        # whole-layer chunk is used as it is.
        mib = 1 << 20
        h = chain([layer_record(4 * mib)])
        chunks = [(1 + (i + 1) * mib, bytes([i + 1]) * mib) for i in range(4)]
        tracemalloc.start()
        try:
            f = BloomFilter.from_scandump([(1, h)] + chunks)
            f.contains("x")  # builds the per-layer lookup tables
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertLess(peak, 4 * mib + mib // 2, "%d bytes" % peak)
        self.assertEqual(bytes(f.layers[0].data[mib - 1 : mib + 1]), b"\x01\x02")
        one = bytes(8 * 16)
        g = BloomFilter.from_scandump([(1, chain([layer_record(128)])), (129, one)])
        self.assertIs(g.layers[0].data, one)

    def test_overlapping_chunks_apply_in_order(self):
        f = BloomFilter.decode_header(HEADER)
        f.apply_chunk(9, b"AAAAAAAA")
        f.apply_chunk(7, b"BBBB")  # bytes 2..6, written after: wins
        self.assertEqual(bytes(f.layers[0].data), b"AABBBBAA")
        f.apply_chunk(3, b"C")  # after the array was assembled
        assembled = f.layers[0].data
        self.assertEqual(bytes(assembled), b"ACBBBBAA")
        self.assertEqual(bytes(f.layers[1].data), bytes(16))
        # A later chunk is written into that array in place, not into a new copy of the layer.
        f.apply_chunk(4, b"D")
        self.assertIs(f.layers[0].data, assembled)
        self.assertEqual(bytes(assembled), b"ACDBBBAA")

    def test_iterators(self):
        for value, code, words in ITERATORS:
            with self.subTest(value=value):
                f = BloomFilter.decode_header(HEADER)
                if code is None:
                    f.apply_chunk(value, b"")
                else:
                    self.assertIn(words, self.refused(code, f.apply_chunk, value, b""))
        # In a walk too, the first pair's iterator included.
        self.refused("NOT_NUMERIC", BloomFilter.from_scandump, [("\u0661", HEADER)])
        self.refused("NOT_NUMERIC", BloomFilter.from_scandump, [WALK[0], ("1e3", b"")])

    def test_bad_chunks(self):
        for it, data, code, words in CHUNKS:
            with self.subTest(it=it, data=data):
                f = BloomFilter.decode_header(HEADER)
                if code is None:
                    f.apply_chunk(it, data)
                else:
                    self.assertIn(words, self.refused(code, f.apply_chunk, it, data))
                    self.assertEqual(bytes(f.layers[0].data) + bytes(f.layers[1].data), bytes(24))
        g = BloomFilter.decode_header(HEADER)
        g.apply_chunk(9, b"01234567")
        self.assertEqual(bytes(g.layers[0].data), b"01234567")
        self.refused("BAD_DATA", g.apply_chunk, 9, "not bytes")

    def test_truncated_walks(self):
        self.refused("INCOMPLETE", BloomFilter.from_scandump, [])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, WALK[:1])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, WALK[:2])
        self.refused("INCOMPLETE", BloomFilter.from_scandump, [WALK[0], (9, WALK[1][1][1:]), WALK[2]])
        msg = self.refused("NOT_FOUND", BloomFilter.from_scandump, WALK[1:])
        self.assertIn("the first pair must be the header (iterator 1), got iterator 9", msg)
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



class Work(unittest.TestCase):
    """Placing chunks costs a bounded number of layer lookups per chunk (``place_steps``),
    whatever the layer count and the chunks' order: a checker that walks the layers for every
    chunk makes about chunks x layers / 2 of them (8 million for 4096 layers of 2 bytes)."""

    def test_one_byte_chunks_over_4096_layers(self):
        layers, nbytes = 4096, 2
        h = chain([layer_record(nbytes)] * layers)
        # Layer j's bytes are j's low byte then its high byte, one chunk each.
        ordered = [(2 + b, bytes([(b // nbytes) >> (8 * (b % nbytes)) & 0xFF])) for b in range(layers * nbytes)]
        shuffled = ordered[:]
        random.Random(7).shuffle(shuffled)
        # (name, chunks, lookups allowed per chunk): 1-2 in a walk's order, 2 + 13 in any.
        cases = [
            ("in order", ordered, 2),
            ("reversed", ordered[::-1], 2 + layers.bit_length()),
            ("shuffled", shuffled, 2 + layers.bit_length()),
        ]
        for name, chunks, per_chunk in cases:
            f = BloomFilter.from_scandump([(1, h)] + chunks)
            self.assertLessEqual(f.place_steps, per_chunk * len(chunks), name)
            self.assertGreaterEqual(f.place_steps, len(chunks), name)
            for j in (0, 1, 255, 256, 4095):
                self.assertEqual(bytes(f.layers[j].data), j.to_bytes(2, "little"), "%s: layer %d" % (name, j))
        # A header alone, then one chunk in its last layer: one search, not a walk of the layers.
        f = BloomFilter.decode_header(h)
        self.assertEqual(f.apply_chunk(1 + layers * nbytes, b"\xff"), (layers * nbytes - 1, layers * nbytes))
        self.assertLessEqual(f.place_steps, 2 + layers.bit_length())
        with self.assertRaises(ScandumpError) as cm:
            f.apply_chunk(2 + layers * nbytes, b"\xff")
        self.assertEqual(cm.exception.code, "NO_LINK")


if __name__ == "__main__":
    unittest.main()
