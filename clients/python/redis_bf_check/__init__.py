"""Check membership in a redis-bf / RedisBloom Bloom filter locally, from its BF.SCANDUMP dump.

Pure Python, no dependencies. ``BloomFilter.from_scandump(chunks)`` takes the ``(iterator,
bytes)`` pairs of a whole ``BF.SCANDUMP`` walk (header first) and ``filter.contains(item)``
answers exactly as ``BF.MEXISTS`` does: ``False`` means the item was certainly never added.

Format: the first pair is ``(1, header)``; the header is packed little endian, 20 bytes for the
chain (u64 items, u32 layer count, u32 options, u32 expansion) then 53 bytes per layer (u64
bytes, u64 bits, u64 items, f64 error, f64 bits per entry, u32 hash count k, u64 capacity, u8
n2). Each later pair is ``(next iterator, data)``: a run of the concatenated bit arrays (oldest
layer first) ending just before byte offset ``next - 1``, never crossing a layer boundary.

An item's bit positions are ``x_i = ((a + i*b) mod 2**64) mod M`` for ``i`` in ``0..k-1``, with
``a = MurmurHash64A(item, 0xc6a4a7935bd1e995)``, ``b = MurmurHash64A(item, a)`` (the 32-bit
MurmurHash2 pair, seed ``0x9747b28c``, for legacy filters without the FORCE64 option) and
``M = 2**n2`` for power-of-two layers (``n2 > 0``), else the layer's bit count. Bit ``x`` is
byte ``x >> 3``, mask ``1 << (x & 7)``. An item is present when some layer has all its k bits.
"""

from __future__ import annotations

import math
import struct
from typing import Iterable, List, Optional, Sequence, Tuple, Union

__all__ = [
    "BloomFilter",
    "ScandumpError",
    "hash_pair",
    "murmur64a",
    "murmur2_32",
    "DEFAULT_MAX_BYTES",
]

#: Option bit: exact bit count (no power-of-two rounding).
OPT_NOROUND = 1
#: Option bit: capacity argument was log2(bits) (legacy; only affects sizing).
OPT_ENTS_IS_BITS = 2
#: Option bit: 64-bit MurmurHash64A (clear: legacy 32-bit MurmurHash2).
OPT_FORCE64 = 4
#: Option bit: the filter never grows.
OPT_NO_SCALING = 8
OPT_ALL = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING

#: Bytes of the chain part of the header.
HEADER_FIXED_BYTES = 20
#: Bytes per layer in the header.
HEADER_LAYER_BYTES = 53
#: Largest hash count accepted (a real filter has k <= 1076; more can only be crafted).
MAX_HASHES = 2048
#: ln 2 exactly as RedisBloom's source truncates it (the hash-count check depends on it).
LN2 = 0.693147180559945
#: Default bound on the total bit-array bytes a header may announce: 1 GiB.
DEFAULT_MAX_BYTES = 1 << 30

_MASK64 = (1 << 64) - 1
_M64 = 0xC6A4A7935BD1E995
_SEED64 = 0xC6A4A7935BD1E995
_SEED32 = 0x9747B28C

_FIXED = struct.Struct("<QIII")
_LAYER = struct.Struct("<QQQddIQB")

Bytes = Union[bytes, bytearray, memoryview]


class ScandumpError(ValueError):
    """A malformed, hostile or incomplete dump.

    ``code`` is ``"BAD_DATA"``, ``"NO_LINK"`` or ``"TOO_BIG"`` (BF.LOADCHUNK's verdicts:
    ``ERR received bad data``, ``ERR invalid offset - no link found``, ``ERR invalid chunk - Too
    big for current filter``) or ``"INCOMPLETE"`` (a walk with bytes missing).
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


_UNPACKERS = {}


def _unpacker(words: int):
    """``unpack_from`` of ``words`` little-endian u64s (cached by count)."""
    u = _UNPACKERS.get(words)
    if u is None:
        u = struct.Struct("<%dQ" % words).unpack_from
        if len(_UNPACKERS) < 256:
            _UNPACKERS[words] = u
    return u


def murmur64a(data: bytes, seed: int) -> int:
    """MurmurHash64A (Austin Appleby) of ``data`` with a 64-bit ``seed``; words little endian."""
    m = _M64
    mask = _MASK64
    n = len(data)
    h = (seed ^ (n * m)) & mask
    words = n >> 3
    if words:
        for k in _unpacker(words)(data):
            k = (k * m) & mask
            k ^= k >> 47
            h = ((h ^ ((k * m) & mask)) * m) & mask
    tail = n & 7
    if tail:
        h = ((h ^ int.from_bytes(data[n - tail :], "little")) * m) & mask
    h ^= h >> 47
    h = (h * m) & mask
    return h ^ (h >> 47)


def murmur2_32(data: bytes, seed: int) -> int:
    """MurmurHash2 (32-bit) of ``data`` with ``seed``; used only by legacy filters."""
    m = 0x5BD1E995
    mask = 0xFFFFFFFF
    n = len(data)
    h = (seed ^ n) & mask
    blocks = n >> 2
    if blocks:
        for k in struct.unpack_from("<%dI" % blocks, data):
            k = (k * m) & mask
            k ^= k >> 24
            k = (k * m) & mask
            h = ((h * m) & mask) ^ k
    tail = n & 3
    if tail:
        h = ((h ^ int.from_bytes(data[n - tail :], "little")) * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    return h ^ (h >> 15)


def hash_pair(item: Union[str, Bytes], legacy32: bool = False) -> Tuple[int, int]:
    """The ``(a, b)`` pair from which every bit position of ``item`` is derived."""
    data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
    if legacy32:
        a = murmur2_32(data, _SEED32)
        return a, murmur2_32(data, a)
    a = murmur64a(data, _SEED64)
    return a, murmur64a(data, a)


def _hash_count(bpe: float) -> int:
    """ceil(LN2 * bpe) as the module computes it (NaN -> 0, saturating at u32)."""
    x = LN2 * bpe
    if math.isnan(x):
        return 0
    if x == math.inf:
        return 0xFFFFFFFF
    return min(max(math.ceil(x), 0), 0xFFFFFFFF)


class _Layer:
    __slots__ = ("nbytes", "bits", "items", "error", "bpe", "hashes", "entries", "n2", "modulus", "data")

    def __init__(self, nbytes, bits, items, error, bpe, hashes, entries, n2):
        self.nbytes = nbytes
        self.bits = bits
        self.items = items
        self.error = error
        self.bpe = bpe
        self.hashes = hashes
        self.entries = entries
        self.n2 = n2
        self.modulus = (1 << n2) if n2 > 0 else bits
        self.data = bytearray()


def _as_bytes(data, what: str) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise ScandumpError("BAD_DATA", "%s: data must be bytes, not %s" % (what, type(data).__name__))


def _as_iterator(it, what: str) -> int:
    if isinstance(it, bool):
        raise ScandumpError("BAD_DATA", "%s: iterator must be an integer" % what)
    if isinstance(it, (bytes, bytearray)):
        it = bytes(it).decode("ascii", "replace")
    if isinstance(it, str):
        s = it.strip()
        if not (s.lstrip("-").isdigit() and s.count("-") <= 1 and not s.endswith("-")):
            raise ScandumpError("BAD_DATA", "%s: iterator must be an integer, got %r" % (what, it))
        it = int(s)
    if not isinstance(it, int):
        raise ScandumpError("BAD_DATA", "%s: iterator must be an integer, got %r" % (what, it))
    if not -(1 << 63) <= it < (1 << 63):
        raise ScandumpError("BAD_DATA", "%s: iterator out of range" % what)
    return it


class BloomFilter:
    """A Bloom filter rebuilt from a BF.SCANDUMP walk; read-only."""

    def __init__(self, size: int, options: int, growth: int, layers: List[_Layer]):
        #: Items the server counted as added (BF.CARD).
        self.size = size
        #: Option bits (5 for filters made by commands, 13 when NONSCALING).
        self.options = options
        #: Expansion factor.
        self.growth = growth
        self.layers = layers
        self._legacy32 = not (options & OPT_FORCE64)
        self._checks: List[Tuple[int, range, bytes]] = []

    # -- decoding ------------------------------------------------------------------------------

    @classmethod
    def decode_header(cls, data: Bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> "BloomFilter":
        """Decodes a header (the data SCANDUMP returns for iterator 0) with BF.LOADCHUNK's
        checks, before allocating anything; the bit arrays are zeroed.

        Raises :class:`ScandumpError` (``BAD_DATA``), also when the layers together would take
        more than ``max_bytes`` bytes.
        """
        data = _as_bytes(data, "header")

        def bad(why):
            return ScandumpError("BAD_DATA", "bad SCANDUMP header: " + why)

        if len(data) < HEADER_FIXED_BYTES:
            raise bad("%d bytes, at least %d expected" % (len(data), HEADER_FIXED_BYTES))
        size, nfilters, options, growth = _FIXED.unpack_from(data, 0)
        expected = HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * nfilters
        if nfilters == 0:
            raise bad("no layers")
        if len(data) != expected:
            raise bad("%d bytes for %d layers (%d expected)" % (len(data), nfilters, expected))
        if options & ~OPT_ALL:
            raise bad("unknown option bits %d" % options)
        layers = []
        total_size = 0
        total_bytes = 0
        for j in range(nfilters):
            nbytes, bits, items, error, bpe, hashes, entries, n2 = _LAYER.unpack_from(
                data, HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * j
            )
            ok = (
                0.0 < error < 1.0
                and n2 <= 63
                and (n2 == 0 or bits >= (1 << n2))
                and bits != 0
                and nbytes * 8 == bits
                and hashes == _hash_count(bpe)
                and 1 <= hashes <= MAX_HASHES
            )
            if not ok:
                raise bad("layer %d is inconsistent" % j)
            total_size += items
            total_bytes += nbytes
            layers.append(_Layer(nbytes, bits, items, error, bpe, hashes, entries, n2))
        if total_size != size:
            raise bad("layer item counts add up to %d, not %d" % (total_size, size))
        if total_bytes > max_bytes:
            raise bad(
                "the layers take %d bytes, more than the limit of %d (argument max_bytes)"
                % (total_bytes, max_bytes)
            )
        for layer in layers:
            layer.data = bytearray(layer.nbytes)
        return cls(size, options, growth, layers)

    def apply_chunk(self, iterator, data: Bytes) -> Tuple[int, int]:
        """Copies one chunk in, with BF.LOADCHUNK's checks. ``iterator`` is the one SCANDUMP
        returned *with* the chunk, so the chunk starts at byte ``iterator - len - 1``.
        Returns the ``(start, end)`` byte offsets written. Raises :class:`ScandumpError`.
        """
        it = _as_iterator(iterator, "chunk")
        data = _as_bytes(data, "chunk")
        n = len(data)
        if it <= 0 or it < n:
            raise ScandumpError("BAD_DATA", "bad chunk: iterator %d for %d bytes" % (it, n))
        start = it - n
        base = 0
        if start >= 1:
            for layer in self.layers:
                if start - 1 < base + layer.nbytes:
                    off = start - 1 - base
                    if n > layer.nbytes - off:
                        raise ScandumpError(
                            "TOO_BIG", "invalid chunk at iterator %d: runs past the end of its layer" % it
                        )
                    layer.data[off : off + n] = data
                    self._checks = []
                    return start - 1, start - 1 + n
                base += layer.nbytes
        raise ScandumpError("NO_LINK", "invalid chunk at iterator %d: offset outside every layer" % it)

    @classmethod
    def from_scandump(
        cls, chunks: Iterable[Sequence], max_bytes: int = DEFAULT_MAX_BYTES
    ) -> "BloomFilter":
        """Rebuilds a filter from the ``(iterator, data)`` pairs of a whole BF.SCANDUMP walk,
        header (iterator 1) first; a final ``(0, b"")`` pair is ignored. Every BF.LOADCHUNK check
        applies, and the chunks must cover every layer byte (a missing chunk would make the
        filter answer "absent" for items the server has).

        ``max_bytes`` bounds the total bit-array bytes (default 1 GiB); a header announcing more
        is refused before anything is allocated. Raises :class:`ScandumpError`.
        """
        filt: Optional[BloomFilter] = None
        written = []
        for pair in chunks:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ScandumpError("BAD_DATA", "each chunk must be an (iterator, data) pair")
            it = _as_iterator(pair[0], "chunk")
            if filt is None:
                if it != 1:
                    raise ScandumpError(
                        "BAD_DATA", "the first pair must be the header (iterator 1), got iterator %d" % it
                    )
                filt = cls.decode_header(_as_bytes(pair[1], "header"), max_bytes)
                continue
            if it == 0 and isinstance(pair[1], (bytes, bytearray, memoryview)) and len(pair[1]) == 0:
                continue  # end-of-walk marker
            written.append(filt.apply_chunk(it, pair[1]))
        if filt is None:
            raise ScandumpError("INCOMPLETE", "no header: the SCANDUMP walk is empty")
        written.sort()
        covered = 0
        for s, e in written:
            if s > covered:
                break
            covered = max(covered, e)
        total = sum(layer.nbytes for layer in filt.layers)
        if covered < total:
            raise ScandumpError(
                "INCOMPLETE",
                "incomplete SCANDUMP walk: bytes from offset %d of %d are missing" % (covered, total),
            )
        return filt

    # -- queries -------------------------------------------------------------------------------

    def contains(self, item: Union[str, Bytes]) -> bool:
        """True when ``item`` may have been added (BF.EXISTS's 1); False means it certainly was
        not. A ``str`` is hashed as UTF-8."""
        data = item.encode("utf-8") if isinstance(item, str) else item
        if self._legacy32:
            a = murmur2_32(data, _SEED32)
            b = murmur2_32(data, a)
        else:
            # MurmurHash64A twice (seed, then a), inlined: this is the hot path. The word
            # transform k -> ((k*m) ^ ((k*m) >> 47)) * m does not depend on the seed, so it is
            # done once for both hashes.
            m = _M64
            mask = _MASK64
            n = len(data)
            nw = n >> 3
            tail = n & 7
            t = int.from_bytes(data[n - tail :], "little") if tail else 0
            nm = (n * m) & mask
            ha = _SEED64 ^ nm
            if nw == 0:
                ks = ()
            elif nw == 1:
                (k,) = _unpacker(1)(data)
                k = (k * m) & mask
                ks = ((((k ^ (k >> 47)) * m) & mask),)
                ha = ((ha ^ ks[0]) * m) & mask
            elif nw == 2:
                k, k2 = _unpacker(2)(data)
                k = (k * m) & mask
                k = ((k ^ (k >> 47)) * m) & mask
                k2 = (k2 * m) & mask
                k2 = ((k2 ^ (k2 >> 47)) * m) & mask
                ks = (k, k2)
                ha = ((((ha ^ k) * m) & mask ^ k2) * m) & mask
            else:
                ks = [
                    (((km := (k * m) & mask) ^ (km >> 47)) * m) & mask
                    for k in _unpacker(nw)(data)
                ]
                for k in ks:
                    ha = ((ha ^ k) * m) & mask
            if tail:
                ha = ((ha ^ t) * m) & mask
            ha = ((ha ^ (ha >> 47)) * m) & mask
            a = ha ^ (ha >> 47)
            hb = a ^ nm
            for k in ks:
                hb = ((hb ^ k) * m) & mask
            if tail:
                hb = ((hb ^ t) * m) & mask
            hb = ((hb ^ (hb >> 47)) * m) & mask
            b = hb ^ (hb >> 47)
        checks = self._checks
        if not checks:
            # Newest layer first, as BF.MEXISTS; (modulus, the k - 1 later positions, bits).
            checks = self._checks = [
                (layer.modulus, range(layer.hashes - 1), bytes(layer.data))
                for layer in reversed(self.layers)
            ]
        mask = _MASK64
        for modulus, rest, bits in checks:
            # Most absent items are rejected by the first position: test it before the loop.
            p = a % modulus
            if not (bits[p >> 3] >> (p & 7)) & 1:
                continue
            x = a
            for _ in rest:
                x = (x + b) & mask
                p = x % modulus
                if not (bits[p >> 3] >> (p & 7)) & 1:
                    break
            else:
                return True
        return False

    __contains__ = contains

    @property
    def layer_count(self) -> int:
        """Number of layers."""
        return len(self.layers)

    @property
    def byte_length(self) -> int:
        """Total bytes of the bit arrays."""
        return sum(layer.nbytes for layer in self.layers)

    @property
    def capacity(self) -> int:
        """Sum of the layers' capacities (BF.INFO Capacity)."""
        return sum(layer.entries for layer in self.layers)
