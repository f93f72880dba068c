"""The Ribbon filter checker (``redis_bf_check.RibbonFilter``) against the Rust core.

Filters of nine shapes built by core/examples/ribbon_vectors.rs (no items, one, a few hundred,
1e5 at 1 %, 0.1 % and 0.01 %, whole result bits, ε = 0.5, a crowded set with bumped items), each
rebuilt from its RF.SCANDUMP walk and asked every item the core was asked (1 007 601 in all):
every answer is the core's, which RF.MEXISTS gives, and no member is absent. Then hostile
headers, chunks and walks get the verdicts of the core's loader. The vectors are written once
into a temporary folder (or read from RIBBON_VECTORS when it names one). Run with
clients/python/check_run.sh."""

import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from redis_bf_check import RF_HEADER_BYTES, RibbonFilter, ScandumpError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHAPES = {}
_made = []


def read_frames(path):
    """``(iterator, bytes)`` pairs from frames of an f64 LE iterator, a u32 LE length, the bytes."""
    with open(path, "rb") as f:
        buf = f.read()
    pairs, p = [], 0
    while p < len(buf):
        it, n = struct.unpack_from("<dI", buf, p)
        pairs.append((int(it), buf[p + 12 : p + 12 + n]))
        p += 12 + n
    return pairs


def setUpModule():
    folder = os.environ.get("RIBBON_VECTORS")
    if not folder or not os.path.exists(os.path.join(folder, "manifest.json")):
        folder = tempfile.mkdtemp(prefix="ribbon-vectors-")
        _made.append(folder)
        subprocess.run(
            ["cargo", "run", "--release", "-q", "-p", "redis-bf-core", "--example", "ribbon_vectors", "--", folder],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    with open(os.path.join(folder, "manifest.json")) as f:
        shapes = json.load(f)["shapes"]
    for s in shapes:
        name = os.path.join(folder, s["name"])
        s["pairs"] = read_frames(name + ".walk")
        with open(name + ".items", "rb") as f:
            s["asked"] = f.read().split(b"\n")[:-1]
        with open(name + ".answers", "rb") as f:
            s["answers"] = f.read()
        SHAPES[s["name"]] = s


def tearDownModule():
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)


def core_answer(s, i):
    return bool(s["answers"][i >> 3] >> (i & 7) & 1)


class Vectors(unittest.TestCase):
    def test_every_answer_is_the_cores_and_no_member_is_absent(self):
        self.assertEqual(len(SHAPES), 9)
        asked = 0
        for s in SHAPES.values():
            f = RibbonFilter.from_scandump(s["pairs"])
            self.assertEqual(
                (f.items, f.blocks, f.lower_bits, f.upper_start, f.bumped_count, f.byte_length, f.error_rate),
                (s["items"], s["blocks"], s["lower_bits"], s["upper_start"], s["bumped"], s["body_bytes"], s["error_rate"]),
                s["name"],
            )
            self.assertEqual(len(s["asked"]), s["members"] + s["probes"], s["name"])
            answers = [f.contains(item) for item in s["asked"]]
            differ = [s["asked"][i] for i, a in enumerate(answers) if a != core_answer(s, i)]
            self.assertEqual(differ[:3], [], "%s: %d answers differ from the core's" % (s["name"], len(differ)))
            self.assertTrue(all(answers[: s["members"]]), "%s: a member answered absent" % s["name"])
            self.assertEqual(sum(answers), s["positives"], s["name"])
            asked += len(answers)
        self.assertEqual(asked, 1007601)
        self.assertGreater(SHAPES["crowded"]["bumped"], 100)
        self.assertEqual(SHAPES["half"]["lower_bits"], 1)
        e2 = SHAPES["e2_1e5"]
        self.assertTrue(0 < e2["upper_start"] < e2["blocks"], "1 %: fractional result bits")


def refuses(test, code, what, f, *args, **kwargs):
    with test.assertRaises(ScandumpError, msg=what) as caught:
        f(*args, **kwargs)
    test.assertEqual(caught.exception.code, code, "%s: %s" % (what, caught.exception))


def header(at, data):
    """The header of the ``few`` shape with ``data`` written at ``at``."""
    h = bytearray(SHAPES["few"]["pairs"][0][1])
    h[at : at + len(data)] = data
    return bytes(h)


u64 = struct.Struct("<Q").pack
u32 = struct.Struct("<I").pack
f64 = struct.Struct("<d").pack


class Hostile(unittest.TestCase):
    def test_a_body_split_anywhere_loads_in_order_only(self):
        s = SHAPES["crowded"]
        head = s["pairs"][0][1]
        body = s["pairs"][1][1]
        self.assertEqual(len(body), s["body_bytes"])
        # Pieces of 3, 5, 7 ... bytes, each with the iterator RF.SCANDUMP would give it.
        pairs, at, n = [(1, head)], 0, 3
        while at < len(body):
            end = min(len(body), at + n)
            pairs.append((str(end + 1), body[at:end]))
            at, n = end, n + 2
        f = RibbonFilter.from_scandump(pairs)
        for i in range(0, len(s["asked"]), 7):
            self.assertEqual(f.contains(s["asked"][i]), core_answer(s, i), s["asked"][i])
        g = RibbonFilter.decode_header(head)
        g.apply_chunk(9, body[:8])
        for what, it, data in [
            ("the first chunk again", 9, body[:8]),
            ("a chunk skipped", 25, body[16:24]),
            ("an empty chunk", 9, b""),
            ("one byte past the end", len(body) + 2, body[8:] + b"\0"),
            ("the header again", 1, head),
            ("iterator 0", 0, body[8:]),
            ("a negative iterator", -1, body[8:]),
        ]:
            refuses(self, "INVALID_POSITION", what, g.apply_chunk, it, data)
            self.assertEqual(g.next_position, 9, what)
            self.assertFalse(g.complete, what)
        refuses(self, "INCOMPLETE", "a half-copied filter answers nothing", g.contains, "x")
        refuses(self, "NOT_NUMERIC", "an iterator that is not an integer", g.apply_chunk, "9x", body[8:])
        g.apply_chunk(len(body) + 1, body[8:])
        self.assertTrue(g.complete)
        self.assertIn(s["asked"][0], g)
        refuses(self, "INVALID_POSITION", "a chunk after the last", g.apply_chunk, len(body) + 1, body[8:])

    def test_hostile_headers_get_the_core_loaders_verdicts(self):
        good = SHAPES["few"]["pairs"][0][1]
        self.assertEqual(len(good), RF_HEADER_BYTES)
        for what, data, code in [
            ("version 2", header(0, b"\x02"), "INVALID_HEADER"),
            ("version 0", header(0, b"\x00"), "INVALID_HEADER"),
            ("error rate 0", header(1, f64(0.0)), "INVALID_HEADER"),
            ("error rate 1", header(1, f64(1.0)), "INVALID_HEADER"),
            ("error rate NaN", header(1, f64(float("nan"))), "INVALID_HEADER"),
            ("error rate -0.5", header(1, f64(-0.5)), "INVALID_HEADER"),
            ("2^32 - 1 items", header(9, u64((1 << 32) - 1)), "INVALID_HEADER"),
            ("no blocks", header(17, u64(0)), "INVALID_HEADER"),
            ("2^62 blocks", header(17, u64(1 << 62)), "OUT_OF_MEMORY"),
            ("2^40 blocks (the body over max_bytes)", header(17, u64(1 << 40)), "OUT_OF_MEMORY"),
            ("no result bits", header(25, u32(0)), "INVALID_HEADER"),
            ("33 result bits", header(25, u32(33)), "INVALID_HEADER"),
            ("32 result bits and upper blocks of 33", header(25, u32(32)), "INVALID_HEADER"),
            ("upper blocks past the end", header(29, u64(4)), "INVALID_HEADER"),
            ("more bumped hashes than items", header(41, u64(301)), "INVALID_HEADER"),
            ("48 bytes", good[:48], "INVALID_HEADER"),
            ("50 bytes", good + b"\0", "INVALID_HEADER"),
        ]:
            refuses(self, code, what, RibbonFilter.decode_header, data)
            refuses(self, code, what, RibbonFilter.from_scandump, [(1, data)])
        whole = bytearray(header(25, u32(32)))
        whole[29:37] = u64(3)
        self.assertEqual(RibbonFilter.decode_header(bytes(whole)).byte_length, 3 * 32 * 16)
        body = SHAPES["few"]["body_bytes"]
        self.assertEqual(RibbonFilter.decode_header(good, max_bytes=body).byte_length, body)
        refuses(self, "OUT_OF_MEMORY", "max_bytes", RibbonFilter.decode_header, good, max_bytes=body - 1)

    def test_walks_header_first_body_whole_bumped_increasing(self):
        s = SHAPES["crowded"]
        head, chunk = s["pairs"][0], s["pairs"][1]
        refuses(self, "INCOMPLETE", "no pair", RibbonFilter.from_scandump, [])
        refuses(self, "INCOMPLETE", "the end pair alone", RibbonFilter.from_scandump, [(0, b"")])
        refuses(self, "NOT_FOUND", "a chunk before the header", RibbonFilter.from_scandump, [chunk, head])
        for it in (1.0, True, "01", None):
            refuses(self, "NOT_NUMERIC", "header iterator %r" % (it,), RibbonFilter.from_scandump, [(it, head[1]), chunk])
        refuses(self, "INCOMPLETE", "the header alone", RibbonFilter.from_scandump, [head])
        short = (chunk[0] - 1, chunk[1][:-1])
        refuses(self, "INCOMPLETE", "the last byte missing", RibbonFilter.from_scandump, [head, short])
        refuses(self, "INVALID_POSITION", "the body twice", RibbonFilter.from_scandump, [head, chunk, chunk])
        words = s["body_bytes"] - 8 * s["bumped"]
        body = chunk[1]
        swapped = body[:words] + body[words + 8 : words + 16] + body[words : words + 8] + body[words + 16 :]
        refuses(self, "BAD_DATA", "bumped hashes out of order", RibbonFilter.from_scandump, [head, (chunk[0], swapped)])
        repeated = body[: words + 8] + body[words : words + 8] + body[words + 16 :]
        refuses(self, "BAD_DATA", "a bumped hash twice", RibbonFilter.from_scandump, [head, (chunk[0], repeated)])
        for end in [(0, b""), (0, None), ("0", b"")]:
            f = RibbonFilter.from_scandump([("1", head[1]), (str(chunk[0]).encode(), body), end])
            self.assertIn(s["asked"][0], f)


if __name__ == "__main__":
    unittest.main()
