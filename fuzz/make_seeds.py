#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets from the golden vectors.

    python3 fuzz/make_seeds.py [OUT_DIR]     (default fuzz/corpus)

Reads tests/data/golden-vectors.json (RedisBloom-made SCANDUMP headers and chunks) and writes,
one file per seed, named by the SHA-1 of its content (so reruns add nothing twice):

  OUT_DIR/dump_header/   the four real headers, plus variants with other option bits
  OUT_DIR/chunk_apply/   u16 LE header length, header, then the real chunks as
                         (i64 LE iterator, u16 LE length, bytes) operations
  OUT_DIR/rdb_value/     the same filters as RDB value streams (encoding versions 4, 3, 2, 1)
                         in the target's typed-value format
  OUT_DIR/args/          every token of the golden commands and edge-case numbers
  OUT_DIR/window_value/  real window filters (headers and RDB values), written by the core's
                         example `window_seeds` (cargo run), which encodes them itself
  OUT_DIR/cuckoo_rdb/    cuckoo filter RDB values (encoding versions 4 down to 0) of several
                         shapes, tables of pseudo-random fingerprints, with operations
  OUT_DIR/cuckoo_chunks/ their 38-byte SCANDUMP headers with the chunks SCANDUMP gives, and
                         SCANDUMP probes, then operations
"""
import hashlib
import json
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYER = struct.Struct("<QQQddIQB")  # bytes, bits, size, error, bpe, hashes, entries, n2


def write(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def parse_header(h):
    size, nfilters, options, growth = struct.unpack_from("<QIII", h, 0)
    layers = [LAYER.unpack_from(h, 20 + 53 * i) for i in range(nfilters)]
    return size, options, growth, layers


def rdb_stream(header, chunks, encver):
    """The target's typed-value encoding of the RDB value (see fuzz_targets/rdb_value.rs)."""
    size, options, growth, layers = parse_header(header)
    data = b"".join(chunks)
    out = bytearray([encver])

    def u(v):
        out.extend(b"\x00" + struct.pack("<Q", v))

    def d(v):
        out.extend(b"\x01" + struct.pack("<d", v))

    def s(b):
        out.extend(b"\x02" + struct.pack("<H", len(b)) + b)

    u(size)
    u(len(layers))
    if encver >= 2:
        u(options)
    if encver >= 4:
        u(growth)
    pos = 0
    for nbytes, bits, lsize, error, bpe, hashes, entries, n2 in layers:
        u(entries)
        d(error)
        u(hashes)
        d(bpe)
        if encver >= 1:
            u(bits)
            u(n2)
        s(data[pos : pos + nbytes])
        pos += nbytes
        u(lsize)
    return bytes(out)


def chunk_bytes(e):
    """A chunk's bytes: its hex, or (large chunks) its length and non-zero bytes."""
    if e["hex"] is not None:
        return bytes.fromhex(e["hex"])
    b = bytearray(e["len"])
    for pos, hexbyte in (e.get("nonzero_bytes") or {}).items():
        b[int(pos)] = int(hexbyte, 16)
    data = bytes(b)
    assert hashlib.sha256(data).hexdigest() == e["sha256"], "chunk rebuilt from its non-zero bytes"
    return data


CUCKOO_HEADER = struct.Struct("<QQQQHHH")  # items, buckets, deletes, sub-filters, bs, max it., exp.

# Cuckoo filter shapes: (buckets of the first, sub-filters, bucket size, max iterations,
# expansion, share of slots filled).
CUCKOO_SHAPES = [
    (512, 1, 2, 20, 1, 0.5),  # CF.RESERVE k 1024 (the defaults)
    (8, 3, 2, 20, 2, 0.9),
    (4, 2, 4, 5, 1, 0.95),
    (16, 1, 1, 1, 0, 0.5),  # non-scaling, bucket size 1
    (2, 4, 3, 30, 4, 0.8),
    (1, 1, 255, 20, 1, 0.1),
]

# Operations (pairs: code, item) for cuckoo_common::exercise: adds, ADDNX, deletions,
# compactions, counts.
CUCKOO_OPS = bytes([0, 1, 0, 2, 1, 1, 0, 1, 4, 1, 2, 0, 3, 0, 0, 3, 131, 0, 2, 1, 4, 3])


def cuckoo_filter(shape, seed):
    """A cuckoo filter of `shape`: its header fields and its sub-filters' (buckets, table)."""
    buckets, nsub, bs, mi, exp, fill = shape
    state = seed * 2654435761 + 1
    tables = []
    items = 0
    for i in range(nsub):
        n = buckets * (exp ** i if exp else 1)
        t = bytearray(n * bs)
        for j in range(len(t)):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            if (state >> 33) % 1000 < fill * 1000:
                t[j] = (state >> 11) % 255 + 1
                items += 1
        tables.append((n, bytes(t)))
    return (items, buckets, 0, nsub, bs, mi, exp), tables


def cuckoo_rdb_stream(fields, tables, encver, ops):
    """The cuckoo_rdb target's input: encver byte, ops count, typed values, ops."""
    items, buckets, deletes, nsub, bs, mi, exp = fields
    out = bytearray([encver, len(ops) // 2])

    def u(v):
        out.extend(b"\x00" + struct.pack("<Q", v))

    def s(b):
        out.extend(b"\x02" + struct.pack("<H", len(b)) + b)

    u(nsub)
    u(buckets)
    u(items)
    if encver >= 4:
        for v in (deletes, bs, mi, exp):
            u(v)
    for n, t in tables:
        if encver >= 4:
            u(n)
        s(t)
    return bytes(out) + ops


def cuckoo_chunks_input(fields, tables, mode, ops):
    """The cuckoo_chunks target's input: mode, header, chunk records as SCANDUMP gives them
    (whole sub-filters: position after each), SCANDUMP probes, 0xff, ops."""
    out = bytearray([mode]) + CUCKOO_HEADER.pack(*fields)
    pos = 1
    for _, t in tables:
        pos += len(t)
        out += struct.pack("<BqH", 0, pos, len(t)) + t
    for probe in (0, 1, 2, pos, -1):
        out += struct.pack("<BqH", 1, probe, 0)
    return bytes(out) + b"\xff" + ops


def cuckoo_seeds(out):
    n = 0
    for k, shape in enumerate(CUCKOO_SHAPES):
        fields, tables = cuckoo_filter(shape, k)
        for encver in (4, 3, 2, 1, 0):
            if encver < 4 and (shape[2], shape[3], shape[4]) != (2, 20, 1):
                # Versions 0-3 carry no bucket size etc. and equal sub-filters: only the
                # default shape is faithful; others still make useful near-misses.
                if encver < 3:
                    continue
            write(out, "cuckoo_rdb", cuckoo_rdb_stream(fields, tables, encver, CUCKOO_OPS))
            n += 1
        for mode in (0, 1, 2, 3):
            write(out, "cuckoo_chunks", cuckoo_chunks_input(fields, tables, mode, CUCKOO_OPS))
            n += 1
    # A refused header with the fallback filter, and chunks out of range.
    write(out, "cuckoo_chunks", bytes([2]) + bytes(38) + struct.pack("<BqH", 0, 9, 8) + b"\x07" * 8)
    return n


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "corpus")
    with open(os.path.join(ROOT, "tests", "data", "golden-vectors.json")) as f:
        gv = json.load(f)
    count = 0
    tokens = set()
    for name, v in gv.items():
        if not name.startswith("gv"):
            continue
        header = bytes.fromhex(v["header_hex"])
        chunks = [
            (e["reply_iter"], chunk_bytes(e))
            for e in v["scandump"]
            if e["request_iter"] >= 1 and e["len"] > 0
        ]
        # dump_header: the real header and option variants (legacy 32-bit, no-round, …).
        write(out, "dump_header", header)
        for options in (0, 1, 4, 8, 9, 13, 16):
            write(out, "dump_header", header[:12] + struct.pack("<I", options) + header[16:])
        # chunk_apply: header then the real chunks, and the chunks alone (fallback chain).
        ops = b"".join(struct.pack("<qH", it, len(c)) + c for it, c in chunks)
        write(out, "chunk_apply", struct.pack("<H", len(header)) + header + ops)
        write(out, "chunk_apply", struct.pack("<H", 0) + struct.pack("<qH", 9, 8) + b"\xff" * 8)
        # rdb_value: encoding versions 4 down to 1.
        for encver in (4, 3, 2, 1):
            write(out, "rdb_value", rdb_stream(header, [c for _, c in chunks], encver))
        count += 1
        for cmd in v["commands"]:
            tokens.update(cmd.split(" "))
    tokens.update(
        [
            "0", "-1", "1", "100", "0.01", "1e-3", ".5", "inf", "-inf", "nan", "0x1p-7", "1e999",
            "1e-400", "4.9e-324", "9223372036854775807", "-9223372036854775808",
            "9223372036854775808", "0100", "+100", "1.5", "0X1.8P1", "",
        ]
    )
    for t in tokens:
        write(out, "args", t.encode())
    print(f"seeds from {count} golden vectors and {len(tokens)} tokens written under {out}")
    print(f"{cuckoo_seeds(out)} cuckoo seeds written under {out}")
    subprocess.run(
        [
            "cargo", "run", "--quiet", "--release", "-p", "redis-bf-core", "--example",
            "window_seeds", "--", os.path.join(os.path.abspath(out), "window_value"),
        ],
        cwd=ROOT,
        check=True,
    )


if __name__ == "__main__":
    main()
