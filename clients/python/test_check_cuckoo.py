"""The cuckoo-filter checker (``redis_bf_check.CuckooFilter``).

Without a server: every recorded key of RedisBloom's CF reference set rebuilt from its
recorded CF.SCANDUMP walk (cf:big, whose chunks were too big to record, from its DUMP payload's
tables) answers every recorded CF.EXISTS and CF.COUNT exactly (items, deleted items, 20 000
probes per key); hostile walks get CF.LOADCHUNK's verdicts. With a live server
(``Live``, skipped while the server's CF.* commands answer "not implemented yet"): walks taken
with redis-py's ``r.cf().scandump`` answer exactly as CF.MEXISTS (20 000 probes) and CF.COUNT
(2 000) for filters of every shape and every key of the fixture RDB (cf:big too), and the
hostile walks get the same verdicts from CF.LOADCHUNK. Run with clients/python/check_run.sh."""

import hashlib
import json
import os
import random
import struct
import unittest

from redis_bf_check import CuckooFilter, ScandumpError, cuckoo_lookup

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
#: The shared reference recordings (RedisBloom's own replies), beside the repository or at BF_SHARED.
SHARED = os.path.abspath(os.environ.get("BF_SHARED", os.path.join(ROOT, "..", "shared")))
CF_FIXTURES = os.path.join(SHARED, "fixtures", "redisbloom-cf")
CF_KEYS = os.path.join(CF_FIXTURES, "keys")


def have_shared(test):
    if os.path.isdir(CF_KEYS):
        return True
    if os.environ.get("BF_REQUIRE_SHARED"):
        test.fail("%s is absent but BF_REQUIRE_SHARED is set" % CF_KEYS)
    test.skipTest("the reference recordings (%s) are absent: nothing was checked" % CF_KEYS)
    return False


def expand(fx, name):
    """The items of a ``*_hex`` list or a ``*_spec`` run list."""
    if fx.get(name + "_hex") is not None:
        return [bytes.fromhex(h) for h in fx[name + "_hex"]]
    out = []
    for run in fx.get(name + "_spec") or []:
        if "hex" in run:
            out += [bytes.fromhex(h) for h in run["hex"]]
        else:
            prefix = bytes.fromhex(run["prefix_hex"])
            out += [prefix + str(n).encode() for n in range(run["start"], run["stop"])]
    return out


def expand_generator(fx):
    g = fx.get("items_generator")
    if not g:
        return None
    prefix = bytes.fromhex(g["prefix_hex"])
    return [prefix + str(n).encode() for n in range(g["start"], g["stop"])]


def _rdb_len(buf, i):
    """An RDB length at ``buf[i]``: (value, next index, is a special string encoding)."""
    b = buf[i]
    kind = b >> 6
    if kind == 0:
        return b & 0x3F, i + 1, False
    if kind == 1:
        return ((b & 0x3F) << 8) | buf[i + 1], i + 2, False
    if b == 0x80:
        return int.from_bytes(buf[i + 1 : i + 5], "big"), i + 5, False
    if b == 0x81:
        return int.from_bytes(buf[i + 1 : i + 9], "big"), i + 9, False
    return b & 0x3F, i + 1, True


def _lzf(data, ulen):
    out = bytearray()
    i = 0
    while i < len(data):
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            out += data[i : i + ctrl + 1]
            i += ctrl + 1
            continue
        n = ctrl >> 5
        if n == 7:
            n += data[i]
            i += 1
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
        i += 1
        for _ in range(n + 2):
            out.append(out[ref])
            ref += 1
    assert len(out) == ulen
    return bytes(out)


def walk_from_dump(fx, payload):
    """The CF.SCANDUMP walk of a key rebuilt from its recorded DUMP payload (for keys whose
    chunks were too big to record): the recorded header, then each sub-filter's table from the
    MBbloomCF value (encoding version 4: U sub-filters, U buckets, U items, U deletes, U bucket
    size, U max iterations, U expansion, then per sub-filter U buckets, S table)."""
    assert payload[0] == 7  # RDB_TYPE_MODULE_2
    _, i, _ = _rdb_len(payload, 1)  # module id and encoding version
    fields = []
    tables = []
    while True:
        op, i, _ = _rdb_len(payload, i)
        if op == 0:  # EOF
            break
        if op == 2:  # unsigned
            v, i, _ = _rdb_len(payload, i)
            fields.append(v)
        elif op == 5:  # string buffer
            n, i, special = _rdb_len(payload, i)
            if special:
                assert n == 3, "only LZF strings are expected"
                clen, i, _ = _rdb_len(payload, i)
                ulen, i, _ = _rdb_len(payload, i)
                tables.append(_lzf(payload[i : i + clen], ulen))
                i += clen
            else:
                tables.append(payload[i : i + n])
                i += n
        else:
            raise AssertionError("unexpected module opcode %d" % op)
    assert fields[0] == len(tables)
    walk = [(1, bytes.fromhex(fx["header_hex"]))]
    pos = 1
    for t in tables:
        pos += len(t)
        walk.append((pos, t))
    return walk


def expected_counts(q):
    if q.get("count_digits") is not None:
        return [int(c) for c in q["count_digits"]]
    out = [int(q["count_default"])] * int(q["count"])
    for i, c in q["count_exceptions"]:
        out[i] = c
    return out


def header(items=20, buckets=4, deletes=0, filters=1, bucket_size=2, max_iterations=20, expansion=1):
    return struct.pack("<QQQQHHH", items, buckets, deletes, filters, bucket_size, max_iterations, expansion)


CANNOT_CREATE = "Couldn't create filter!"
CANNOT_LOAD = "Couldn't load chunk!"

#: (name, walk, kwargs, checker's code (None = accepted), CF.LOADCHUNK's first error (None = all
#: OK), sent to the live server)
HOSTILE = [
    ("one sub-filter", [(1, header()), (9, b"\x07" * 8)], {}, None, None, True),
    ("two sub-filters", [(1, header(filters=2)), (9, b"\x07" * 8), (17, b"\x09" * 8)], {}, None, None, True),
    ("expansion 3", [(1, header(filters=2, expansion=3)), (9, bytes(8)), (33, b"\x05" * 24)], {}, None, None, True),
    ("a start past the last sub-filter", [(1, header(filters=2)), (9, bytes(8)), (25, b"\x03" * 8)], {}, None, None, True),
    ("sub-filter count in 16 bits", [(1, header(filters=(1 << 32) + 1)), (9, bytes(8))], {}, None, None, True),
    ("header of 37 bytes", [(1, header()[:37])], {}, "INVALID_HEADER", "Invalid header", True),
    ("header of 39 bytes", [(1, header() + b"\x00")], {}, "INVALID_HEADER", "Invalid header", True),
    ("empty header", [(1, b"")], {}, "INVALID_HEADER", "Invalid header", True),
    ("3 buckets", [(1, header(buckets=3))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("0 buckets", [(1, header(buckets=0))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("2^56 buckets", [(1, header(buckets=1 << 56))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("bucket size 0", [(1, header(bucket_size=0))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("bucket size 256", [(1, header(bucket_size=256))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("max iterations 0", [(1, header(max_iterations=0))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("0 sub-filters", [(1, header(filters=0))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("65536 sub-filters", [(1, header(filters=65536))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("2 sub-filters, expansion 0", [(1, header(filters=2, expansion=0))], {}, "CANNOT_CREATE", CANNOT_CREATE, True),
    ("expansion 32769", [(1, header(expansion=32769)), (9, bytes(8))], {}, "CANNOT_CREATE", None, False),
    ("expansion 32769, max 65535", [(1, header(expansion=32769)), (9, bytes(8))], {"max_expansion": 65535}, None, None, False),
    ("a sub-filter past 2^56 buckets", [(1, header(buckets=1 << 50, filters=2, expansion=256))],
     {"max_bytes": 1 << 64}, "CANNOT_CREATE", None, False),
    ("tables over max_bytes", [(1, header(buckets=1 << 30))], {}, "OUT_OF_MEMORY", None, False),
    ("tables over a small max_bytes", [(1, header(filters=3))], {"max_bytes": 20}, "OUT_OF_MEMORY", None, False),
    ("a chunk before the header", [(9, bytes(8))], {}, "NOT_FOUND", "ERR not found", True),
    ("position abc", [(1, header()), ("abc", bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position 1.0", [(1, header()), ("1.0", bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position ''", [(1, header()), ("", bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position +9", [(1, header()), ("+9", bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position 0 with data", [(1, header()), (0, bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position 2^63", [(1, header()), (1 << 63, bytes(8))], {}, "INVALID_POSITION", "Invalid position", True),
    ("position 2^63 - 1", [(1, header()), ((1 << 63) - 1, bytes(8))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("position -1", [(1, header()), (-1, bytes(8))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("a second header", [(1, header()), (1, header())], {}, "ITEM_EXISTS", "ERR item exists", True),
    ("an empty chunk", [(1, header()), (9, b"")], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("longer than its sub-filter", [(1, header()), (73, bytes(72))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("crossing into the next sub-filter", [(1, header(filters=2)), (13, bytes(8))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("position below the length", [(1, header()), (7, bytes(8))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("far past the end", [(1, header()), (100009, bytes(8))], {}, "CANNOT_LOAD", CANNOT_LOAD, True),
    ("header only", [(1, header())], {}, "INCOMPLETE", None, True),
    ("a sub-filter missing", [(1, header(filters=2)), (9, bytes(8))], {}, "INCOMPLETE", None, True),
    ("half a sub-filter", [(1, header()), (5, bytes(4))], {}, "INCOMPLETE", None, True),
]


class Fixtures(unittest.TestCase):
    def test_every_recorded_answer(self):
        if not have_shared(self):
            return
        keys = queries = 0
        for name in sorted(os.listdir(CF_KEYS)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(CF_KEYS, name)) as fh:
                fx = json.load(fh)
            if fx["type"] != "MBbloomCF":
                continue
            walk = [c for c in fx["scandump"] if not c.get("nil")]
            if all("data_hex" in c for c in walk):
                pairs = [(c["next_iter"], bytes.fromhex(c["data_hex"])) for c in walk]
            else:
                # cf:big: chunks above 64 KiB are not recorded; its tables come from its DUMP
                # payload, and must give the recorded chunks' sha256.
                with open(os.path.join(CF_KEYS, fx["dump_payload_file"]), "rb") as fh:
                    pairs = walk_from_dump(fx, fh.read())
                self.assertEqual(
                    [(it, hashlib.sha256(d).hexdigest()) for it, d in pairs],
                    [(c["next_iter"], c["sha256"]) for c in walk],
                    name,
                )
            f = CuckooFilter.from_scandump(pairs)
            if fx["header"]:
                info = fx["info"]
                self.assertEqual(
                    (f.items, f.buckets, f.sub_filter_count, f.bucket_size, f.expansion, f.max_iterations),
                    (info["Number of items inserted"], info["Number of buckets"], info["Number of filters"],
                     info["Bucket size"], info["Expansion rate"], info["Max iterations"]),
                    name,
                )
            else:
                self.assertEqual(f.sub_filter_count, 0, name)
            key = bytes.fromhex(fx["key_hex"])
            sets = {
                "items": expand_generator(fx) or expand(fx, "items"),
                "deleted": expand(fx, "deleted"),
                "probes": [b"probe:" + key + b":" + str(n).encode() for n in range(int(fx["queries"]["probes"]["count"]))],
            }
            for qname, items in sets.items():
                q = fx["queries"][qname]
                self.assertEqual(len(items), int(q["count"]), (name, qname))
                counts = expected_counts(q)
                got = [f.count(i) for i in items]
                self.assertEqual(got, counts, (name, qname, "CF.COUNT"))
                exists = [f.contains(i) for i in items]
                self.assertEqual(exists, [c > 0 for c in counts], (name, qname, "CF.EXISTS"))
                self.assertEqual(sum(exists), int(q["exists_true"]), (name, qname))
                queries += len(items)
            keys += 1
        self.assertEqual(keys, 27)
        self.assertGreater(queries, 27 * 20000)

    def test_lookup(self):
        fp, h1, h2 = cuckoo_lookup("dup")
        self.assertEqual((fp, h1, h2), (183, 0xD46A6EBA6EAE141D, 0xD46A6EFBCDA3ED9E))
        self.assertEqual(cuckoo_lookup(b"dup"), cuckoo_lookup("dup"))


class Hostile(unittest.TestCase):
    def test_verdicts(self):
        for name, walk, kwargs, code, _, _ in HOSTILE:
            with self.subTest(name):
                if code is None:
                    CuckooFilter.from_scandump(walk, **kwargs)
                    continue
                with self.assertRaises(ScandumpError) as cm:
                    CuckooFilter.from_scandump(walk, **kwargs)
                self.assertEqual(cm.exception.code, code, str(cm.exception))

    def test_shapes_and_answers(self):
        f = CuckooFilter.from_scandump(HOSTILE[2][1])
        self.assertEqual(f.sub_filter_buckets, [4, 12])
        fp = cuckoo_lookup("x")[0]
        # A later chunk overwrites an earlier one, as on the server; a bucket met twice counts twice.
        f = CuckooFilter.from_scandump([(1, header()), (9, bytes(8)), (9, bytes([fp]) * 8)])
        self.assertEqual(f.count("x"), 4)
        self.assertTrue(f.contains("x"))
        for walk in ([], [(0, None)], [(0, b"")], [("0", None)]):
            e = CuckooFilter.from_scandump(walk)
            self.assertEqual((e.contains("x"), e.count("x"), e.sub_filter_count), (False, 0, 0))
        with self.assertRaises(TypeError):
            CuckooFilter.from_scandump([(1, header()), (9, "text")])


def grown_walk(filters, buckets=2, bucket_size=2):
    """The CF.SCANDUMP walk of a filter grown by one CF.INSERT to ``filters`` sub-filters of one
    size (``CF.RESERVE k 4 BUCKETSIZE 2 EXPANSION 1``): the header, then one chunk per
    sub-filter, returned with the position after its last byte. Item ``"g<i>"`` for every 97th
    ``i`` has its fingerprint in the first slot of its first bucket of sub-filter ``i``;
    returns ``(walk, those items)``."""
    size = buckets * bucket_size
    tables = [bytearray(size) for _ in range(filters)]
    items = ["g%d" % i for i in range(0, filters, 97)]
    for i in range(0, filters, 97):
        fp, h1, _ = cuckoo_lookup("g%d" % i)
        tables[i][(h1 % buckets) * bucket_size] = fp
    h = header(items=len(items), buckets=buckets, filters=filters, bucket_size=bucket_size, expansion=1)
    return [(1, h)] + [(1 + (i + 1) * size, bytes(t)) for i, t in enumerate(tables)], items


def one_byte_walk(filters):
    """A hostile 38-byte header declaring ``filters`` one-byte sub-filters (one bucket of one
    slot, expansion 1), then one one-byte chunk for each, holding fingerprint 1."""
    return [(1, header(items=1, buckets=1, filters=filters, bucket_size=1, max_iterations=1, expansion=1))] + [
        (i + 2, b"\x01") for i in range(filters)
    ]


#: An item whose fingerprint is 1.
FP1 = next(x for x in ("f%d" % i for i in range(10_000)) if cuckoo_lookup(x)[0] == 1)


class Work(unittest.TestCase):
    """Placing chunks costs a bounded number of sub-filter lookups per chunk (``place_steps``),
    whatever the sub-filter count and the chunks' order. A checker that walks the sub-filters
    for every chunk makes about chunks x sub-filters / 2 of them: 2.1 billion for 65 535
    sub-filters (minutes of Python), 8 million for the first, small case."""

    def test_many_sub_filters(self):
        grown, items = grown_walk(65535)
        hostile = one_byte_walk(65535)
        small = one_byte_walk(4096)
        shuffled = hostile[1:]
        random.Random(7).shuffle(shuffled)
        any_order = 2 + (65535).bit_length()
        # (name, walk, lookups allowed per chunk): 1-2 in a walk's order, 2 + log2 in any.
        cases = [
            ("4096 one-byte sub-filters, reversed", small[:1] + small[:0:-1], 2 + (4096).bit_length()),
            ("grown to 65 535 sub-filters", grown, 2),
            ("grown to 65 535 sub-filters, reversed", grown[:1] + grown[:0:-1], any_order),
            ("38-byte header, 65 535 one-byte chunks", hostile, 2),
            ("38-byte header, 65 535 one-byte chunks, shuffled", hostile[:1] + shuffled, any_order),
        ]
        for name, walk, per_chunk in cases:
            f = CuckooFilter.from_scandump(walk)
            chunks = len(walk) - 1
            self.assertLessEqual(f.place_steps, per_chunk * chunks, name)
            self.assertGreaterEqual(f.place_steps, chunks, name)
            self.assertEqual((f.sub_filter_count, f.byte_length), (chunks, chunks * (4 if "grown" in name else 1)), name)
            if "grown" in name:  # a query visits every sub-filter, as CF.EXISTS: a few items
                self.assertTrue(all(f.contains(x) for x in items[::100] + items[-1:]), name)
            else:  # every slot holds fingerprint 1: both buckets of every sub-filter count
                self.assertEqual(f.count(FP1), 2 * chunks, name)

    def test_a_header_declaring_many_sub_filters_with_few_chunks(self):
        # The header costs one step per declared sub-filter (at most 65 535); each chunk, one search.
        walk = one_byte_walk(65535)
        f = CuckooFilter.decode_header(walk[0][1])
        self.assertEqual(f.place_steps, 0)
        self.assertEqual(f.apply_chunk(65536, b"\x07"), (65534, 65535))
        f.apply_chunk(2, b"\x07")
        self.assertEqual(f.apply_chunk(65537, b"\x07"), (65534, 65535))  # past the end: into the last one
        self.assertLessEqual(f.place_steps, 3 * (2 + (65535).bit_length()))
        with self.assertRaises(ScandumpError) as cm:
            CuckooFilter.from_scandump(walk[:1] + walk[-1:] + walk[1:2])
        self.assertEqual(cm.exception.code, "INCOMPLETE")


PROBES = 20_000
COUNTS = 2_000


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import redis

        from test_check_identity import MODULE, Server, probes, scandump

        cls.redis = redis
        cls.probes = staticmethod(lambda members, seed: probes(members, seed, PROBES))
        cls.scandump = staticmethod(lambda r, key: scandump(r, key, cuckoo=True))
        if not os.path.exists(MODULE):
            raise RuntimeError("module not found: %s (cargo build --release)" % MODULE)
        rdb = os.path.join(CF_FIXTURES, "dump.rdb")
        cls.has_rdb = os.path.exists(rdb)
        cls.server = Server(rdb if cls.has_rdb else None)
        cls.r = cls.server.r
        cls.missing = None
        try:
            cls.r.execute_command("CF.RESERVE", "cf:probe-support", 8)
            cls.r.delete("cf:probe-support")
        except redis.ResponseError as e:
            cls.missing = "the server's CF.RESERVE answers %s" % e

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        if self.missing:
            self.skipTest("%s: nothing was checked" % self.missing)

    def compare(self, key, items):
        f = CuckooFilter.from_scandump(self.scandump(self.r, key))
        positives = 0
        for i in range(0, len(items), 1000):
            batch = items[i : i + 1000]
            server = self.r.cf().mexists(key, *batch)
            local = [int(f.contains(p)) for p in batch]
            self.assertEqual(local, [int(x) for x in server], "%s: CF.MEXISTS from probe %d" % (key, i))
            positives += sum(local)
        pipe = self.r.pipeline(transaction=False)
        for p in items[:COUNTS]:
            pipe.execute_command("CF.COUNT", key, p)
        self.assertEqual([f.count(p) for p in items[:COUNTS]], pipe.execute(), "%s: CF.COUNT" % key)
        return f, positives

    def test_shapes(self):
        r = self.r
        rng = lambda p, n: ["%s:%d" % (p, i) for i in range(n)]  # noqa: E731
        shapes = [
            ("py:auto", None, rng("a", 500), []),
            ("py:bs1", ("CF.RESERVE", "py:bs1", 1000, "BUCKETSIZE", 1), rng("b1", 1500), []),
            ("py:bs4", ("CF.RESERVE", "py:bs4", 1000, "BUCKETSIZE", 4), rng("b4", 900), []),
            ("py:exp2", ("CF.RESERVE", "py:exp2", 64, "EXPANSION", 2), rng("e2", 5000), []),
            ("py:dups", ("CF.RESERVE", "py:dups", 1000), rng("d", 300) + ["dup"] * 12, []),
            ("py:del", ("CF.RESERVE", "py:del", 256), rng("x", 3000), rng("x", 2000)),
            # 2^25 one-slot buckets: a 32 MiB table, walked in 16 MiB chunks.
            ("py:huge", ("CF.RESERVE", "py:huge", 20_000_000, "BUCKETSIZE", 1), rng("h", 10_000), []),
        ]
        for key, setup, items, deleted in shapes:
            if setup:
                r.execute_command(*setup)
            for i in range(0, len(items), 1000):
                r.cf().insert(key, items[i : i + 1000])
            for d in deleted:
                r.cf().delete(key, d)
            f, positives = self.compare(key, self.probes(items, len(key)))
            gone = set(deleted)
            for m in items:
                if m not in gone:
                    self.assertTrue(f.contains(m), (key, m))
            self.assertGreater(positives, 0, key)
        self.assertEqual([len(d) for _, d in self.scandump(r, "py:huge")], [38, 1 << 24, 1 << 24])

    def test_fixture_rdb_keys(self):
        if not self.has_rdb:
            self.skipTest("the fixture RDB is absent: nothing was checked")
        checked = 0
        for key in sorted(self.r.keys("cf:*")):
            if self.r.type(key) != b"MBbloomCF":
                continue
            self.compare(key, [b"probe:" + key + b":" + str(n).encode() for n in range(PROBES)])
            checked += 1
        self.assertEqual(checked, 27)

    def test_hostile_walks(self):
        for n, (name, walk, _, _, server, live) in enumerate(HOSTILE):
            if not live:
                continue
            key = "hostile:cf:%d" % n
            first = None
            for it, data in walk:
                try:
                    self.assertEqual(self.r.execute_command("CF.LOADCHUNK", key, str(it), data), b"OK")
                except self.redis.ResponseError as e:
                    first = str(e)
                    break
            # redis-py drops the "ERR " of an error reply.
            self.assertEqual(first, server and server.removeprefix("ERR "), name)


if __name__ == "__main__":
    unittest.main()
