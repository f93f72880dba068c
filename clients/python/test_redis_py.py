#!/usr/bin/env python3
"""Client compatibility test: drive every method of redis-py's ``r.bf()`` and ``r.cf()`` against
redis-bf.

Starts its own redis-server (free port on 127.0.0.1, temporary directory) with the module loaded
from ``$BF_MODULE`` (default: ``../../target/release/libredis_bf.so`` relative to this file),
then runs the same checks under several client configurations:

* ``resp2``          protocol=2 (RESP2 on the wire, integers for 1/0, BF.INFO as a flat list)
* ``resp2-decoded``  protocol=2 with decode_responses=True (SCANDUMP must still give bytes)
* ``resp3``          protocol=3 (booleans, BF.INFO as a map, returned raw by redis-py)
* ``resp3-unified``  protocol=3, legacy_responses=False, decode_responses=True (BF.INFO parsed
                     into ``BFInfo``)
* ``default``        no protocol given (redis-py >= 8 speaks RESP3 and keeps RESP2-style shapes)

Every check asserts real values. The last line is ``N passed, N failed``; the exit code is
non-zero when anything failed. Environment: ``BF_MODULE`` (module path), ``REDIS_SERVER``
(server binary, default ``redis-server``).
"""

import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import redis
from redis.client import NEVER_DECODE
from redis.commands.bf.info import BFInfo, CFInfo
from redis.exceptions import ResponseError

from redis_bf_check import CuckooFilter

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.environ.get(
    "BF_MODULE", os.path.join(HERE, "..", "..", "target", "release", "libredis_bf.so")
)
SERVER = os.environ.get("REDIS_SERVER", "redis-server")

INFO_KEYS = [
    "Capacity",
    "Size",
    "Number of filters",
    "Number of items inserted",
    "Expansion rate",
]


# ---------------------------------------------------------------------------------------------
# Independent model of the module's sizing (`docs/format.md` ("Layer sizing", "The chain", "Memory accounting")), used
# to assert exact BF.INFO Size / Capacity values.

LN2 = 0.693147180559945
LN2_SQUARED = 0.480453013918201


def layer_bytes(capacity, error):
    bpe = abs(math.log(error) / LN2_SQUARED)
    bits = max(1, int(capacity * bpe))
    return -(-bits // 64) * 8


def expected_layers(capacity, error, expansion, nonscaling, n_layers):
    """(entries, error, bytes) of the first n_layers layers of a filter."""
    err = error if nonscaling else error * 0.5
    out = []
    cap = capacity
    for _ in range(n_layers):
        out.append((cap, err, layer_bytes(cap, err)))
        cap *= expansion
        err *= 0.5
    return out


def expected_size(layers):
    return 32 + sum(64 + b for (_, _, b) in layers)


# ---------------------------------------------------------------------------------------------
# Server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self):
        if not os.path.exists(MODULE):
            sys.exit(f"module not found: {MODULE} (run `cargo build --release` or set BF_MODULE)")
        self.dir = tempfile.mkdtemp(prefix="redis-bf-py-")
        self.proc = None
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [
                    SERVER,
                    "--port", str(self.port),
                    "--bind", "127.0.0.1",
                    "--dir", self.dir,
                    "--save", "",
                    "--appendonly", "no",
                    "--daemonize", "no",
                    "--logfile", os.path.join(self.dir, "server.log"),
                    "--loadmodule", os.path.abspath(MODULE),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._wait_ready():
                return
            self.proc.kill()
            self.proc.wait()
        self.stop()
        sys.exit("redis-server did not start")

    def _wait_ready(self):
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if redis.Redis(port=self.port, protocol=2).ping():
                    return True
            except redis.ConnectionError:
                time.sleep(0.05)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# A tiny test runner


class Failed(AssertionError):
    pass


def eq(actual, expected, what=""):
    if actual != expected:
        raise Failed(f"{what}: expected {expected!r}, got {actual!r}")


def check(cond, what):
    if not cond:
        raise Failed(what)


class Mode:
    def __init__(self, name, protocol, decode, legacy=True):
        self.name = name
        self.protocol = protocol
        self.decode = decode
        self.legacy = legacy

    def client(self, port):
        kw = {"port": port, "decode_responses": self.decode}
        if self.protocol is not None:
            kw["protocol"] = self.protocol
        if not self.legacy:
            kw["legacy_responses"] = False
        return redis.Redis(**kw)

    @property
    def resp3_wire(self):
        # redis-py >= 8 negotiates RESP3 when no protocol is given.
        return self.protocol != 2

    def flag(self, value, what):
        """Checks a 1/0 reply: an int in RESP2, a bool in RESP3 (RedisBloom >= 2.6)."""
        if self.protocol == 2:
            check(type(value) is int, f"{what}: RESP2 reply should be an integer, got {value!r}")
        elif self.protocol == 3:
            check(type(value) is bool, f"{what}: RESP3 reply should be a boolean, got {value!r}")
        return int(value)

    def flags(self, values, what):
        check(isinstance(values, list), f"{what}: expected a list, got {values!r}")
        return [self.flag(v, f"{what}[{i}]") for i, v in enumerate(values)]

    def ok(self, value, what):
        check(value in (b"OK", "OK", True), f"{what}: expected OK, got {value!r}")

    def info(self, reply, what):
        """BF.INFO through r.bf().info(): a BFInfo object, or the raw RESP3 map that redis-py
        returns in protocol=3 legacy mode. Returns a BFInfo either way after checking shape."""
        if isinstance(reply, BFInfo):
            return reply
        check(
            self.protocol == 3 and self.legacy,
            f"{what}: only protocol=3 legacy mode should return a raw reply, got {reply!r}",
        )
        check(isinstance(reply, dict), f"{what}: RESP3 BF.INFO should be a map, got {reply!r}")
        keys = [k.decode() if isinstance(k, bytes) else k for k in reply]
        eq(keys, INFO_KEYS, f"{what}: map keys")
        return BFInfo(reply)


def assert_info(info, capacity, size, filters, items, expansion, what):
    eq(info.capacity, capacity, f"{what}: capacity")
    eq(info.size, size, f"{what}: size")
    eq(info.filterNum, filters, f"{what}: filterNum")
    eq(info.insertedNum, items, f"{what}: insertedNum")
    eq(info.expansionRate, expansion, f"{what}: expansionRate")
    for field in ("capacity", "size", "filterNum", "insertedNum"):
        check(type(getattr(info, field)) is int, f"{what}: {field} should be an int")
    # BFInfo.get / [] are part of the public object too.
    eq(info.get("capacity"), capacity, f"{what}: info.get('capacity')")
    eq(info["insertedNum"], items, f"{what}: info['insertedNum']")


# ---------------------------------------------------------------------------------------------
# The checks. Each takes (r, mode) on a flushed database.


def t_create_default_expansion(r, m):
    m.ok(r.bf().create("c", 0.01, 1000), "create")
    lay = expected_layers(1000, 0.01, 2, False, 1)
    info = m.info(r.bf().info("c"), "info")
    assert_info(info, 1000, expected_size(lay), 1, 0, 2, "info")
    eq(expected_size(lay), 1480, "model sanity (1384-byte layer)")
    try:
        r.bf().create("c", 0.01, 1000)
        raise Failed("create on an existing key should fail")
    except ResponseError as e:
        eq(str(e), "item exists", "error text")


def t_reserve_alias_with_expansion(r, m):
    check(r.bf().reserve is not None, "reserve exists")
    m.ok(r.bf().reserve("e", 0.001, 100, expansion=4), "reserve expansion=4")
    info = m.info(r.bf().info("e"), "info")
    assert_info(info, 100, expected_size(expected_layers(100, 0.001, 4, False, 1)), 1, 0, 4, "e")
    # Grow it: 450 distinct adds need a second layer of 100 * 4 entries.
    items = [f"item-{i}" for i in range(450)]
    added = m.flags(r.bf().madd("e", *items), "madd")
    eq(len(added), 450, "madd reply length")
    n = sum(added)
    check(n >= 448, f"at most a couple of false positives among 450 fresh items, got {n} added")
    info = m.info(r.bf().info("e"), "info after growth")
    eq(info.filterNum, 2, "filters after > 100 items")
    eq(info.capacity, 100 + 400, "capacity 100 + 100*4")
    eq(info.insertedNum, n, "items")
    eq(info.size, expected_size(expected_layers(100, 0.001, 4, False, 2)), "size of 2 layers")
    eq(info.expansionRate, 4, "expansion")


def t_create_noscale(r, m):
    m.ok(r.bf().create("n", 0.01, 3, noScale=True), "create noScale")
    info = m.info(r.bf().info("n"), "info")
    assert_info(info, 3, 104, 1, 0, None, "nonscaling info")
    eq(expected_size(expected_layers(3, 0.01, 2, True, 1)), 104, "model sanity")
    # Fill it, then the next new item is refused inside the array (the array stops there).
    eq(m.flags(r.bf().madd("n", "a", "b", "c"), "madd"), [1, 1, 1], "fill")
    reply = r.bf().madd("n", "d", "a", "e")
    check(isinstance(reply, list), f"madd on full filter: list, got {reply!r}")
    eq(len(reply), 1, f"array stops at the first 'full' error: {reply!r}")
    check(isinstance(reply[0], ResponseError), f"error element, got {reply[0]!r}")
    eq(str(reply[0]), "non scaling filter is full", "inline error text")
    try:
        r.bf().add("n", "zz")
        raise Failed("add on a full nonscaling filter should raise")
    except ResponseError as e:
        eq(str(e), "non scaling filter is full", "add error")
    # Existing items are still answered (no growth, no error).
    eq(m.flag(r.bf().add("n", "a"), "add existing"), 0, "add existing on full filter")
    eq(r.bf().card("n"), 3, "card")


def t_create_expansion_with_noscale_rejected(r, m):
    try:
        r.bf().create("x", 0.01, 100, expansion=2, noScale=True)
        raise Failed("EXPANSION with NONSCALING should fail")
    except ResponseError as e:
        eq(str(e), "Nonscaling filters cannot expand", "error text")
    eq(r.exists("x"), 0, "nothing created")


def t_add_exists(r, m):
    eq(m.flag(r.bf().add("a", "hello"), "add"), 1, "add new")
    eq(m.flag(r.bf().add("a", "hello"), "add"), 0, "add again")
    eq(m.flag(r.bf().exists("a", "hello"), "exists"), 1, "exists added")
    eq(m.flag(r.bf().exists("a", "nope"), "exists"), 0, "exists other")
    eq(m.flag(r.bf().exists("missing", "x"), "exists"), 0, "exists on missing key is 0")
    # Auto-created with the defaults: capacity 100, error 0.01, expansion 2 → Size 240.
    info = m.info(r.bf().info("a"), "info")
    assert_info(info, 100, 240, 1, 1, 2, "auto-created")
    # Binary items round-trip exactly.
    blob = bytes(range(256))
    eq(m.flag(r.bf().add("a", blob), "add blob"), 1, "add binary")
    eq(m.flag(r.bf().exists("a", blob), "exists blob"), 1, "exists binary")
    eq(m.flag(r.bf().exists("a", blob[:-1]), "exists prefix"), 0, "prefix is different")
    eq(r.type("a"), b"MBbloom--" if not m.decode else "MBbloom--", "TYPE")


def t_madd_mexists(r, m):
    eq(m.flags(r.bf().madd("m", "a", "b", "a", "c"), "madd"), [1, 1, 0, 1], "madd")
    eq(m.flags(r.bf().mexists("m", "a", "x", "c", "b"), "mexists"), [1, 0, 1, 1], "mexists")
    eq(m.flags(r.bf().mexists("missing", "a", "b"), "mexists missing"), [0, 0], "missing key")
    eq(r.bf().card("m"), 3, "card counts distinct items")
    many = [f"k{i}" for i in range(1000)]
    r.bf().madd("m", *many)
    got = m.flags(r.bf().mexists("m", *many), "mexists many")
    eq(sum(got), 1000, "no false negatives")


def t_insert_defaults(r, m):
    eq(m.flags(r.bf().insert("i", ["a", "b", "a"]), "insert"), [1, 1, 0], "insert")
    info = m.info(r.bf().info("i"), "info")
    assert_info(info, 100, 240, 1, 2, 2, "insert defaults")
    # A single item still gives an array.
    eq(m.flags(r.bf().insert("i", ["c"]), "insert one"), [1], "one-item insert is an array")


def t_insert_capacity_error_expansion(r, m):
    reply = r.bf().insert("ie", ["x", "y"], capacity=50, error=0.001, expansion=3)
    eq(m.flags(reply, "insert"), [1, 1], "insert with options")
    lay = expected_layers(50, 0.001, 3, False, 1)
    assert_info(m.info(r.bf().info("ie"), "info"), 50, expected_size(lay), 1, 2, 3, "ie")
    # Creation options are ignored once the key exists.
    r.bf().insert("ie", ["z"], capacity=999999, error=0.5, expansion=9)
    info = m.info(r.bf().info("ie"), "info")
    eq((info.capacity, info.expansionRate, info.insertedNum), (50, 3, 3), "existing key kept")
    # Grow past 50: second layer has 150 entries.
    r.bf().insert("ie", [f"g{i}" for i in range(60)])
    info = m.info(r.bf().info("ie"), "info")
    eq(info.filterNum, 2, "grew")
    eq(info.capacity, 200, "50 + 150")
    eq(info.size, expected_size(expected_layers(50, 0.001, 3, False, 2)), "size")


def t_insert_nocreate(r, m):
    try:
        r.bf().insert("nc", ["a"], noCreate=True)
        raise Failed("NOCREATE on a missing key should fail")
    except ResponseError as e:
        eq(str(e), "not found", "error text")
    eq(r.exists("nc"), 0, "not created")
    r.bf().create("nc", 0.01, 10)
    eq(m.flags(r.bf().insert("nc", ["a", "b"], noCreate=True), "insert"), [1, 1], "existing")
    eq(r.bf().card("nc"), 2, "card")


def t_insert_noscale(r, m):
    reply = r.bf().insert("ns", ["a", "b", "c", "d", "d"], capacity=3, error=0.01, noScale=True)
    check(isinstance(reply, list), f"list reply, got {reply!r}")
    eq(len(reply), 4, f"stops after the first full error: {reply!r}")
    eq(m.flags(reply[:3], "first three"), [1, 1, 1], "first three added")
    check(isinstance(reply[3], ResponseError), f"4th element is an error: {reply!r}")
    eq(str(reply[3]), "non scaling filter is full", "error text")
    assert_info(m.info(r.bf().info("ns"), "info"), 3, 104, 1, 3, None, "nonscaling insert")


def t_insert_all_options(r, m):
    # Every option at once, in the order redis-py sends them.
    reply = r.bf().insert(
        "all", ["p", "q"], capacity=10, error=0.05, noCreate=None, expansion=2, noScale=True
    )
    eq(m.flags(reply, "insert"), [1, 1], "insert")
    lay = expected_layers(10, 0.05, 2, True, 1)
    assert_info(m.info(r.bf().info("all"), "info"), 10, expected_size(lay), 1, 2, None, "all")


def t_card(r, m):
    eq(r.bf().card("nothing"), 0, "card of a missing key")
    r.bf().madd("cd", *[f"v{i}" for i in range(250)])
    n = r.bf().card("cd")
    check(isinstance(n, int), f"card is an int: {n!r}")
    info = m.info(r.bf().info("cd"), "info")
    eq(n, info.insertedNum, "card == insertedNum")
    check(248 <= n <= 250, f"card close to 250: {n}")
    eq(info.filterNum, 2, "auto-created filter grew to 2 layers (100 + 200)")
    eq(info.capacity, 300, "capacity")
    r.set("str", "v")
    try:
        r.bf().card("str")
        raise Failed("card on a string should fail")
    except ResponseError as e:
        check(str(e).startswith("WRONGTYPE"), f"WRONGTYPE: {e}")


def t_info_errors(r, m):
    try:
        r.bf().info("nothing")
        raise Failed("info on a missing key should fail")
    except ResponseError as e:
        eq(str(e), "not found", "error text")


def scandump_all(r, m, key):
    """Full SCANDUMP walk through r.bf().scandump(); returns [(iter, bytes)]."""
    chunks = []
    it = 0
    for _ in range(100000):
        reply = r.bf().scandump(key, it)
        check(isinstance(reply, list) and len(reply) == 2, f"scandump pair: {reply!r}")
        it, data = reply
        check(type(it) is int, f"iterator is an int: {it!r}")
        check(isinstance(data, bytes), f"chunk is bytes even when decoding: {type(data)}")
        if it == 0:
            eq(data, b"", "final chunk is an empty bulk string")
            return chunks
        chunks.append((it, data))
    raise Failed("scandump did not finish")


def raw_debug(r, key):
    return r.execute_command("BF.DEBUG", key)


def t_scandump_loadchunk(r, m):
    r.bf().create("src", 0.001, 100, expansion=2)
    items = [f"user:{i}".encode() for i in range(700)] + [bytes([i, 0, 255 - i]) for i in range(50)]
    r.bf().madd("src", *items)
    chunks = scandump_all(r, m, "src")
    info = m.info(r.bf().info("src"), "info")
    eq(len(chunks), 1 + info.filterNum, "header + one chunk per layer")
    eq(chunks[0][0], 1, "header comes with iterator 1")
    eq(len(chunks[0][1]), 20 + 53 * info.filterNum, "header length")
    eq(sum(len(d) for _, d in chunks[1:]) + 64 * info.filterNum + 32, info.size, "bytes + overhead")
    for it, data in chunks:
        m.ok(r.bf().loadchunk("dst", it, data), f"loadchunk {it}")
    got = m.flags(r.bf().mexists("dst", *items), "mexists on copy")
    eq(sum(got), len(items), "every item present in the copy")
    eq(m.flag(r.bf().exists("dst", items[123]), "exists"), 1, "exists on the copy")
    probes = [f"other:{i}" for i in range(2000)]
    eq(
        m.flags(r.bf().mexists("dst", *probes), "copy"),
        m.flags(r.bf().mexists("src", *probes), "src"),
        "copy answers exactly as the original on non-members",
    )
    info2 = m.info(r.bf().info("dst"), "info copy")
    for f in ("capacity", "size", "filterNum", "insertedNum", "expansionRate"):
        eq(getattr(info2, f), getattr(info, f), f"copy {f}")
    eq(raw_debug(r, "dst"), raw_debug(r, "src"), "BF.DEBUG identical")
    eq(r.bf().card("dst"), r.bf().card("src"), "card identical")
    # The copy keeps growing like the original.
    eq(m.flag(r.bf().add("dst", "fresh-item-after-restore"), "add"), 1, "add to copy")


def t_scandump_large_multichunk(r, m):
    # 15M entries at 0.005 per layer ≈ 20.7 MB of bits: more than one 16 MiB chunk.
    r.bf().create("big", 0.01, 15_000_000)
    items = [f"b{i}" for i in range(5000)]
    r.bf().madd("big", *items)
    chunks = scandump_all(r, m, "big")
    eq(len(chunks), 3, "header + 16 MiB chunk + remainder")
    eq(len(chunks[1][1]), 16 * 1024 * 1024, "first data chunk is 16 MiB")
    for it, data in chunks:
        m.ok(r.bf().loadchunk("big2", it, data), f"loadchunk {it}")
    eq(sum(m.flags(r.bf().mexists("big2", *items), "copy")), 5000, "all items in the copy")
    eq(raw_debug(r, "big2"), raw_debug(r, "big"), "BF.DEBUG identical")
    r.delete("big", "big2")


def t_scandump_nonscaling_roundtrip(r, m):
    r.bf().create("nsrc", 0.01, 20, noScale=True)
    r.bf().madd("nsrc", *[f"z{i}" for i in range(20)])
    for it, data in scandump_all(r, m, "nsrc"):
        r.bf().loadchunk("ndst", it, data)
    info = m.info(r.bf().info("ndst"), "info")
    assert_info(info, 20, m.info(r.bf().info("nsrc"), "src").size, 1, 20, None, "nonscaling copy")
    eq(m.flag(r.bf().exists("ndst", "z7"), "exists"), 1, "exists on copy")


def t_scandump_errors(r, m):
    try:
        r.bf().scandump("nothing", 0)
        raise Failed("scandump on a missing key should fail")
    except ResponseError as e:
        eq(str(e), "not found", "error text")
    try:
        r.bf().loadchunk("nothing2", 1, b"\x00" * 19)
        raise Failed("bad header should fail")
    except ResponseError as e:
        eq(str(e), "received bad data", "error text")


# ---------------------------------------------------------------------------------------------
# Cuckoo filters: r.cf(). Expected values are RedisBloom's replies (its recorded CF batteries;
# the whole suite also passes with BF_MODULE set to RedisBloom 2.8.20's redisbloom.so):
# CF.INFO Size = 40 + 16 x sub-filters + table bytes; buckets = next power of two of
# capacity / bucket size. RESP3: CF.ADD / ADDNX / INSERT / EXISTS / MEXISTS / DEL answer
# booleans, CF.INSERTNX and CF.COUNT integers.

CF_INFO_KEYS = [
    "Size",
    "Number of buckets",
    "Number of filters",
    "Number of items inserted",
    "Number of items deleted",
    "Bucket size",
    "Expansion rate",
    "Max iterations",
]


def cf_info(r, m, key):
    """CF.INFO through r.cf().info() as (size, buckets, filters, inserted, deleted, bucket size,
    expansion, max iterations): a CFInfo, or the raw RESP3 map of protocol=3 legacy mode."""
    reply = r.cf().info(key)
    if not isinstance(reply, CFInfo):
        check(m.protocol == 3 and m.legacy, f"CF.INFO: only protocol=3 legacy mode returns a raw reply, got {reply!r}")
        check(isinstance(reply, dict), f"RESP3 CF.INFO should be a map, got {reply!r}")
        eq([k.decode() if isinstance(k, bytes) else k for k in reply], CF_INFO_KEYS, "CF.INFO map keys")
        reply = CFInfo(reply)
    out = (reply.size, reply.bucketNum, reply.filterNum, reply.insertedNum, reply.deletedNum,
           reply.bucketSize, reply.expansionRate, reply.maxIteration)
    for v in out:
        check(type(v) is int, f"CF.INFO fields are ints: {out!r}")
    return out


def cf_error(fn, text, what):
    try:
        fn()
    except ResponseError as e:
        eq(str(e), text, f"{what}: error text")
        return
    raise Failed(f"{what}: should fail with {text!r}")


def cf_full_flag(m, value, what):
    """CF.INSERT's -1 for an item that did not fit: an integer in RESP2, false in RESP3."""
    if m.protocol == 2:
        eq(value, -1, what)
    else:
        check(value is False, f"{what}: RESP3 should give false, got {value!r}")


def cf_scandump_all(r, m, key):
    """The whole CF.SCANDUMP walk. redis-py's r.cf().scandump() does not keep the chunks binary
    under decode_responses (unlike r.bf().scandump()), so decoding modes ask for NEVER_DECODE."""
    chunks, it = [], 0
    for _ in range(100000):
        if m.decode:
            reply = r.execute_command("CF.SCANDUMP", key, it, **{NEVER_DECODE: []})
        else:
            reply = r.cf().scandump(key, it)
        check(isinstance(reply, list) and len(reply) == 2, f"scandump pair: {reply!r}")
        it, data = reply
        check(type(it) is int, f"iterator is an int: {it!r}")
        if it == 0:
            eq(data, None, "the walk ends with [0, nil]")
            return chunks
        check(isinstance(data, bytes), f"chunk is bytes: {type(data)}")
        chunks.append((it, data))
    raise Failed("scandump did not finish")


def t_cf_reserve_info(r, m):
    eq(r.cf().create("c", 1000), True, "create")
    eq(cf_info(r, m, "c"), (1080, 512, 1, 0, 0, 2, 1, 20), "defaults: 512 buckets of 2")
    eq(r.cf().reserve("c2", 100, expansion=2, bucket_size=4, max_iterations=5), True, "reserve with options")
    eq(cf_info(r, m, "c2"), (184, 32, 1, 0, 0, 4, 2, 5), "32 buckets of 4")
    cf_error(lambda: r.cf().create("c", 100), "item exists", "create on an existing key")
    cf_error(lambda: r.cf().info("nothing"), "not found", "info on a missing key")
    eq(r.type("c"), "MBbloomCF" if m.decode else b"MBbloomCF", "TYPE")


def t_cf_add_addnx_exists(r, m):
    eq(m.flag(r.cf().add("a", "x"), "add"), 1, "add")
    eq(m.flag(r.cf().add("a", "x"), "add again"), 1, "a second copy is stored")
    eq(r.cf().count("a", "x"), 2, "count")
    eq(m.flag(r.cf().addnx("a", "x"), "addnx present"), 0, "addnx of a present item")
    eq(m.flag(r.cf().addnx("a", "y"), "addnx new"), 1, "addnx of a new item")
    eq(m.flag(r.cf().exists("a", "x"), "exists"), 1, "exists")
    eq(m.flag(r.cf().exists("a", "zz"), "exists other"), 0, "exists of another item")
    eq(m.flag(r.cf().exists("missing", "x"), "exists missing"), 0, "exists on a missing key")
    eq(m.flags(r.cf().mexists("a", "x", "zz", "y"), "mexists"), [1, 0, 1], "mexists")
    eq(m.flags(r.cf().mexists("missing", "x", "y"), "mexists missing"), [0, 0], "mexists on a missing key")
    # Auto-created: capacity 1024, bucket size 2.
    eq(cf_info(r, m, "a"), (1080, 512, 1, 3, 0, 2, 1, 20), "auto-created")
    blob = bytes(range(256))
    eq(m.flag(r.cf().add("a", blob), "add blob"), 1, "binary item")
    eq(m.flag(r.cf().exists("a", blob), "exists blob"), 1, "binary item present")
    eq(r.cf().count("a", blob[:-1]), 0, "a prefix is another item")
    r.set("str", "v")
    try:
        r.cf().add("str", "x")
        raise Failed("CF.ADD on a string should fail")
    except ResponseError as e:
        check(str(e).startswith("WRONGTYPE"), f"WRONGTYPE: {e}")
    eq(m.flag(r.cf().exists("str", "x"), "exists on a string"), 0, "CF.EXISTS answers 0 for another type")


def t_cf_insert(r, m):
    eq(m.flags(r.cf().insert("i", ["a", "b", "a"]), "insert"), [1, 1, 1], "insert stores every copy")
    eq(cf_info(r, m, "i"), (1080, 512, 1, 3, 0, 2, 1, 20), "insert defaults")
    eq(m.flags(r.cf().insert("i2", ["a"], capacity=100), "insert capacity"), [1], "one item: an array")
    eq(cf_info(r, m, "i2"), (184, 64, 1, 1, 0, 2, 1, 20), "CAPACITY 100: 64 buckets")
    r.cf().insert("i2", ["b"], capacity=100000)
    eq(cf_info(r, m, "i2")[:4], (184, 64, 1, 2), "options are ignored once the key exists")
    cf_error(lambda: r.cf().insert("nc", ["a"], nocreate=True), "not found", "NOCREATE on a missing key")
    eq(r.exists("nc"), 0, "nothing created")
    eq(m.flags(r.cf().insert("i2", ["c"], nocreate=True), "nocreate existing"), [1], "NOCREATE on an existing key")


def t_cf_insertnx(r, m):
    reply = r.cf().insertnx("n", ["a", "b", "a"], capacity=200)
    eq(reply, [1, 1, 0], "insertnx: integers in RESP2 and RESP3")
    for v in reply:
        check(type(v) is int, f"CF.INSERTNX answers integers: {reply!r}")
    eq(cf_info(r, m, "n"), (312, 128, 1, 2, 0, 2, 1, 20), "CAPACITY 200: 128 buckets")
    cf_error(lambda: r.cf().insertnx("nc", ["a"], nocreate=True), "not found", "NOCREATE on a missing key")


def t_cf_full(r, m):
    eq(r.cf().reserve("full", 4, bucket_size=2, max_iterations=1, expansion=0), True, "reserve")
    for i in range(4):
        eq(m.flag(r.cf().add("full", f"x:{i}"), f"add x:{i}"), 1, f"x:{i} fits")
    for i in range(4, 8):
        cf_error(lambda: r.cf().add("full", f"x:{i}"), "Filter is full", f"add x:{i}")
    reply = r.cf().insert("full", ["y:0", "y:1", "x:0"])
    eq(len(reply), 3, "insert on a full filter: one answer per item")
    for j, v in enumerate(reply):
        cf_full_flag(m, v, f"insert[{j}]")
    eq(r.cf().insertnx("full", ["x:0", "y:2"]), [0, -1], "insertnx: 0 present, -1 full (integers in RESP3 too)")
    eq(m.flag(r.cf().addnx("full", "x:0"), "addnx present"), 0, "addnx of a present item on a full filter")
    cf_error(lambda: r.cf().addnx("full", "y:3"), "Filter is full", "addnx of a new item")
    eq(cf_info(r, m, "full"), (60, 2, 1, 4, 0, 2, 0, 1), "full filter")
    eq(m.flags(r.cf().mexists("full", "x:0", "x:1", "x:2", "x:3", "x:4", "y:0"), "mexists"), [1, 1, 1, 1, 0, 0], "contents")


def t_cf_del_count(r, m):
    r.cf().reserve("dl", 100)
    eq(m.flag(r.cf().delete("dl", "a"), "del absent"), 0, "delete of an absent item")
    r.cf().add("dl", "a")
    r.cf().add("dl", "a")
    eq(r.cf().count("dl", "a"), 2, "two copies")
    eq(m.flag(r.cf().delete("dl", "a"), "del"), 1, "delete one copy")
    eq(r.cf().count("dl", "a"), 1, "one copy left")
    eq(m.flag(r.cf().delete("dl", "a"), "del"), 1, "delete the last copy")
    eq(m.flag(r.cf().delete("dl", "a"), "del"), 0, "nothing left to delete")
    eq(m.flag(r.cf().exists("dl", "a"), "exists"), 0, "gone")
    eq(cf_info(r, m, "dl"), (184, 64, 1, 0, 2, 2, 1, 20), "0 items, 2 deletions")
    eq(r.cf().count("missing", "a"), 0, "count on a missing key")
    cf_error(lambda: r.cf().delete("missing", "a"), "Not found", "delete on a missing key")
    # A filter with no items dumps nothing.
    eq(cf_scandump_all(r, m, "dl"), [], "CF.SCANDUMP of an empty filter: [0, nil] at once")
    eq(r.execute_command("CF.COMPACT", "dl"), "OK" if m.decode else b"OK", "CF.COMPACT")
    eq(cf_info(r, m, "dl")[4], 0, "compaction resets the deletion count")


def t_cf_scandump_loadchunk(r, m):
    r.cf().reserve("src", 64, expansion=2)
    items = [f"user:{i}".encode() for i in range(1000)] + [bytes([i, 0, 255 - i]) for i in range(50)]
    for i in range(0, len(items), 250):
        r.cf().insert("src", items[i : i + 250])
    info = cf_info(r, m, "src")
    chunks = cf_scandump_all(r, m, "src")
    eq(len(chunks), 1 + info[2], "header + one chunk per sub-filter")
    eq((chunks[0][0], len(chunks[0][1])), (1, 38), "header: iterator 1, 38 bytes")
    eq(sum(len(d) for _, d in chunks[1:]) + 40 + 16 * info[2], info[0], "tables + records = Size")
    eq([len(d) for _, d in chunks[1:]], [64 * 2**i for i in range(info[2])], "sub-filter i: 32 x 2^i buckets of 2")
    for it, data in chunks:
        m.ok(r.cf().loadchunk("dst", it, data), f"loadchunk {it}")
    eq(cf_info(r, m, "dst"), info, "the copy's CF.INFO")
    eq(r.execute_command("CF.DEBUG", "dst"), r.execute_command("CF.DEBUG", "src"), "CF.DEBUG identical")
    probes = items + [f"other:{i}" for i in range(3000)]
    copy = m.flags(r.cf().mexists("dst", *probes), "mexists copy")
    eq(copy, m.flags(r.cf().mexists("src", *probes), "mexists src"), "the copy answers as the original")
    eq(sum(copy[: len(items)]), len(items), "every item present in the copy")
    # The local checker rebuilt from the same walk answers as CF.MEXISTS and CF.COUNT.
    local = CuckooFilter.from_scandump(chunks)
    eq([int(local.contains(p)) for p in probes], copy, "redis_bf_check.CuckooFilter == CF.MEXISTS")
    eq([local.count(p) for p in probes[:300]], [r.cf().count("src", p) for p in probes[:300]], "count == CF.COUNT")
    eq(m.flag(r.cf().add("dst", "after-restore"), "add to copy"), 1, "the copy takes new items")
    cf_error(lambda: r.cf().loadchunk("dst", 1, chunks[0][1]), "item exists", "a header onto an existing key")
    cf_error(lambda: r.cf().loadchunk("x", 1, b"\x00" * 37), "Invalid header", "a short header")
    cf_error(lambda: r.cf().scandump("nothing", 0), "not found", "scandump of a missing key")


def t_protocol(r, m):
    info = r.client_info()
    eq(int(info["resp"]), 3 if m.resp3_wire else 2, "negotiated protocol")


TESTS = [
    t_protocol,
    t_create_default_expansion,
    t_reserve_alias_with_expansion,
    t_create_noscale,
    t_create_expansion_with_noscale_rejected,
    t_add_exists,
    t_madd_mexists,
    t_insert_defaults,
    t_insert_capacity_error_expansion,
    t_insert_nocreate,
    t_insert_noscale,
    t_insert_all_options,
    t_card,
    t_info_errors,
    t_scandump_loadchunk,
    t_scandump_large_multichunk,
    t_scandump_nonscaling_roundtrip,
    t_scandump_errors,
    t_cf_reserve_info,
    t_cf_add_addnx_exists,
    t_cf_insert,
    t_cf_insertnx,
    t_cf_full,
    t_cf_del_count,
    t_cf_scandump_loadchunk,
]

MODES = [
    Mode("resp2", 2, False),
    Mode("resp2-decoded", 2, True),
    Mode("resp3", 3, False),
    Mode("resp3-unified", 3, True, legacy=False),
    Mode("default", None, False),
]


def main():
    print(f"redis-py {redis.__version__}, module {os.path.abspath(MODULE)}")
    server = Server()
    passed = failed = 0
    per_mode = {}
    try:
        for mode in MODES:
            r = mode.client(server.port)
            mp = mf = 0
            for t in TESTS:
                r.flushall()
                name = f"{mode.name}::{t.__name__[2:]}"
                try:
                    t(r, mode)
                    print(f"PASS {name}")
                    mp += 1
                except Exception as e:  # noqa: BLE001 - report any failure and go on
                    print(f"FAIL {name}: {e}")
                    if not isinstance(e, Failed):
                        traceback.print_exc(limit=3)
                    mf += 1
            r.close()
            per_mode[mode.name] = (mp, mf)
            passed += mp
            failed += mf
    finally:
        server.stop()
    for name, (p, f) in per_mode.items():
        print(f"  {name}: {p} passed, {f} failed")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
