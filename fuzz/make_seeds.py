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
