"""Proof of identity of the pure-Python checker against a live server: for filters with 1, 3 and
8 layers, NONSCALING, EXPANSION 1 and 4, a legacy power-of-two / 32-bit-hash filter, and every
Bloom key of the RedisBloom fixture RDB, ``BloomFilter.contains`` answers exactly what
BF.MEXISTS answers on 200 000 probes (members, strangers, UTF-8 and raw bytes). The dumps are
walked with redis-py's ``r.bf().scandump``.

Starts its own redis-server (free 127.0.0.1 port, temporary directory) with $BF_MODULE (default
target/release/libredis_bf.so). Run with clients/python/check_run.sh."""

import math
import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest

import redis

from redis_bf_check import BloomFilter, ScandumpError
from test_check import CHUNKS, HEADER, HOSTILE_HEADERS, ITERATORS, WALK

#: What BF.LOADCHUNK answers for each of the checker's codes.
SERVER_TEXT = {
    "BAD_DATA": "ERR received bad data",
    "NO_LINK": "ERR invalid offset - no link found",
    "TOO_BIG": "ERR invalid chunk - Too big for current filter",
    "NOT_NUMERIC": "ERR Second argument must be numeric",
    "OUT_OF_MEMORY": "ERR received bad data",
    "NOT_FOUND": "ERR not found",
}

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULE = os.path.abspath(os.environ.get("BF_MODULE", os.path.join(ROOT, "target", "release", "libredis_bf.so")))
SERVER = os.environ.get("REDIS_SERVER", "redis-server")
PROBES = 200_000


class Server:
    def __init__(self, rdb=None):
        self.dir = tempfile.mkdtemp(prefix="redis-bf-check-")
        if rdb:
            shutil.copy(rdb, os.path.join(self.dir, "dump.rdb"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--loadmodule", MODULE],
            stdout=subprocess.DEVNULL,
        )
        self.r = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                self.r.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def scandump(r, key, cuckoo=False):
    """The (iterator, bytes) pairs of a whole BF.SCANDUMP walk (CF.SCANDUMP when cuckoo), as
    redis-py yields them."""
    chunks = []
    it = 0
    while True:
        it, data = (r.cf() if cuckoo else r.bf()).scandump(key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def probes(members, seed, count=PROBES):
    """count probes: every fourth a member (when there are members), the rest strangers (ASCII,
    UTF-8, and raw bytes of 0-40 bytes), the same for the same seed."""
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        if members and i % 4 == 0:
            out.append(members[rnd.randrange(len(members))])
        elif i % 4 == 1:
            out.append("stranger:%d:%d" % (seed, i))
        elif i % 4 == 2:
            out.append("名前-%d-ユーザー" % i)
        else:
            out.append(bytes(rnd.randrange(256) for _ in range(rnd.randrange(41))))
    return out


def compare(r, key, f, items):
    """(positives, mismatches) of contains() vs BF.MEXISTS over items."""
    positives = mismatches = 0
    for i in range(0, len(items), 1000):
        batch = items[i : i + 1000]
        server = r.bf().mexists(key, *batch)
        for item, s in zip(batch, server):
            local = f.contains(item)
            positives += local
            mismatches += int(local) != s
    return positives, mismatches


def legacy_header(capacity, error):
    """A LOADCHUNK header of options 0: one power-of-two layer, 32-bit MurmurHash2."""
    bpe = abs(math.log(error) / 0.480453013918201)
    hashes = math.ceil(0.693147180559945 * bpe)
    product = capacity * bpe
    n2 = math.frexp(product)[1]  # binary exponent + 1
    bits = 1 << n2
    entries = capacity + int(int(bits - product) / bpe)
    nbytes = -(-bits // 64) * 8
    return struct.pack("<QIII", 0, 1, 0, 2) + struct.pack(
        "<QQQddIQB", nbytes, nbytes * 8, 0, error, bpe, hashes, entries, n2
    )


CASES = [
    ("id:one", ("0.01", "300000"), 250_000, 1),
    ("id:three", ("0.01", "100000"), 350_000, 3),
    ("id:eight", ("0.05", "100"), 20_000, 8),
    ("id:nonscaling", ("0.02", "30000", "NONSCALING"), 29_000, 1),
    ("id:exp1", ("0.01", "2000", "EXPANSION", "1"), 9_000, 5),
    ("id:exp4", ("0.001", "1000", "EXPANSION", "4"), 30_000, 4),
]


class Identity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MODULE):
            raise RuntimeError("module not found: %s (cargo build --release)" % MODULE)
        cls.server = Server()
        cls.r = cls.server.r

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_created_filters(self):
        r = self.r
        for key, reserve, count, layers in CASES:
            with self.subTest(key=key):
                r.execute_command("BF.RESERVE", key, *reserve)
                members = ["%s:member:%d" % (key, i) for i in range(count)]
                for i in range(0, count, 1000):
                    r.bf().madd(key, *members[i : i + 1000])
                f = BloomFilter.from_scandump(scandump(r, key))
                self.assertEqual(f.layer_count, layers)
                self.assertEqual(f.size, r.bf().card(key))
                positives, mismatches = compare(r, key, f, probes(members, count))
                self.assertEqual(mismatches, 0)
                self.assertGreaterEqual(positives, PROBES // 4)
                print("%s: %d layers, %d bytes, %d positives, 0 mismatches" % (key, layers, f.byte_length, positives))

    def test_legacy_filter(self):
        r = self.r
        self.assertTrue(r.bf().loadchunk("id:legacy", 1, legacy_header(1000, 0.01)))
        members = ["legacy:%d" % i for i in range(6000)]
        for i in range(0, len(members), 1000):
            r.bf().madd("id:legacy", *members[i : i + 1000])
        f = BloomFilter.from_scandump(scandump(r, "id:legacy"))
        self.assertEqual(f.options, 0)
        self.assertGreaterEqual(f.layer_count, 2)
        self.assertTrue(all(layer.n2 > 0 for layer in f.layers))
        self.assertEqual(compare(r, "id:legacy", f, probes(members, 7))[1], 0)

    def test_fixture_rdb(self):
        fx = Server(rdb=os.path.join(ROOT, "tests", "fixtures", "redisbloom", "dump.rdb"))
        try:
            blooms = 0
            for key in sorted(fx.r.keys("*")):
                if fx.r.type(key) != b"MBbloom--":
                    continue
                f = BloomFilter.from_scandump(scandump(fx.r, key))
                self.assertEqual(compare(fx.r, key, f, probes([], blooms + 1))[1], 0, key)
                blooms += 1
            self.assertEqual(blooms, 11)
        finally:
            fx.stop()


class ServerVerdicts(unittest.TestCase):
    """The checker refuses what BF.LOADCHUNK refuses, with the matching code: every hostile
    header, iterator and chunk of test_check's tables is also sent to the server."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.r = cls.server.r

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def loadchunk(self, key, it, data):
        """The server's reply: "OK" or the error text."""
        try:
            return "OK" if self.r.execute_command("BF.LOADCHUNK", key, it, data) in (b"OK", True) else "?"
        except redis.ResponseError as e:
            return str(e) if str(e).startswith("ERR") else "ERR " + str(e)

    def local(self, fn, *args):
        try:
            fn(*args)
            return None
        except ScandumpError as e:
            return e.code

    def gv2(self, key):
        """A key holding gv2 with its bits clear (its header loaded)."""
        self.r.delete(key)
        self.assertEqual(self.loadchunk(key, 1, HEADER), "OK")
        return key

    def test_headers(self):
        for name, h, code, _words, server in HOSTILE_HEADERS:
            with self.subTest(name):
                self.r.delete("v:h")
                reply = self.loadchunk("v:h", 1, h)
                self.assertEqual(self.local(BloomFilter.decode_header, h), code)
                if server is not None:
                    self.assertIn(server, reply)
                if code != "UNSUPPORTED" and server is not None:
                    self.assertEqual(reply, SERVER_TEXT[code])

    def test_real_window_dump_is_unsupported(self):
        r = self.r
        r.execute_command("BF.RESERVE", "v:w", "0.01", "1000", "WINDOW", "60000")
        r.bf().add("v:w", "x")
        chunks = scandump(r, "v:w")
        self.assertEqual(chunks[0][1][:8], b"BFwindow")
        with self.assertRaises(ScandumpError) as cm:
            BloomFilter.from_scandump(chunks)
        self.assertEqual(cm.exception.code, "UNSUPPORTED")
        self.assertIn("this is a window filter dump (header begins with BFwindow", str(cm.exception))
        # The server loads the same walk.
        for it, data in chunks:
            self.assertEqual(self.loadchunk("v:w2", it, data), "OK")

    def test_iterators(self):
        for value, code, _words in ITERATORS:
            if value is None or isinstance(value, bool):
                continue  # redis-py cannot send them
            with self.subTest(value=value):
                reply = self.loadchunk(self.gv2("v:i"), value, b"")
                f = BloomFilter.decode_header(HEADER)
                self.assertEqual(self.local(f.apply_chunk, value, b""), code)
                self.assertEqual(reply, "OK" if code is None else SERVER_TEXT[code])

    def test_chunks(self):
        for it, data, code, _words in CHUNKS:
            with self.subTest(it=it, data=data):
                reply = self.loadchunk(self.gv2("v:c"), it, data)
                f = BloomFilter.decode_header(HEADER)
                self.assertEqual(self.local(f.apply_chunk, it, data), code)
                self.assertEqual(reply, "OK" if code is None else SERVER_TEXT[code])

    def test_chunk_before_header(self):
        self.r.delete("v:n")
        self.assertEqual(self.loadchunk("v:n", WALK[1][0], WALK[1][1]), SERVER_TEXT["NOT_FOUND"])
        with self.assertRaises(ScandumpError) as cm:
            BloomFilter.from_scandump(WALK[1:])
        self.assertEqual(cm.exception.code, "NOT_FOUND")


if __name__ == "__main__":
    unittest.main()
