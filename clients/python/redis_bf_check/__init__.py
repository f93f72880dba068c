"""Check membership in a redis-bf / RedisBloom Bloom filter locally, from its BF.SCANDUMP dump
(in a cuckoo filter, from its CF.SCANDUMP dump: :class:`CuckooFilter`; in a Ribbon filter, from
its RF.SCANDUMP dump: :class:`RibbonFilter`).

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

#: The package version, the same as the module's (CHANGELOG.md); pyproject.toml reads it here.
__version__ = "0.4.0"

__all__ = [
    "BloomFilter",
    "ScandumpError",
    "hash_pair",
    "murmur64a",
    "murmur2_32",
    "DEFAULT_MAX_BYTES",
    "MAX_LAYERS",
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
#: Most layers a header may announce (``MAX_LAYERS`` in the server's core/src/chain.rs).
MAX_LAYERS = 4096
#: First 8 bytes of a window filter's header (``HEADER_MAGIC`` in core/src/window.rs).
WINDOW_MAGIC = b"BFwindow"

_MASK64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_M64 = 0xC6A4A7935BD1E995
_SEED64 = 0xC6A4A7935BD1E995
_SEED32 = 0x9747B28C

_FIXED = struct.Struct("<QIII")
_LAYER = struct.Struct("<QQQddIQB")

Bytes = Union[bytes, bytearray, memoryview]


class ScandumpError(ValueError):
    """A malformed, hostile, unsupported or incomplete dump. ``str(error)`` says what is wrong.

    ``code`` is BF.LOADCHUNK's verdict on the same input:

    - ``"BAD_DATA"``: ``ERR received bad data`` (a header, or a chunk's iterator and length);
    - ``"NO_LINK"``: ``ERR invalid offset - no link found``;
    - ``"TOO_BIG"``: ``ERR invalid chunk - Too big for current filter``;
    - ``"NOT_NUMERIC"``: ``ERR Second argument must be numeric`` (an iterator that is not a
      Redis integer);
    - ``"OUT_OF_MEMORY"``: a valid header whose bit arrays total more than ``max_bytes``, the
      local stand-in for the server's budget (the server answers a header too big for its
      memory ``ERR received bad data``);

    - ``"NOT_FOUND"``: ``ERR not found`` (a walk whose first pair is not the header: the
      server has no filter to write a chunk into);

    or one the server has no equivalent for: ``"UNSUPPORTED"`` (a window filter's dump, which
    the server loads but this checker does not read) and ``"INCOMPLETE"`` (a walk with bytes
    missing).

    For a cuckoo filter's walk (:class:`CuckooFilter`), CF.LOADCHUNK's verdicts:
    ``"INVALID_HEADER"`` (``Invalid header``), ``"CANNOT_CREATE"`` (``Couldn't create
    filter!``), ``"CANNOT_LOAD"`` (``Couldn't load chunk!``), ``"INVALID_POSITION"``
    (``Invalid position``), ``"ITEM_EXISTS"`` (``ERR item exists``: a second header),
    ``"NOT_FOUND"``, and ``"OUT_OF_MEMORY"`` / ``"INCOMPLETE"`` as above.
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


def _words64(data: bytes) -> Tuple[Sequence[int], Optional[int]]:
    """The part of MurmurHash64A that does not depend on the seed: each whole 8-byte word ``k``
    (little endian) as ``((k*m) ^ ((k*m) >> 47)) * m``, and the last ``len % 8`` bytes as an
    int (``None`` when there are none)."""
    m = _M64
    mask = _MASK64
    n = len(data)
    nw = n >> 3
    if nw == 0:
        ks: Sequence[int] = ()
    elif nw == 1:
        (k,) = _unpacker(1)(data)
        k = (k * m) & mask
        ks = ((((k ^ (k >> 47)) * m) & mask),)
    elif nw == 2:
        k, k2 = _unpacker(2)(data)
        k = (k * m) & mask
        k2 = (k2 * m) & mask
        ks = ((((k ^ (k >> 47)) * m) & mask), (((k2 ^ (k2 >> 47)) * m) & mask))
    else:
        ks = [(((km := (k * m) & mask) ^ (km >> 47)) * m) & mask for k in _unpacker(nw)(data)]
    tail = n & 7
    return ks, (int.from_bytes(data[n - tail :], "little") if tail else None)


def _mix64(h: int, ks: Sequence[int], t: Optional[int]) -> int:
    """MurmurHash64A from its start value ``h = seed ^ (len * m)`` and :func:`_words64`'s
    parts."""
    m = _M64
    mask = _MASK64
    for k in ks:
        h = ((h ^ k) * m) & mask
    if t is not None:
        h = ((h ^ t) * m) & mask
    h = ((h ^ (h >> 47)) * m) & mask
    return h ^ (h >> 47)


def murmur64a(data: bytes, seed: int) -> int:
    """MurmurHash64A (Austin Appleby) of ``data`` with a 64-bit ``seed``; words little endian."""
    ks, t = _words64(data)
    return _mix64((seed ^ (len(data) * _M64)) & _MASK64, ks, t)


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
    if math.isnan(x) or x <= 0.0:
        return 0  # also -inf, on which math.ceil would raise
    if x == math.inf:
        return 0xFFFFFFFF
    return min(math.ceil(x), 0xFFFFFFFF)


class _Layer:
    """One layer's shape and bit array. The array is not allocated when the header is decoded:
    chunks are kept as they arrive (``_pieces``: ``(offset, bytes)``, in order) and assembled on
    first use, so a header costs only what its chunks bring."""

    __slots__ = ("nbytes", "bits", "items", "error", "bpe", "hashes", "entries", "n2", "modulus", "_data", "_pieces")

    def __init__(self, nbytes, bits, items, error, bpe, hashes, entries, n2):
        # The header's fields, in its order: the first eight slots.
        for name, value in zip(self.__slots__, (nbytes, bits, items, error, bpe, hashes, entries, n2)):
            setattr(self, name, value)
        self.modulus = (1 << n2) if n2 > 0 else bits
        self._data = None
        self._pieces = []

    @property
    def data(self):
        """The bit array (``bytes`` or ``bytearray`` of ``nbytes``), assembled from the chunks
        applied so far; bytes no chunk wrote are zero, as on the server."""
        pieces = self._pieces
        if self._data is not None and not pieces:
            return self._data
        if self._data is None and pieces:
            # The common case, a walk: chunks that tile the layer exactly are joined, with no
            # zero-filled array (one chunk covering the whole layer is used as it is).
            ordered = sorted(pieces, key=lambda p: p[0])
            end = 0
            for off, chunk in ordered:
                if off != end:
                    break
                end += len(chunk)
            else:
                if end == self.nbytes:
                    self._data = ordered[0][1] if len(ordered) == 1 else b"".join(c for _, c in ordered)
                    self._pieces = []
                    return self._data
        # Gaps, overlaps, or chunks over an assembled array: written in arrival order (a later
        # chunk overwrites an earlier one, as BF.LOADCHUNK does). An array already copied out
        # (a bytearray: chunks are always kept as bytes) is written in place, so chunks applied
        # between queries cost their own bytes, not the layer's each time.
        if isinstance(self._data, bytearray):
            buf = self._data
        else:
            buf = bytearray(self.nbytes) if self._data is None else bytearray(self._data)
        for off, chunk in pieces:
            buf[off : off + len(chunk)] = chunk
        self._data = buf
        self._pieces = []
        return buf


def _as_bytes(data, what: str) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise ScandumpError("BAD_DATA", "%s: data must be bytes, not %s" % (what, type(data).__name__))


_NUMERIC = "BF.LOADCHUNK would answer ERR Second argument must be numeric"


def _parse_i64(s: bytes) -> Tuple[Optional[int], str]:
    """Redis' strict integer (string2ll; ``parse_i64`` in the server's src/module/args.rs):
    ASCII digits with an optional leading ``-``, no ``+``, spaces, leading zeros or ``-0``, in
    the signed 64-bit range. Returns ``(value, "")`` or ``(None, why not)``."""
    digits = s[1:] if s[:1] == b"-" else s
    if not digits or not all(0x30 <= c <= 0x39 for c in digits):
        return None, "not a Redis integer (ASCII digits 0-9 with an optional leading '-')"
    if digits[0] == 0x30 and s != b"0":
        return None, "not a Redis integer (no leading zeros, no '-0')"
    v = int(s)
    if not _I64_MIN <= v <= _I64_MAX:
        return None, "outside the signed 64-bit range"
    return v, ""


def _as_iterator(it, what: str) -> int:
    """An iterator exactly as the server reads it: an ``int`` in the signed 64-bit range (what
    redis-py returns), or a ``str`` / ``bytes`` in Redis' integer syntax."""
    if isinstance(it, bool) or not isinstance(it, (int, str, bytes, bytearray)):
        raise ScandumpError(
            "NOT_NUMERIC", "%s: iterator must be an int, str or bytes, not %s (%s)" % (what, type(it).__name__, _NUMERIC)
        )
    if isinstance(it, int):
        if not _I64_MIN <= it <= _I64_MAX:
            raise ScandumpError(
                "NOT_NUMERIC", "%s: iterator %d is outside the signed 64-bit range (%s)" % (what, it, _NUMERIC)
            )
        return it
    raw = it.encode("utf-8", "surrogatepass") if isinstance(it, str) else bytes(it)
    v, why = _parse_i64(raw)
    if v is None:
        raise ScandumpError("NOT_NUMERIC", "%s: iterator %r is %s (%s)" % (what, it, why, _NUMERIC))
    return v


def _check_max_bytes(max_bytes) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise TypeError("max_bytes must be a non-negative int, not %r" % (max_bytes,))


class _Offsets:
    """Where a byte offset falls among arrays laid end to end (a Bloom filter's layers, a cuckoo
    filter's sub-filters), each at least one byte long. ``starts[i]`` is the offset of array
    ``i``, ``starts[-1]`` the total. :meth:`find` tries the array of the previous answer and the
    next one (a walk's order: one or two steps), then searches the starts by halves (at most
    ``count.bit_length()`` more steps), so placing ``c`` chunks takes at most ``c ×
    (2 + count.bit_length())`` steps, whatever their order; ``steps`` counts them."""

    __slots__ = ("starts", "cursor", "steps")

    def __init__(self, sizes: Iterable[int]):
        starts = [0]
        total = 0
        for size in sizes:
            total += size
            starts.append(total)
        self.starts = starts
        self.cursor = 0
        self.steps = 0

    @property
    def total(self) -> int:
        """Bytes of all the arrays."""
        return self.starts[-1]

    def find(self, offset: int) -> int:
        """The index of the array holding byte ``offset`` (``0 <= offset < total``)."""
        starts = self.starts
        c = self.cursor
        for i in (c, c + 1):
            self.steps += 1
            if i + 1 < len(starts) and starts[i] <= offset < starts[i + 1]:
                self.cursor = i
                return i
        lo, hi = 0, len(starts) - 1  # starts[lo] <= offset < starts[hi]
        while hi - lo > 1:
            self.steps += 1
            mid = (lo + hi) >> 1
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid
        self.cursor = lo
        return lo


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
        self._offsets = _Offsets(layer.nbytes for layer in layers)

    @property
    def place_steps(self) -> int:
        """Layer lookups made placing chunks so far (:meth:`apply_chunk`, :meth:`from_scandump`):
        one or two per chunk of a walk in order, at most ``2 + layer_count.bit_length()`` (15
        for 4096 layers) per chunk in any order. A deterministic measure of the work done."""
        return self._offsets.steps

    # -- decoding ------------------------------------------------------------------------------

    @classmethod
    def decode_header(cls, data: Bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> "BloomFilter":
        """Decodes a header (the data SCANDUMP returns for iterator 0) with BF.LOADCHUNK's
        checks, in the server's order (``decode_header`` in core/src/dump.rs). Nothing is
        allocated for the bit arrays: they read as zero until chunks are applied, and take only
        the memory the chunks bring.

        Raises :class:`ScandumpError`: ``UNSUPPORTED`` for a window filter's header,
        ``BAD_DATA`` for any check the server makes, ``OUT_OF_MEMORY`` for a valid header whose
        layers together announce more than ``max_bytes`` bytes (default 1 GiB).
        """
        _check_max_bytes(max_bytes)
        data = _as_bytes(data, "header")
        if len(data) >= 12 and data[:8] == WINDOW_MAGIC and data[8:12] == b"\0\0\0\0":
            raise ScandumpError(
                "UNSUPPORTED",
                "this is a window filter dump (header begins with BFwindow and a zero layer count): "
                "the checker reads plain filters only",
            )

        def bad(why):
            return ScandumpError("BAD_DATA", "bad SCANDUMP header: " + why)

        if len(data) < HEADER_FIXED_BYTES:
            raise bad("%d bytes, at least %d expected" % (len(data), HEADER_FIXED_BYTES))
        size, nfilters, options, growth = _FIXED.unpack_from(data, 0)
        expected = HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * nfilters
        if nfilters == 0:
            raise bad("no layers")
        if nfilters > MAX_LAYERS:
            raise bad("%d layers, more than the server's limit of %d" % (nfilters, MAX_LAYERS))
        if len(data) != expected:
            raise bad("%d bytes for %d layers (%d expected)" % (len(data), nfilters, expected))
        if options & ~OPT_ALL:
            raise bad("unknown option bits 0x%x (only 0x%x are defined)" % (options & ~OPT_ALL, OPT_ALL))
        layers = []
        total_size = 0
        total_bytes = 0
        for j in range(nfilters):
            nbytes, bits, items, error, bpe, hashes, entries, n2 = _LAYER.unpack_from(
                data, HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * j
            )
            if not 0.0 < error < 1.0:
                raise bad("layer %d: error rate %r is not between 0 and 1" % (j, error))
            if n2 > 63:
                raise bad("layer %d: n2 %d is above 63" % (j, n2))
            if n2 != 0 and bits < (1 << n2):
                raise bad("layer %d: %d bits, fewer than 2^n2 = 2^%d" % (j, bits, n2))
            if bits == 0:
                raise bad("layer %d: 0 bits" % j)
            if nbytes * 8 != bits:
                raise bad("layer %d: %d bits is not 8 x %d bytes" % (j, bits, nbytes))
            if hashes != _hash_count(bpe):
                raise bad("layer %d: %d hashes, but ceil(ln2 x bpe %r) = %d" % (j, hashes, bpe, _hash_count(bpe)))
            if not 1 <= hashes <= MAX_HASHES:
                raise bad("layer %d: %d hashes, outside 1..%d" % (j, hashes, MAX_HASHES))
            total_size += items
            if total_size > _MASK64:
                raise bad("the layers' item counts overflow 64 bits at layer %d" % j)
            total_bytes += nbytes
            if total_bytes > _MASK64:
                raise bad("the layers' byte counts overflow 64 bits at layer %d" % j)
            layers.append(_Layer(nbytes, bits, items, error, bpe, hashes, entries, n2))
        if total_size != size:
            raise bad("layer item counts add up to %d, not the chain's %d" % (total_size, size))
        if total_bytes > max_bytes:
            raise ScandumpError(
                "OUT_OF_MEMORY",
                "the layers take %d bytes, more than the limit of %d (argument max_bytes)" % (total_bytes, max_bytes),
            )
        return cls(size, options, growth, layers)

    def apply_chunk(self, iterator, data: Bytes) -> Tuple[int, int]:
        """Copies one chunk in, with BF.LOADCHUNK's checks (``apply_chunk`` in
        core/src/dump.rs). ``iterator`` is the one SCANDUMP returned *with* the chunk, so the
        chunk starts at byte ``iterator - len - 1``. Returns the ``(start, end)`` byte offsets
        written. Raises :class:`ScandumpError` (``NOT_NUMERIC``, ``BAD_DATA``, ``NO_LINK``,
        ``TOO_BIG``); nothing changes when it does.
        """
        it = _as_iterator(iterator, "chunk")
        data = _as_bytes(data, "chunk")
        n = len(data)
        if it <= 0 or it < n:
            why = "not positive" if it <= 0 else "smaller than the chunk's length"
            raise ScandumpError("BAD_DATA", "bad chunk: iterator %d for %d bytes (%s)" % (it, n, why))
        start = it - n
        offsets = self._offsets
        if not 1 <= start <= offsets.total:
            raise ScandumpError(
                "NO_LINK",
                "invalid chunk at iterator %d: its start, offset %d, is outside every layer (%d bytes)"
                % (it, start - 1, offsets.total),
            )
        index = offsets.find(start - 1)
        layer = self.layers[index]
        off = start - 1 - offsets.starts[index]
        if n > layer.nbytes - off:
            raise ScandumpError(
                "TOO_BIG",
                "invalid chunk at iterator %d: %d bytes from offset %d run past the end of "
                "layer %d (%d bytes left)" % (it, n, start - 1, index, layer.nbytes - off),
            )
        if n:
            layer._pieces.append((off, data))
        self._checks = []
        return start - 1, start - 1 + n

    @classmethod
    def from_scandump(
        cls, chunks: Iterable[Sequence], max_bytes: int = DEFAULT_MAX_BYTES
    ) -> "BloomFilter":
        """Rebuilds a filter from the ``(iterator, data)`` pairs of a whole BF.SCANDUMP walk,
        header (iterator 1) first; a final ``(0, b"")`` pair is ignored. Every BF.LOADCHUNK check
        applies, and the chunks must cover every layer byte (a missing chunk would make the
        filter answer "absent" for items the server has).

        ``max_bytes`` bounds the total bit-array bytes a header may announce (default 1 GiB):
        more is refused (``OUT_OF_MEMORY``) before anything is allocated. Below it, the memory
        taken is what the chunks bring: nothing is allocated from the header alone. Raises
        :class:`ScandumpError`.

        Work: O(H + B + C log C) for a header of H bytes (at most 4096 layers) and C chunks of B
        bytes in all, in any order; at most ``2 + layer_count.bit_length()`` layer lookups per
        chunk (:attr:`place_steps`); memory O(B + layers).
        """
        _check_max_bytes(max_bytes)
        filt: Optional[BloomFilter] = None
        written = []
        for pair in chunks:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ScandumpError("BAD_DATA", "each chunk must be an (iterator, data) pair")
            it = _as_iterator(pair[0], "chunk")
            if filt is None:
                if it != 1:
                    raise ScandumpError(
                        "NOT_FOUND",
                        "the first pair must be the header (iterator 1), got iterator %d (BF.LOADCHUNK "
                        "of a chunk before its header would answer ERR not found)" % it,
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
        for layer in filt.layers:
            layer.data  # assemble each bit array from its chunks now, once
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
            # MurmurHash64A twice (seed, then a): the words' transform does not depend on the
            # seed, so it is done once for both hashes.
            ks, t = _words64(data)
            nm = (len(data) * _M64) & _MASK64
            a = _mix64(_SEED64 ^ nm, ks, t)
            b = _mix64(a ^ nm, ks, t)
        checks = self._checks
        if not checks:
            # Newest layer first, as BF.MEXISTS; (modulus, the k - 1 later positions, bits). A
            # layer no chunk wrote has every bit clear (k >= 1): it holds no item and is skipped,
            # so querying a header alone allocates nothing.
            checks = self._checks = [
                (layer.modulus, range(layer.hashes - 1), layer.data)
                for layer in reversed(self.layers)
                if layer._data is not None or layer._pieces
            ]
            if not checks:
                return False
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


# -- cuckoo filters (CF.*) ---------------------------------------------------------------------
#
# Format (what CF.SCANDUMP returns): the first pair is ``(1, header)``, 38 bytes packed little
# endian: u64 items, u64 buckets (of the first sub-filter), u64 deletes, u64 sub-filters (the
# server keeps the low 16 bits), u16 bucket size, u16 max iterations, u16 expansion. Sub-filter
# ``i`` has ``buckets * expansion**i`` buckets of ``bucket size`` one-byte slots (0 = empty).
# Each later pair is ``(next iterator, data)``: a run of the sub-filters' tables laid end to
# end (oldest first) starting at byte offset ``next - len - 1``, never crossing a sub-filter.
#
# An item's hash is ``h = MurmurHash64A(item, 0)``; its fingerprint ``fp = h % 255 + 1``, its
# buckets ``h1 = h`` and ``h2 = h1 ^ (fp * 0x5bd1e995)`` (mod 2**64), each reduced modulo the
# sub-filter's bucket count. CF.EXISTS: ``fp`` is in bucket ``h1`` or ``h2`` of some
# sub-filter; CF.COUNT: the slots holding ``fp`` in both buckets of every sub-filter (one bucket
# counted twice when ``h1`` and ``h2`` meet in it).

#: Bytes of a CF.SCANDUMP header.
CF_HEADER_BYTES = 38
#: Largest bucket count of one sub-filter (2**56 - 1, the server's limit).
CF_MAX_BUCKETS = (1 << 56) - 1
#: Default largest expansion a header may have (RedisBloom 8's CF.LOADCHUNK limit; the
#: Redis 7 line accepts any 16-bit value).
CF_DEFAULT_MAX_EXPANSION = 32768
_CF_HEADER = struct.Struct("<QQQQHHH")
_CF_ALT = 0x5BD1E995

__all__ += ["CuckooFilter", "cuckoo_lookup", "CF_HEADER_BYTES", "CF_DEFAULT_MAX_EXPANSION"]


def cuckoo_lookup(item: Union[str, Bytes]) -> Tuple[int, int, int]:
    """``(fp, h1, h2)`` of an item: fingerprint (1-255) and both bucket indexes before
    reduction (64-bit)."""
    data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
    h = murmur64a(data, 0)
    fp = h % 255 + 1
    return fp, h, h ^ ((fp * _CF_ALT) & _MASK64)


def _cf_position(it, allow_zero: bool = False) -> int:
    """A CF.LOADCHUNK position as the server reads it (Redis' integer rules; 0 refused)."""
    try:
        v = _as_iterator(it, "chunk")
    except ScandumpError as e:
        raise ScandumpError(
            "INVALID_POSITION", str(e).replace(_NUMERIC, "CF.LOADCHUNK would answer Invalid position")
        ) from None
    if v == 0 and not allow_zero:
        raise ScandumpError("INVALID_POSITION", "chunk: iterator 0 (CF.LOADCHUNK would answer Invalid position)")
    return v


def _cf_bytes(data, what: str) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError("%s: data must be bytes, not %s" % (what, type(data).__name__))


class CuckooFilter:
    """A cuckoo filter rebuilt from a CF.SCANDUMP walk; read-only. :meth:`contains` answers as
    CF.EXISTS / CF.MEXISTS, :meth:`count` as CF.COUNT."""

    def __init__(self, items, buckets, deletes, bucket_size, max_iterations, expansion, sub_buckets):
        #: Items the server counts (CF.INFO ``Number of items inserted``), as the header gives it.
        self.items = items
        #: Buckets of the first sub-filter (CF.INFO ``Number of buckets``).
        self.buckets = buckets
        #: Deletions since the last compaction (CF.INFO ``Number of items deleted``).
        self.deletes = deletes
        #: Slots per bucket (CF.INFO ``Bucket size``).
        self.bucket_size = bucket_size
        #: Evictions an insertion tries (CF.INFO ``Max iterations``).
        self.max_iterations = max_iterations
        #: Growth factor (CF.INFO ``Expansion rate``).
        self.expansion = expansion
        #: Buckets of each sub-filter, oldest first.
        self.sub_filter_buckets = list(sub_buckets)
        self._tables: List[Optional[bytearray]] = [None] * len(self.sub_filter_buckets)
        self._offsets = _Offsets(b * bucket_size for b in self.sub_filter_buckets)

    @property
    def place_steps(self) -> int:
        """Sub-filter lookups made placing chunks so far (:meth:`apply_chunk`,
        :meth:`from_scandump`): one or two per chunk of a walk in order, at most ``2 +
        sub_filter_count.bit_length()`` (18 for 65 535 sub-filters) per chunk in any order. A
        deterministic measure of the work done."""
        return self._offsets.steps

    @classmethod
    def empty(cls) -> "CuckooFilter":
        """The filter with no sub-filters (what a walk with no pair stands for: CF.SCANDUMP
        answers ``[0, nil]`` at once for a filter with no items): False / 0 for everything."""
        return cls(0, 0, 0, 0, 0, 0, [])

    @property
    def sub_filter_count(self) -> int:
        """Number of sub-filters (CF.INFO ``Number of filters``)."""
        return len(self.sub_filter_buckets)

    @property
    def byte_length(self) -> int:
        """Total bytes of the tables."""
        return self._offsets.total

    @classmethod
    def decode_header(
        cls, data: Bytes, max_bytes: int = DEFAULT_MAX_BYTES, max_expansion: int = CF_DEFAULT_MAX_EXPANSION
    ) -> "CuckooFilter":
        """Decodes a header (CF.SCANDUMP's data for iterator 0) with CF.LOADCHUNK's checks, in
        the server's order, allocating no table: one step and a few list entries per declared
        sub-filter (at most 65 535, the count's low 16 bits; with an expansion above 1, a header
        is refused within 57). Raises :class:`ScandumpError`."""
        _check_max_bytes(max_bytes)
        if isinstance(max_expansion, bool) or not isinstance(max_expansion, int) or not 0 <= max_expansion <= 0xFFFF:
            raise TypeError("max_expansion must be an int in 0..65535, not %r" % (max_expansion,))
        data = _cf_bytes(data, "header")
        if len(data) != CF_HEADER_BYTES:
            raise ScandumpError(
                "INVALID_HEADER",
                "bad CF.SCANDUMP header: %d bytes, %d expected (CF.LOADCHUNK would answer Invalid header)"
                % (len(data), CF_HEADER_BYTES),
            )
        items, buckets, deletes, sent, bs, mi, exp = _CF_HEADER.unpack(data)
        count = sent & 0xFFFF  # the server stores the sub-filter count in 16 bits

        def bad(why):
            return ScandumpError(
                "CANNOT_CREATE", "bad CF.SCANDUMP header: %s (CF.LOADCHUNK would answer Couldn't create filter!)" % why
            )

        if bs == 0 or bs > 255:
            raise bad("bucket size %d is outside 1..255" % bs)
        if mi == 0:
            raise bad("max iterations 0")
        if exp > max_expansion:
            raise bad("expansion %d is above %d (argument max_expansion)" % (exp, max_expansion))
        if count == 0:
            raise bad("%d sub-filters (%d in the server's 16 bits)" % (sent, count))
        if exp == 0 and count > 1:
            raise bad("%d sub-filters with expansion 0" % count)
        if buckets == 0:
            raise bad("0 buckets")
        if buckets > CF_MAX_BUCKETS:
            raise bad("%d buckets, above 2^56 - 1" % buckets)
        if buckets & (buckets - 1):
            raise bad("%d buckets, not a power of two" % buckets)
        sizes = []
        n = buckets
        total = 0
        for i in range(count):
            if i:
                n *= exp
            if n > CF_MAX_BUCKETS:
                raise bad("sub-filter %d would have %d buckets, above 2^56 - 1" % (i, n))
            total += n * bs
            if total > _MASK64:
                raise bad("the tables' byte count overflows 64 bits at sub-filter %d" % i)
            if total > max_bytes:
                raise ScandumpError(
                    "OUT_OF_MEMORY",
                    "the tables take more than %d bytes (argument max_bytes) from sub-filter %d on: %d bytes so far"
                    % (max_bytes, i, total),
                )
            sizes.append(n)
        return cls(items, buckets, deletes, bs, mi, exp, sizes)

    def _place(self, it, data: bytes) -> Tuple[int, int, int, int]:
        """Where a chunk goes, with CF.LOADCHUNK's checks: ``(start, end)`` over all tables,
        sub-filter index, offset in it. Writes nothing."""
        pos = _cf_position(it)
        if pos == 1:
            raise ScandumpError(
                "ITEM_EXISTS", "a second header (iterator 1) after the first (CF.LOADCHUNK would answer ERR item exists)"
            )
        n = len(data)

        def refuse(why):
            return ScandumpError(
                "CANNOT_LOAD", "invalid chunk at iterator %d: %s (CF.LOADCHUNK would answer Couldn't load chunk!)" % (pos, why)
            )

        if n == 0:
            raise refuse("empty chunk")
        # As the server: the sub-filter holding the start; a start past the last sub-filter is
        # taken relative to the end of the tables, inside the last one.
        start = pos - n - 1
        if start < 0:
            raise refuse("it starts before the first byte (offset %d)" % start)
        offsets = self._offsets
        if start < offsets.total:
            at = offsets.find(start)
            base = offsets.starts[at]
            offset = start - base
        else:
            at = len(self.sub_filter_buckets) - 1
            base = offsets.starts[at]
            offset = start - offsets.total
        size = offsets.starts[at + 1] - offsets.starts[at]
        if size < offset + n:
            raise refuse("%d bytes from offset %d of sub-filter %d run past its end (%d bytes)" % (n, offset, at, size))
        return base + offset, base + offset + n, at, offset

    def _write(self, at: int, offset: int, data: bytes) -> None:
        """Copies ``data`` into sub-filter ``at`` from ``offset`` (placed by :meth:`_place`)."""
        table = self._tables[at]
        if table is None:
            table = self._tables[at] = bytearray(self.sub_filter_buckets[at] * self.bucket_size)
        table[offset : offset + len(data)] = data

    def apply_chunk(self, iterator, data: Bytes) -> Tuple[int, int]:
        """Copies one chunk in (``iterator``: what CF.SCANDUMP returned with it), with
        CF.LOADCHUNK's checks; returns the ``(start, end)`` offsets written. Nothing changes
        when it raises."""
        data = _cf_bytes(data, "chunk")
        start, end, at, off = self._place(iterator, data)
        self._write(at, off, data)
        return start, end

    @classmethod
    def from_scandump(
        cls, chunks: Iterable[Sequence], max_bytes: int = DEFAULT_MAX_BYTES, max_expansion: int = CF_DEFAULT_MAX_EXPANSION
    ) -> "CuckooFilter":
        """Rebuilds a filter from the ``(iterator, data)`` pairs of a whole CF.SCANDUMP walk,
        header (iterator 1) first; a final ``(0, None)`` pair is ignored, and a walk with no
        pair at all is the empty filter. Every CF.LOADCHUNK check applies and the chunks must
        cover every table byte. ``max_expansion``: largest expansion accepted (default 32768,
        RedisBloom 8's limit; the Redis 7 line accepts up to 65535). Raises
        :class:`ScandumpError`.

        Work: O(S + B + C log C) for S sub-filters declared by the header (at most 65 535, and at
        most ``max_bytes``) and C chunks of B bytes in all, in any order; at most ``2 +
        S.bit_length()`` sub-filter lookups per chunk (:attr:`place_steps`); memory O(S + B)."""
        filt: Optional[CuckooFilter] = None
        placed = []
        for pair in chunks:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError("each chunk must be an (iterator, data) pair")
            it, raw = pair
            if (raw is None or (isinstance(raw, (bytes, bytearray, memoryview)) and len(raw) == 0)) and _cf_position(
                it, True
            ) == 0:
                continue  # the end of the walk: [0, nil]
            data = _cf_bytes(raw, "chunk")
            if filt is None:
                pos = _cf_position(it)
                if pos != 1:
                    raise ScandumpError(
                        "NOT_FOUND",
                        "the first pair must be the header (iterator 1), got iterator %d (CF.LOADCHUNK of a "
                        "chunk before its header would answer ERR not found)" % pos,
                    )
                filt = cls.decode_header(data, max_bytes, max_expansion)
                continue
            placed.append(filt._place(it, data) + (data,))
        if filt is None:
            return cls.empty()
        covered = 0
        for s, e, _, _, _ in sorted(placed, key=lambda p: p[0]):
            if s > covered:
                break
            covered = max(covered, e)
        total = filt.byte_length
        if covered < total:
            raise ScandumpError(
                "INCOMPLETE", "incomplete CF.SCANDUMP walk: bytes from offset %d of %d are missing" % (covered, total)
            )
        for _, _, at, off, data in placed:  # in walk order: a later chunk overwrites an earlier one
            filt._write(at, off, data)
        return filt

    def _buckets_of(self, item):
        fp, h1, h2 = cuckoo_lookup(item)
        bs = self.bucket_size
        for n, table in zip(self.sub_filter_buckets, self._tables):
            if table is None:
                continue
            a = (h1 % n) * bs
            b = (h2 % n) * bs
            yield fp, table[a : a + bs], table[b : b + bs]

    def contains(self, item: Union[str, Bytes]) -> bool:
        """True when ``item`` may be in the filter (CF.EXISTS's 1); False means it certainly is
        not (never added, or deleted as often as added). A ``str`` is hashed as UTF-8."""
        return any(fp in a or fp in b for fp, a, b in self._buckets_of(item))

    def count(self, item: Union[str, Bytes]) -> int:
        """CF.COUNT's answer: the slots holding the item's fingerprint in its two buckets of
        every sub-filter (one bucket counted twice when both indexes meet in it)."""
        return sum(a.count(fp) + b.count(fp) for fp, a, b in self._buckets_of(item))


# -- Ribbon filters (RF.*) ---------------------------------------------------------------------
#
# Format (docs/format.md "Ribbon filters"; what RF.SCANDUMP returns): the first pair is
# ``(1, header)``, 49 bytes little endian: u8 version (1), f64 error rate, u64 items, u64
# blocks, u32 r (columns of the lower blocks), u64 upper_start (the first block with r + 1
# columns), u32 seed, u64 bumped hashes. Each later pair is ``(next iterator, data)``: a run of
# the body starting at body position ``next - len`` (1-based), right after the previous run. The
# body is the solution, block after block, each column two u64 (low half first; bit t is slot
# 128·block + t), then the bumped hashes, increasing; every word a u64 little endian.
#
# An item's hash is ``h = MurmurHash64A(item, 0xc6a4a7935bd1e995)``; its start slot
# ``s = (h * (slots - 127)) >> 64``; with ``fmix64`` the MurmurHash3 finalizer, ``k =
# fmix64(h ^ (seed * 0x9e3779b97f4a7c15))``, coefficients ``c = (fmix64(k ^
# 0x5851f42d4c957f2d) << 64 | k) | 1`` (128 bits), result ``b`` the low 32 bits of ``fmix64(k ^
# 0x14057b7ef767814f)``. The item is present when for each column ``j`` of block ``s // 128``
# the parity of the column's 128 slots from ``s`` ANDed with ``c`` is bit ``j`` of ``b``, or
# when ``h`` is one of the bumped hashes.

#: Bytes of an RF.SCANDUMP header.
RF_HEADER_BYTES = 49
#: The copy form's version.
RF_VERSION = 1
#: Most distinct items a filter is built from (2**32 - 2).
RF_MAX_ITEMS = (1 << 32) - 2
#: Most columns of a block.
RF_MAX_RESULT_BITS = 32
_RF_HEADER = struct.Struct("<BdQQIQIQ")
_MASK128 = (1 << 128) - 1

__all__ += ["RibbonFilter", "RF_HEADER_BYTES"]


def _fmix64(x: int) -> int:
    """The MurmurHash3 64-bit finalizer."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _MASK64
    return x ^ (x >> 33)


class RibbonFilter:
    """A Ribbon filter rebuilt from an RF.SCANDUMP walk; read-only. Made by its header
    (:meth:`decode_header`) and filled by its body chunks in order (:meth:`apply_chunk`); it
    answers only once the whole body has arrived, so a half-copied filter never answers a false
    "no". :meth:`contains` answers as RF.EXISTS / RF.MEXISTS.

    Attributes, from the header: ``error_rate`` (the rate it was built for, RF.INFO ``Error
    rate``), ``items`` (distinct items it was built from, RF.CARD), ``blocks`` (of 128 slots),
    ``lower_bits`` (r, the columns of the lower blocks), ``upper_start`` (the first block with
    r + 1 columns; ``blocks`` when none has), ``seed`` (its rows' seed), ``bumped_count``
    (hashes kept exactly) and ``byte_length`` (bytes of the body: 8 per solution word and per
    bumped hash)."""

    def __init__(self, fields: dict, words: int):
        self.__dict__.update(fields)
        self._words = words
        self._body = bytearray(self.byte_length)
        self._received = 0
        self._columns: Optional[List[int]] = None
        self._bumped: frozenset = frozenset()
        self._starts = self.blocks * 128 - 127
        self._mix = (self.seed * 0x9E3779B97F4A7C15) & _MASK64

    @classmethod
    def decode_header(cls, data: Bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> "RibbonFilter":
        """Decodes a header (RF.SCANDUMP's data for iterator 0) with the checks of the server's
        loader, in its order, before allocating anything: 49 bytes, version 1, an error rate in
        (0, 1), at most 2**32 - 2 items and no more bumped hashes than items, at least one
        block, r >= 1, at most 32 columns in a block, ``upper_start <= blocks``, a solution of
        at most 2**58 words; then the body (bytes) within ``max_bytes`` (default 1 GiB). The
        filter returned has an empty body, to be filled by :meth:`apply_chunk`.

        Raises :class:`ScandumpError`: ``INVALID_HEADER``, ``OUT_OF_MEMORY``."""
        _check_max_bytes(max_bytes)
        data = _cf_bytes(data, "header")

        def bad(why):
            return ScandumpError("INVALID_HEADER", "bad RF.SCANDUMP header: " + why)

        if len(data) != RF_HEADER_BYTES:
            raise bad("%d bytes, %d expected" % (len(data), RF_HEADER_BYTES))
        version, error_rate, items, blocks, r, upper, seed, bumped = _RF_HEADER.unpack(data)
        if version != RF_VERSION:
            raise bad("version %d, %d expected" % (version, RF_VERSION))
        if not 0.0 < error_rate < 1.0:
            raise bad("error rate %r is not between 0 and 1" % error_rate)
        if items > RF_MAX_ITEMS:
            raise bad("%d items, more than %d" % (items, RF_MAX_ITEMS))
        if bumped > items:
            raise bad("%d bumped hashes, more than its %d items" % (bumped, items))
        top = r + (1 if upper < blocks else 0)
        if blocks == 0:
            raise bad("no blocks")
        if r == 0:
            raise bad("no result bits")
        if top > RF_MAX_RESULT_BITS:
            raise bad("%d columns in a block, more than %d" % (top, RF_MAX_RESULT_BITS))
        if upper > blocks:
            raise bad("upper blocks start at %d, past the %d blocks" % (upper, blocks))
        words = 2 * (blocks * r + blocks - upper)
        nbytes = (words + bumped) * 8
        if words > 1 << 58 or nbytes > max_bytes:
            raise ScandumpError(
                "OUT_OF_MEMORY",
                "the body takes %d bytes, more than the limit of %d (argument max_bytes)" % (nbytes, max_bytes),
            )
        fields = dict(error_rate=error_rate, items=items, blocks=blocks, lower_bits=r, upper_start=upper, seed=seed)
        return cls(dict(fields, bumped_count=bumped, byte_length=nbytes), words)

    @property
    def next_position(self) -> int:
        """The body position (1-based) the next chunk must start at."""
        return self._received + 1

    @property
    def complete(self) -> bool:
        """Has the whole body arrived?"""
        return self._columns is not None

    def apply_chunk(self, iterator, data: Bytes) -> None:
        """Copies the next body chunk in: ``iterator`` is the one RF.SCANDUMP returned with it,
        so the chunk starts at body position ``iterator - len`` (1-based), which must be
        :attr:`next_position`; chunks come in order, each once, none empty or past the body's
        end. The last one completes the body, whose bumped hashes must be strictly increasing.

        Raises :class:`ScandumpError`: ``NOT_NUMERIC``, ``INVALID_POSITION`` (nothing changes),
        ``BAD_DATA`` (the body is complete but not a filter: drop it, as the server does)."""
        data = _cf_bytes(data, "chunk")
        try:
            it = _as_iterator(iterator, "chunk")
        except ScandumpError as e:
            raise ScandumpError(e.code, str(e).replace("BF.LOADCHUNK", "RF.LOADCHUNK")) from None
        n = len(data)
        rest = self.byte_length - self._received
        if self.complete or it - n != self._received + 1 or n == 0 or n > rest:
            if n == 0:
                why = "an empty chunk"
            elif n > rest:
                why = "%d bytes, %d left in the body" % (n, rest)
            else:
                why = "position %d, not the next one (%d)" % (it - n, self._received + 1)
            raise ScandumpError("INVALID_POSITION", "invalid RF.SCANDUMP chunk at iterator %d: %s" % (it, why))
        self._body[self._received : self._received + n] = data
        self._received += n
        if self._received == self.byte_length:
            self._finish()

    def _finish(self) -> None:
        """The body is complete: checks the bumped hashes, makes the columns readable."""
        words = self._words
        body = self._body
        bumped = _unpacker(self.bumped_count)(body, words * 8) if self.bumped_count else ()
        for i in range(1, len(bumped)):
            if bumped[i] <= bumped[i - 1]:
                raise ScandumpError("BAD_DATA", "bumped hash %d is not above the one before it: not a Ribbon filter" % i)
        halves = _unpacker(words)(body) if words else ()
        self._columns = [halves[i] | halves[i + 1] << 64 for i in range(0, words, 2)]
        self._bumped = frozenset(bumped)
        self._body = bytearray()

    @classmethod
    def from_scandump(cls, chunks: Iterable[Sequence], max_bytes: int = DEFAULT_MAX_BYTES) -> "RibbonFilter":
        """Rebuilds a filter from the ``(iterator, data)`` pairs of a whole RF.SCANDUMP walk,
        header (iterator 1) first, then the body chunks in order; a final ``(0, b"")`` pair is
        ignored. Work and memory: O(B) for a body of B bytes (at most ``max_bytes``, checked
        from the header before anything is allocated), O(1) checks per chunk.

        Raises :class:`ScandumpError`: ``NOT_FOUND`` (the first pair is not the header),
        ``INVALID_HEADER``, ``OUT_OF_MEMORY``, ``NOT_NUMERIC``, ``INVALID_POSITION``,
        ``BAD_DATA``, ``INCOMPLETE``."""
        filt: Optional[RibbonFilter] = None
        for pair in chunks:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError("each chunk must be an (iterator, data) pair")
            it, raw = pair
            if (raw is None or (isinstance(raw, (bytes, bytearray, memoryview)) and len(raw) == 0)) and _as_iterator(
                it, "chunk"
            ) == 0:
                continue  # the end of the walk
            if filt is None:
                if _as_iterator(it, "header") != 1:
                    raise ScandumpError(
                        "NOT_FOUND",
                        "the first pair must be the header (iterator 1), got iterator %r (RF.LOADCHUNK of a "
                        "chunk before its header would answer ERR not found)" % (it,),
                    )
                filt = cls.decode_header(raw, max_bytes)
                continue
            filt.apply_chunk(it, raw)
        if filt is None:
            raise ScandumpError("INCOMPLETE", "no header: the RF.SCANDUMP walk is empty")
        if not filt.complete:
            raise ScandumpError(
                "INCOMPLETE",
                "incomplete RF.SCANDUMP walk: body bytes from position %d of %d are missing"
                % (filt.next_position, filt.byte_length),
            )
        return filt

    def contains(self, item: Union[str, Bytes]) -> bool:
        """True when ``item`` may be in the set the filter was built from (RF.EXISTS's 1); False
        means it certainly is not. A ``str`` is hashed as UTF-8. Raises :class:`ScandumpError`
        ``INCOMPLETE`` before the whole body has arrived."""
        columns = self._columns
        if columns is None:
            raise ScandumpError(
                "INCOMPLETE", "the body is incomplete (%d of %d bytes): no answer" % (self._received, self.byte_length)
            )
        data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
        h = murmur64a(data, _SEED64)
        start = (h * self._starts) >> 64
        k = _fmix64(h ^ self._mix)
        c = (_fmix64(k ^ 0x5851F42D4C957F2D) << 64 | k) | 1
        b = _fmix64(k ^ 0x14057B7EF767814F)
        block, shift = divmod(start, 128)
        r = self.lower_bits
        width = r + 1 if block >= self.upper_start else r
        base = block * r + max(0, block - self.upper_start)
        for j in range(width):
            here = columns[base + j]
            window = ((columns[base + width + j] << 128 | here) >> shift) & _MASK128 if shift else here
            if (window & c).bit_count() & 1 != (b >> j) & 1:
                return h in self._bumped
        return True

    __contains__ = contains
