// redis-bf-check: answer membership questions from a redis-bf (or RedisBloom) filter downloaded
// with BF.SCANDUMP, in Node ≥ 18 or a browser, exactly as BF.MEXISTS would answer them; from a
// cuckoo filter downloaded with CF.SCANDUMP, exactly as CF.EXISTS and CF.COUNT would
// (CuckooFilter, after it); and from a Ribbon filter downloaded with RF.SCANDUMP, exactly as
// RF.MEXISTS would (RibbonFilter, at the end of this file).
//
// Format (what BF.SCANDUMP returns): the first pair is (1, header); the header is packed little
// endian, 20 bytes for the chain (u64 items, u32 layer count, u32 options, u32 expansion) then
// 53 bytes per layer (u64 bytes, u64 bits, u64 items, f64 error, f64 bits-per-entry, u32 hash
// count k, u64 capacity, u8 n2). Every later pair is (next iterator, bytes): the bytes are a run
// of the concatenated bit arrays (oldest layer first) that ends just before byte offset
// `next - 1`, never crossing a layer boundary.
//
// An item's bit positions are x_i = ((a + i·b) mod 2^64) mod M for i = 0..k-1, where
// a = MurmurHash64A(item, 0xc6a4a7935bd1e995), b = MurmurHash64A(item, a) (or the 32-bit
// MurmurHash2 pair, seed 0x9747b28c, for legacy filters without the FORCE64 option), and
// M = 2^n2 for power-of-two layers (n2 > 0), else the layer's bit count. Bit x is byte x >> 3,
// mask 1 << (x & 7). An item is present when some layer has all of its k bits set.
//
// 64-bit arithmetic is done on pairs of 32-bit halves with Math.imul (no BigInt in the hot path).

/** Option bit: exact bit count (no power-of-two rounding). */
const OPT_NOROUND = 1;
/** Option bit: capacity argument was log2(bits) (legacy; only affects sizing). */
const OPT_ENTS_IS_BITS = 2;
/** Option bit: 64-bit MurmurHash64A (clear: legacy 32-bit MurmurHash2). */
const OPT_FORCE64 = 4;
/** Option bit: the filter never grows. */
const OPT_NO_SCALING = 8;
const OPT_ALL = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;

/** Bytes of the chain part of the header. */
const HEADER_FIXED_BYTES = 20;
/** Bytes per layer in the header. */
const HEADER_LAYER_BYTES = 53;
/** Largest hash count accepted (a real filter has k ≤ 1076; more can only be crafted). */
const MAX_HASHES = 2048;
/** ln 2 exactly as RedisBloom's source truncates it (the hash count check depends on it). */
const LN2 = 0.693147180559945;
/** Default bound on the total bit-array bytes a header may announce: 1 GiB. */
const DEFAULT_MAX_BYTES = 2 ** 30;
/** Most layers a header may announce (`MAX_LAYERS` in the server's core/src/chain.rs). */
const MAX_LAYERS = 4096;
/** First 8 bytes of a window filter's header (`HEADER_MAGIC` in core/src/window.rs). */
const WINDOW_MAGIC = [0x42, 0x46, 0x77, 0x69, 0x6e, 0x64, 0x6f, 0x77]; // "BFwindow"
const U64_MAX = 2n ** 64n - 1n;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

const TWO32 = 4294967296;

/**
 * Thrown for a malformed, hostile, unsupported or incomplete dump; the message says what is
 * wrong. `code` is BF.LOADCHUNK's verdict on the same input: BAD_DATA (`ERR received bad
 * data`), NO_LINK (`ERR invalid offset - no link found`), TOO_BIG (`ERR invalid chunk - Too big
 * for current filter`), NOT_NUMERIC (`ERR Second argument must be numeric`: an iterator that is
 * not a Redis integer), OUT_OF_MEMORY (a valid header over `maxBytes`, the local stand-in for the
 * server's budget; the server answers a header too big for its memory `ERR received bad data`), NOT_FOUND (`ERR not found`: a
 * chunk before the header); or, with no server equivalent, UNSUPPORTED (a window filter's dump,
 * which the server loads but the checker does not read) and INCOMPLETE (a walk with bytes
 * missing). For a cuckoo filter's walk (CuckooFilter), CF.LOADCHUNK's verdicts: INVALID_HEADER
 * (`Invalid header`), CANNOT_CREATE (`Couldn't create filter!`), CANNOT_LOAD (`Couldn't load
 * chunk!`), INVALID_POSITION (`Invalid position`), ITEM_EXISTS (`ERR item exists`: a second
 * header), NOT_FOUND, and OUT_OF_MEMORY / INCOMPLETE as above. For a Ribbon filter's walk
 * (RibbonFilter), the verdicts of the server's loader (core/src/ribbon/dump.rs): INVALID_HEADER
 * (a header it refuses), OUT_OF_MEMORY (a body over maxBytes, or a shape too large), NOT_FOUND,
 * NOT_NUMERIC, INVALID_POSITION (a chunk not at the next position, empty or past the body's end),
 * BAD_DATA (bumped hashes not strictly increasing) and INCOMPLETE.
 */
export class ScandumpError extends Error {
  /**
   * @param {'BAD_DATA'|'NO_LINK'|'TOO_BIG'|'NOT_NUMERIC'|'OUT_OF_MEMORY'|'NOT_FOUND'|'UNSUPPORTED'|'INCOMPLETE'|'INVALID_HEADER'|'CANNOT_CREATE'|'CANNOT_LOAD'|'INVALID_POSITION'|'ITEM_EXISTS'} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'ScandumpError';
    this.code = code;
  }
}

// ---------------------------------------------------------------------------------------------
// Hashing

// MurmurHash64A multiplier 0xc6a4a7935bd1e995 as 32-bit halves (signed, for Math.imul) and
// the low half unsigned (for exact double products).
const MH = 0xc6a4a793 | 0;
const ML = 0x5bd1e995 | 0;
const MLU = 0x5bd1e995;

// Each "× M mod 2^64" below, for x = (xh:xl), is
//   low word  = imul(xl, ML)
//   high word = mulhi32(xl, MLU) + imul(xl, MH) + imul(xh, ML)   (mod 2^32)
// where mulhi32, the high 32 bits of the 64-bit product xl × MLU, is computed exactly in
// doubles from 16-bit pieces: t = (xl & 0xffff)·MLU < 2^48, u = (xl >>> 16)·MLU + ⌊t / 2^16⌋ <
// 2^48, mulhi = ⌊u / 2^16⌋.

/** The high 32 bits of a × b for unsigned 32-bit a, b (exact, from 16-bit pieces). */
function mulhi32(a, b) {
  const t = (a & 0xffff) * b;
  const u = (a >>> 16) * b + ((t / 65536) >>> 0);
  return (u / 65536) >>> 0;
}

/** Output of murmur64a: [high word, low word]. */
const OUT = new Int32Array(2);

/** MurmurHash64A of bytes[0..len) with seed (sh:sl) → OUT. */
function murmur64a(bytes, len, sh, sl) {
  // h = seed ^ (len × M)
  let hh = sh ^ ((mulhi32(len, MLU) + Math.imul(len, MH)) | 0);
  let hl = sl ^ Math.imul(len, ML);
  const end = len & ~7;
  let p = 0;
  for (; p < end; p += 8) {
    let kl = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24);
    let kh = bytes[p + 4] | (bytes[p + 5] << 8) | (bytes[p + 6] << 16) | (bytes[p + 7] << 24);
    // k ×= M; k ^= k >> 47 (only bits 15..31 of the high word land in the low word); k ×= M
    kh = (mulhi32(kl, MLU) + Math.imul(kl, MH) + Math.imul(kh, ML)) | 0;
    kl = Math.imul(kl, ML) ^ (kh >>> 15);
    kh = (mulhi32(kl, MLU) + Math.imul(kl, MH) + Math.imul(kh, ML)) | 0;
    // h ^= k; h ×= M
    hh ^= kh;
    hl ^= Math.imul(kl, ML);
    hh = (mulhi32(hl, MLU) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
    hl = Math.imul(hl, ML);
  }
  const tail = len & 7;
  if (tail !== 0) {
    switch (tail) {
      case 7: hh ^= bytes[p + 6] << 16; // falls through
      case 6: hh ^= bytes[p + 5] << 8; // falls through
      case 5: hh ^= bytes[p + 4]; // falls through
      case 4: hl ^= bytes[p + 3] << 24; // falls through
      case 3: hl ^= bytes[p + 2] << 16; // falls through
      case 2: hl ^= bytes[p + 1] << 8; // falls through
      case 1: hl ^= bytes[p];
    }
    hh = (mulhi32(hl, MLU) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
    hl = Math.imul(hl, ML);
  }
  // h ^= h >> 47; h ×= M; h ^= h >> 47
  hl ^= hh >>> 15;
  hh = (mulhi32(hl, MLU) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
  OUT[0] = hh;
  OUT[1] = Math.imul(hl, ML) ^ (hh >>> 15);
}

/** MurmurHash2 (32-bit) of bytes[0..len) with seed; legacy filters only. */
function murmur2(bytes, len, seed) {
  const M = 0x5bd1e995;
  let h = (seed ^ len) | 0;
  const blocks = len >>> 2;
  let p = 0;
  for (let i = 0; i < blocks; i++, p += 4) {
    let k = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = len & 3;
  if (tail !== 0) {
    switch (tail) {
      case 3: h ^= bytes[p + 2] << 16; // falls through
      case 2: h ^= bytes[p + 1] << 8; // falls through
      case 1: h ^= bytes[p];
    }
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h >>> 0;
}

/** The item's hash pair: [a high, a low, b high, b low]. */
const PAIR = new Int32Array(4);

/** Sets PAIR to the item's hash pair (64-bit, or the legacy 32-bit pair zero-extended). */
function hashPair(bytes, len, force64) {
  if (force64) {
    murmur64a(bytes, len, MH, ML);
    const ah = OUT[0];
    const al = OUT[1];
    PAIR[0] = ah;
    PAIR[1] = al;
    murmur64a(bytes, len, ah, al);
    PAIR[2] = OUT[0];
    PAIR[3] = OUT[1];
  } else {
    const a = murmur2(bytes, len, 0x9747b28c);
    PAIR[0] = 0;
    PAIR[1] = a;
    PAIR[2] = 0;
    PAIR[3] = murmur2(bytes, len, a);
  }
}

/**
 * The hash pair of an item, as 16-digit hex strings (for tests and debugging).
 * @param {string|Uint8Array} item
 * @param {boolean} [legacy32] the legacy 32-bit MurmurHash2 pair instead of MurmurHash64A
 * @returns {[string, string]}
 */
export function hashPairHex(item, legacy32 = false) {
  const len = encodeItem(item);
  hashPair(scratch, len, !legacy32);
  const hex = (h, l) => (h >>> 0).toString(16).padStart(8, '0') + (l >>> 0).toString(16).padStart(8, '0');
  return [hex(PAIR[0], PAIR[1]), hex(PAIR[2], PAIR[3])];
}

// ---------------------------------------------------------------------------------------------
// Items

let scratch = new Uint8Array(256);
const encoder = new TextEncoder();

/** Puts the item's bytes in `scratch` (UTF-8 for strings) and returns their count. */
function encodeItem(item) {
  if (typeof item === 'string') {
    const n = item.length;
    if (n * 3 > scratch.length) scratch = new Uint8Array(n * 3 + 64);
    // ASCII fast path; anything else goes through TextEncoder (well-formed UTF-8, lone
    // surrogates become U+FFFD as in every UTF-8 encoder).
    let i = 0;
    for (; i < n; i++) {
      const c = item.charCodeAt(i);
      if (c >= 0x80) break;
      scratch[i] = c;
    }
    if (i === n) return n;
    return encoder.encodeInto(item, scratch).written;
  }
  if (item instanceof Uint8Array) {
    if (item.length > scratch.length) scratch = new Uint8Array(item.length + 64);
    scratch.set(item);
    return item.length;
  }
  if (item instanceof ArrayBuffer) return encodeItem(new Uint8Array(item));
  if (ArrayBuffer.isView(item)) return encodeItem(new Uint8Array(item.buffer, item.byteOffset, item.byteLength));
  throw new TypeError('item must be a string or a Uint8Array');
}

// ---------------------------------------------------------------------------------------------
// Layers

/** How a layer reduces a 64-bit position to a bit index. */
const MOD_MASK = 0; // power of two ≤ 2^30: low bits
const MOD_SMALL = 1; // M ≤ 2^21: ((hi mod M)·(2^32 mod M) + lo) mod M, all exact in doubles
const MOD_FLOAT = 2; // M ≤ 2^30: floating quotient, exact remainder corrected by ±M
const MOD_BIG = 3; // anything larger: BigInt (slow, correct)

const EMPTY = new Uint8Array(0);

class Layer {
  /**
   * @param {{bytes: number, bits: number, items: number, error: number, bpe: number, hashes: number,
   *   entries: number, n2: number}} record the layer's header record
   */
  constructor(record) {
    Object.assign(this, record);
    const { bits, n2 } = record;
    /** @type {Uint8Array} the bit array; allocated by the first chunk written into the layer
     * (until then every bit reads as 0, as in the server's zeroed array) */
    this.data = EMPTY;
    const m = n2 > 0 ? 2 ** n2 : bits;
    this.m = m;
    if (n2 > 0 && n2 <= 30) {
      this.kind = MOD_MASK;
      this.mask = m - 1;
    } else if (m <= 2 ** 21) {
      this.kind = MOD_SMALL;
      this.c32 = TWO32 % m;
    } else if (m <= 2 ** 30) {
      this.kind = MOD_FLOAT;
    } else {
      this.kind = MOD_BIG;
      this.bigM = BigInt(n2 > 0 ? 2n ** BigInt(n2) : BigInt(bits));
    }
  }

  /** True when all k bits of the pair (ah:al, bh:bl) are set. */
  contains(ah, al, bh, bl) {
    const data = this.data;
    const k = this.hashes;
    const m = this.m;
    let xh = ah >>> 0;
    let xl = al >>> 0;
    const bh0 = bh >>> 0;
    const bl0 = bl >>> 0;
    switch (this.kind) {
      case MOD_MASK: {
        const mask = this.mask;
        for (let i = 0; i < k; i++) {
          const x = xl & mask;
          if ((data[x >>> 3] & (1 << (x & 7))) === 0) return false;
          xl = (xl + bl0) >>> 0;
        }
        return true;
      }
      case MOD_SMALL: {
        const c = this.c32;
        for (let i = 0; i < k; i++) {
          const x = ((xh % m) * c + xl) % m;
          if ((data[x >>> 3] & (1 << (x & 7))) === 0) return false;
          const s = xl + bl0;
          xh = (xh + bh0 + (s >= TWO32 ? 1 : 0)) >>> 0;
          xl = s >>> 0;
        }
        return true;
      }
      case MOD_FLOAT: {
        for (let i = 0; i < k; i++) {
          // q is floor(x / M) or off by one either way; the remainder is then computed exactly
          // modulo 2^32 (it lies in [-M, 2M), inside int32 range because M ≤ 2^30).
          const q = Math.floor((xh * TWO32 + xl) / m);
          let x = (xl - Math.imul(q >>> 0, m)) | 0;
          if (x < 0) x += m;
          else if (x >= m) x -= m;
          if ((data[x >>> 3] & (1 << (x & 7))) === 0) return false;
          const s = xl + bl0;
          xh = (xh + bh0 + (s >= TWO32 ? 1 : 0)) >>> 0;
          xl = s >>> 0;
        }
        return true;
      }
      default: {
        const a = (BigInt(xh) << 32n) | BigInt(xl);
        const b = (BigInt(bh0) << 32n) | BigInt(bl0);
        const mask64 = (1n << 64n) - 1n;
        for (let i = 0n; i < BigInt(k); i++) {
          const x = ((a + i * b) & mask64) % this.bigM;
          const byte = Number(x >> 3n);
          if ((data[byte] & (1 << Number(x & 7n))) === 0) return false;
        }
        return true;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding

function toBytes(data, what) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new ScandumpError('BAD_DATA', `${what}: data must be a Uint8Array, Buffer or ArrayBuffer`);
}

const NUMERIC = 'BF.LOADCHUNK would answer ERR Second argument must be numeric';

/**
 * Redis' strict integer (string2ll; `parse_i64` in the server's src/module/args.rs): ASCII
 * digits with an optional leading '-'; no '+', spaces, leading zeros or '-0'; in the signed
 * 64-bit range. Returns a BigInt, or a string saying why not.
 */
function parseI64(s) {
  const digits = s.startsWith('-') ? s.slice(1) : s;
  if (!/^[0-9]+$/.test(digits)) return "not a Redis integer (ASCII digits 0-9 with an optional leading '-')";
  if (digits[0] === '0' && s !== '0') return "not a Redis integer (no leading zeros, no '-0')";
  const v = BigInt(s);
  if (v < I64_MIN || v > I64_MAX) return 'outside the signed 64-bit range';
  return v;
}

/**
 * An iterator exactly as the server reads it: a number (what node-redis gives), a bigint or a
 * decimal string (what clients mapping integers to BigInt or String give). Returns a number,
 * or a bigint for an integer beyond 2^53 − 1 in magnitude that came as a bigint or a string.
 */
function toIterator(it, what) {
  let v;
  if (typeof it === 'number') {
    if (!Number.isInteger(it)) throw new ScandumpError('NOT_NUMERIC', `${what}: iterator ${it} is not an integer (${NUMERIC})`);
    if (!Number.isSafeInteger(it)) {
      const side = it > 0 ? 'above 2^53 − 1' : 'below −(2^53 − 1)';
      throw new ScandumpError('NOT_NUMERIC',
        `${what}: iterator ${BigInt(it)} is ${side}, beyond what a JS number holds exactly (it may be a rounded value); pass it as a bigint or a decimal string`);
    }
    return it;
  }
  if (typeof it === 'bigint') {
    if (it < I64_MIN || it > I64_MAX) throw new ScandumpError('NOT_NUMERIC', `${what}: iterator ${it} is outside the signed 64-bit range (${NUMERIC})`);
    v = it;
  } else if (typeof it === 'string') {
    v = parseI64(it);
    if (typeof v === 'string') throw new ScandumpError('NOT_NUMERIC', `${what}: iterator ${JSON.stringify(it)} is ${v} (${NUMERIC})`);
  } else {
    throw new ScandumpError('NOT_NUMERIC', `${what}: iterator must be a number, bigint or string, not ${it === null ? 'null' : typeof it} (${NUMERIC})`);
  }
  return v >= -BigInt(Number.MAX_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function checkMaxBytes(maxBytes) {
  if (!(maxBytes === Infinity || (Number.isSafeInteger(maxBytes) && maxBytes >= 0))) {
    throw new TypeError(`maxBytes must be a non-negative integer (or Infinity), not ${String(maxBytes)}`);
  }
}

/**
 * Where a byte offset falls among arrays laid end to end (a Bloom filter's layers, a cuckoo
 * filter's sub-filters), each at least one byte long. `starts[i]` is the offset of array i,
 * `starts[count]` the total. `find` tries the array of the previous answer and the next one (a
 * walk's order: one or two steps), then searches the starts by halves (at most
 * ⌈log2(count + 1)⌉ more steps), so placing c chunks takes at most c × (2 + ⌈log2(count + 1)⌉)
 * steps, whatever their order; `steps` counts them.
 * @private
 */
class Offsets {
  /** @param {number[]} sizes bytes of each array (exact Numbers) */
  constructor(sizes) {
    this.starts = new Array(sizes.length + 1);
    let total = 0;
    this.starts[0] = 0;
    for (let i = 0; i < sizes.length; i++) {
      total += sizes[i];
      this.starts[i + 1] = total;
    }
    this.total = total;
    this.cursor = 0;
    this.steps = 0;
  }

  /** The index of the array holding byte `offset` (0 ≤ offset < total). */
  find(offset) {
    const starts = this.starts;
    const last = starts.length - 1;
    for (let i = this.cursor; i <= this.cursor + 1; i++) {
      this.steps++;
      if (i < last && starts[i] <= offset && offset < starts[i + 1]) {
        this.cursor = i;
        return i;
      }
    }
    let lo = 0;
    let hi = last; // starts[lo] ≤ offset < starts[hi]
    while (hi - lo > 1) {
      this.steps++;
      const mid = (lo + hi) >>> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid;
    }
    this.cursor = lo;
    return lo;
  }
}

/**
 * Copies `data` into `array` (a Bloom layer or a cuckoo sub-filter: `bytes` long, its `data`
 * allocated by the first non-empty chunk, all zero until then) from byte `off`.
 */
function writeInto(array, off, data) {
  if (data.length === 0) return;
  if (array.data.length !== array.bytes) array.data = new Uint8Array(array.bytes);
  array.data.set(data, off);
}

/**
 * A chunk placed by `filter.placeChunk` (the LOADCHUNK checks; it throws before anything is
 * written) and copied into `arrays[at]`; returns the [start, end) offsets written.
 */
function applyPlaced(filter, arrays, iter, data) {
  const [start, end, at, off] = filter.placeChunk(iter, data);
  writeInto(arrays[at], off, data);
  return [start, end];
}

function isWindowHeader(data) {
  if (data.length < 12) return false;
  for (let i = 0; i < 8; i++) if (data[i] !== WINDOW_MAGIC[i]) return false;
  return data[8] === 0 && data[9] === 0 && data[10] === 0 && data[11] === 0;
}

/** ceil(LN2 · bpe) as the module computes it (a C cast to u32 saturates in Rust). */
function hashCount(bpe) {
  const k = Math.ceil(LN2 * bpe);
  if (Number.isNaN(k)) return 0;
  return Math.min(Math.max(k, 0), 0xffffffff);
}

/** A Bloom filter rebuilt from a BF.SCANDUMP walk; read-only. */
export class BloomFilter {
  /** @private */
  constructor(size, options, growth, layers) {
    /** Items the server counted as added (BF.CARD). */
    this.size = size;
    /** Option bits (5 for filters made by commands, 13 when NONSCALING). */
    this.options = options;
    /** Expansion factor. */
    this.growth = growth;
    /** @private */
    this.layers = layers;
    /** @private newest first, the order BF.MEXISTS tests them in */
    this.newestFirst = layers.slice().reverse();
    /** @private */
    this.force64 = (options & OPT_FORCE64) !== 0;
    /** @private */
    this.offsets = new Offsets(layers.map((l) => l.bytes));
  }

  /**
   * Layer lookups made placing chunks so far (applyChunk, fromScandump): one or two per chunk
   * of a walk in order, at most 2 + ⌈log2(layerCount + 1)⌉ (15 for 4096 layers) per chunk in
   * any order. A deterministic measure of the work done.
   * @returns {number}
   */
  get placeSteps() {
    return this.offsets.steps;
  }

  /**
   * Decodes the header (the data SCANDUMP returns for iterator 0) with the checks BF.LOADCHUNK
   * applies, before allocating anything.
   * @param {Uint8Array} data
   * @param {number} maxBytes
   */
  static decodeHeader(data, maxBytes = DEFAULT_MAX_BYTES) {
    checkMaxBytes(maxBytes);
    data = toBytes(data, 'header');
    if (isWindowHeader(data)) {
      throw new ScandumpError('UNSUPPORTED',
        'this is a window filter dump (header begins with BFwindow and a zero layer count): the checker reads plain filters only');
    }
    const bad = (why) => new ScandumpError('BAD_DATA', `bad SCANDUMP header: ${why}`);
    if (data.length < HEADER_FIXED_BYTES) throw bad(`${data.length} bytes, at least ${HEADER_FIXED_BYTES} expected`);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    // Every u64 is read exactly (BigInt): the server compares them as 64-bit integers.
    const size = view.getBigUint64(0, true);
    const nfilters = view.getUint32(8, true);
    const options = view.getUint32(12, true);
    const growth = view.getUint32(16, true);
    if (nfilters === 0) throw bad('no layers');
    if (nfilters > MAX_LAYERS) throw bad(`${nfilters} layers, more than the server's limit of ${MAX_LAYERS}`);
    const expected = HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * nfilters;
    if (data.length !== expected) throw bad(`${data.length} bytes for ${nfilters} layers (${expected} expected)`);
    if ((options & ~OPT_ALL) !== 0) {
      throw bad(`unknown option bits 0x${((options & ~OPT_ALL) >>> 0).toString(16)} (only 0x${OPT_ALL.toString(16)} are defined)`);
    }
    const shapes = [];
    let totalSize = 0n;
    let totalBytes = 0n;
    for (let j = 0; j < nfilters; j++) {
      const o = HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * j;
      const bytes = view.getBigUint64(o, true);
      const bits = view.getBigUint64(o + 8, true);
      const items = view.getBigUint64(o + 16, true);
      const error = view.getFloat64(o + 24, true);
      const bpe = view.getFloat64(o + 32, true);
      const hashes = view.getUint32(o + 40, true);
      const entries = view.getBigUint64(o + 44, true);
      const n2 = view.getUint8(o + 52);
      if (!(error > 0 && error < 1)) throw bad(`layer ${j}: error rate ${error} is not between 0 and 1`);
      if (n2 > 63) throw bad(`layer ${j}: n2 ${n2} is above 63`);
      if (n2 !== 0 && bits < 1n << BigInt(n2)) throw bad(`layer ${j}: ${bits} bits, fewer than 2^n2 = 2^${n2}`);
      if (bits === 0n) throw bad(`layer ${j}: 0 bits`);
      if (bytes * 8n !== bits) throw bad(`layer ${j}: ${bits} bits is not 8 x ${bytes} bytes`);
      const k = hashCount(bpe);
      if (hashes !== k) throw bad(`layer ${j}: ${hashes} hashes, but ceil(ln2 x bpe ${bpe}) = ${k}`);
      if (hashes < 1 || hashes > MAX_HASHES) throw bad(`layer ${j}: ${hashes} hashes, outside 1..${MAX_HASHES}`);
      totalSize += items;
      if (totalSize > U64_MAX) throw bad(`the layers' item counts overflow 64 bits at layer ${j}`);
      totalBytes += bytes;
      if (totalBytes > U64_MAX) throw bad(`the layers' byte counts overflow 64 bits at layer ${j}`);
      shapes.push([bytes, items, error, bpe, hashes, entries, n2]);
    }
    if (totalSize !== size) throw bad(`layer item counts add up to ${totalSize}, not the chain's ${size}`);
    if (maxBytes !== Infinity && totalBytes > BigInt(maxBytes)) {
      throw new ScandumpError('OUT_OF_MEMORY',
        `the layers take ${totalBytes} bytes, more than the limit of ${maxBytes} (option maxBytes)`);
    }
    // Nothing is allocated here: each layer's array comes with its first chunk. Below the limit,
    // byte and bit counts are exact Numbers; item counts, the chain size and capacities are
    // Numbers too, rounded above 2^53.
    if (totalBytes > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ScandumpError('OUT_OF_MEMORY', `the layers take ${totalBytes} bytes, more than a JS array can hold`);
    }
    const layers = shapes.map(([bytes, items, error, bpe, hashes, entries, n2]) => new Layer({
      bytes: Number(bytes), bits: Number(bytes) * 8, items: Number(items), error, bpe, hashes, entries: Number(entries), n2,
    }));
    return new BloomFilter(Number(size), options, growth, layers);
  }

  /**
   * Copies one data chunk in, with BF.LOADCHUNK's checks: `iter` is the iterator SCANDUMP
   * returned *with* the chunk, so the chunk starts at byte `iter - len - 1`. A layer's bit array
   * is allocated when its first chunk arrives. Nothing changes when it throws.
   * @param {number|bigint|string} iter
   * @param {Uint8Array} data
   * @returns {[number, number]} the [start, end) byte offsets written
   */
  applyChunk(iter, data) {
    return applyPlaced(this, this.layers, iter, toBytes(data, 'chunk'));
  }

  /**
   * Where a chunk goes, with every check of {@link BloomFilter#applyChunk} and without writing
   * or allocating anything.
   * @param {number|bigint|string} iter
   * @param {Uint8Array} data
   * @returns {[number, number, number, number]} [start, end) byte offsets, layer index, offset in it
   * @private
   */
  placeChunk(iter, data) {
    iter = toIterator(iter, 'chunk');
    const len = data.length;
    if (iter <= 0 || iter < len) {
      const why = iter <= 0 ? 'not positive' : "smaller than the chunk's length";
      throw new ScandumpError('BAD_DATA', `bad chunk: iterator ${iter} for ${len} bytes (${why})`);
    }
    // An iterator beyond 2^53 (a bigint here) leaves a start no layer reaches, unless the
    // subtraction brings it back into exact Number range.
    let start = typeof iter === 'bigint' ? iter - BigInt(len) : iter - len;
    if (typeof start === 'bigint') {
      if (start > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new ScandumpError('NO_LINK',
          `invalid chunk at iterator ${iter}: its start, offset ${start - 1n}, is outside every layer (${this.byteLength} bytes)`);
      }
      start = Number(start);
    }
    const offsets = this.offsets;
    if (!(start >= 1 && start <= offsets.total)) {
      throw new ScandumpError('NO_LINK',
        `invalid chunk at iterator ${iter}: its start, offset ${start - 1}, is outside every layer (${offsets.total} bytes)`);
    }
    const j = offsets.find(start - 1);
    const l = this.layers[j];
    const off = start - 1 - offsets.starts[j];
    if (len > l.bytes - off) {
      throw new ScandumpError('TOO_BIG',
        `invalid chunk at iterator ${iter}: ${len} bytes from offset ${start - 1} run past the end of layer ${j} (${l.bytes - off} bytes left)`);
    }
    return [start - 1, start - 1 + len, j, off];
  }

  /**
   * Rebuilds a filter from a whole BF.SCANDUMP walk: the `[iterator, data]` pairs it returned,
   * header first (iterator 1); a final `[0, empty]` pair may be included and is ignored.
   * Every check of BF.LOADCHUNK applies, and the chunks must cover every layer byte (a missing
   * chunk would make the filter answer "absent" for items the server has).
   *
   * @param {Iterable<[number|bigint|string, Uint8Array|ArrayBuffer]>} chunks
   * Work: O(H + B + C·log C) for a header of H bytes (at most 4096 layers) and C chunks of B
   * bytes in all, in any order; at most 2 + ⌈log2(layers + 1)⌉ layer lookups per chunk
   * (placeSteps); memory O(B + layers).
   *
   * @param {{maxBytes?: number}} [opts] maxBytes: largest total of bit-array bytes accepted
   *   (default 1 GiB); a header announcing more is refused before anything is allocated.
   * @returns {BloomFilter}
   * @throws {ScandumpError}
   */
  static fromScandump(chunks, opts = {}) {
    const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    checkMaxBytes(maxBytes);
    let filter = null;
    const written = [];
    for (const pair of chunks) {
      if (!Array.isArray(pair) || pair.length !== 2) {
        throw new ScandumpError('BAD_DATA', 'each chunk must be an [iterator, data] pair');
      }
      const iter = toIterator(pair[0], 'chunk');
      const data = toBytes(pair[1], 'chunk');
      if (filter === null) {
        if (iter !== 1) {
          throw new ScandumpError('NOT_FOUND',
            `the first pair must be the header (iterator 1), got iterator ${iter} (BF.LOADCHUNK of a chunk before its header would answer ERR not found)`);
        }
        filter = BloomFilter.decodeHeader(data, maxBytes);
        continue;
      }
      if (iter === 0 && data.length === 0) continue; // end-of-walk marker
      // Checked and placed first; written only once the walk is known to be whole, so an
      // incomplete or refused walk allocates no layer.
      const [start, end, j, off] = filter.placeChunk(iter, data);
      written.push([start, end, j, off, data, written.length]);
    }
    if (filter === null) throw new ScandumpError('INCOMPLETE', 'no header: the SCANDUMP walk is empty');
    // Every byte must have been written.
    written.sort((x, y) => x[0] - y[0]);
    let covered = 0;
    const total = filter.layers.reduce((s, l) => s + l.bytes, 0);
    for (const [s, e] of written) {
      if (s > covered) break;
      if (e > covered) covered = e;
    }
    if (covered < total) {
      throw new ScandumpError('INCOMPLETE', `incomplete SCANDUMP walk: bytes from offset ${covered} of ${total} are missing`);
    }
    // In walk order, as the server applies them (a later chunk overwrites an earlier one).
    written.sort((x, y) => x[5] - y[5]);
    for (const [, , j, off, data] of written) writeInto(filter.layers[j], off, data);
    return filter;
  }

  /**
   * True when the item may have been added (BF.EXISTS's 1); false means it certainly was not.
   * @param {string|Uint8Array} item a string (hashed as UTF-8) or bytes
   * @returns {boolean}
   */
  has(item) {
    const len = encodeItem(item);
    hashPair(scratch, len, this.force64);
    const ah = PAIR[0], al = PAIR[1], bh = PAIR[2], bl = PAIR[3];
    const layers = this.newestFirst;
    for (let i = 0; i < layers.length; i++) {
      if (layers[i].contains(ah, al, bh, bl)) return true;
    }
    return false;
  }

  /** Number of layers. */
  get layerCount() {
    return this.layers.length;
  }

  /** Total bytes of the bit arrays. */
  get byteLength() {
    return this.layers.reduce((s, l) => s + l.bytes, 0);
  }

  /** Sum of the layers' capacities (BF.INFO Capacity). */
  get capacity() {
    return this.layers.reduce((s, l) => s + l.entries, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Cuckoo filters (CF.*)
//
// Format (what CF.SCANDUMP returns): the first pair is (1, header), 38 bytes packed little
// endian: u64 items, u64 buckets (of the first sub-filter), u64 deletes, u64 sub-filters (the
// server keeps the low 16 bits), u16 bucket size, u16 max iterations, u16 expansion. Sub-filter
// i has buckets × expansion^i buckets of `bucket size` one-byte slots (0 = empty). Every later
// pair is (next iterator, bytes): a run of the sub-filters' tables laid end to end (oldest
// first) starting at byte offset `next - len - 1`, never crossing a sub-filter boundary.
//
// An item's hash is h = MurmurHash64A(item, seed 0); its fingerprint fp = h mod 255 + 1, its
// buckets h1 = h and h2 = h1 XOR (fp × 0x5bd1e995) (mod 2^64), reduced modulo each sub-filter's
// bucket count. CF.EXISTS: fp is in bucket h1 or h2 of some sub-filter. CF.COUNT: the slots
// holding fp in both buckets of every sub-filter (a bucket counted twice when h1 and h2 meet).

/** Bytes of a CF.SCANDUMP header. */
const CF_HEADER_BYTES = 38;
/** Largest bucket count of one sub-filter (2^56 − 1, the server's limit). */
const CF_MAX_BUCKETS = (1n << 56n) - 1n;
/** Largest bucket size. */
const CF_MAX_BUCKET_SIZE = 255;
/** Default largest expansion a header may have (RedisBloom 8's CF.LOADCHUNK limit). */
const CF_DEFAULT_MAX_EXPANSION = 32768;
/** 2^32 as a BigInt. */
const B32 = 1n << 32n;

/** How a sub-filter reduces a 64-bit bucket index. */
const CF_MASK_LOW = 0; // a power of two ≤ 2^32: the low word's bits
const CF_MASK_WIDE = 1; // a power of two above 2^32: the low word and some high bits
const CF_SMALL = 2; // n ≤ 2^21: ((hi mod n)·(2^32 mod n) + lo mod n) mod n, exact in doubles
const CF_BIG = 3; // anything else: BigInt

class SubFilter {
  constructor(buckets, bucketSize) {
    /** Number of buckets (a Number: the tables fit in memory). */
    this.buckets = buckets;
    this.bytes = buckets * bucketSize;
    /** @type {Uint8Array} allocated by the first chunk written into it (until then all 0) */
    this.data = EMPTY;
    const pow2 = buckets > 0 && Number.isSafeInteger(buckets) && 2 ** Math.round(Math.log2(buckets)) === buckets;
    if (pow2 && buckets <= TWO32) {
      this.kind = CF_MASK_LOW;
      this.mask = buckets === TWO32 ? -1 : buckets - 1;
    } else if (pow2) {
      this.kind = CF_MASK_WIDE;
      this.highMask = buckets / TWO32 - 1;
    } else if (buckets <= 2 ** 21) {
      this.kind = CF_SMALL;
      this.c32 = TWO32 % buckets;
    } else {
      this.kind = CF_BIG;
      this.bigN = BigInt(buckets);
    }
  }

  /** The bucket of the 64-bit index (hi:lo, unsigned words). */
  bucket(hi, lo) {
    switch (this.kind) {
      case CF_MASK_LOW: return (lo & this.mask) >>> 0;
      case CF_MASK_WIDE: return (hi & this.highMask) * TWO32 + lo;
      case CF_SMALL: {
        const n = this.buckets;
        return ((hi % n) * this.c32 + (lo % n)) % n;
      }
      default: return Number(((BigInt(hi) << 32n) | BigInt(lo)) % this.bigN);
    }
  }
}

/** The lookup of the last hashed item: fp, h1 (hi, lo), h2 (hi, lo); unsigned words. */
const LOOKUP = new Float64Array(5);

/** Sets LOOKUP for bytes[0..len). */
function cuckooLookup(bytes, len) {
  murmur64a(bytes, len, 0, 0);
  const hi = OUT[0] >>> 0;
  const lo = OUT[1] >>> 0;
  // 2^32 ≡ 1 (mod 255), so h mod 255 = (hi + lo) mod 255.
  const fp = ((hi % 255) + (lo % 255)) % 255 + 1;
  const p = fp * 0x5bd1e995; // < 2^40: exact
  LOOKUP[0] = fp;
  LOOKUP[1] = hi;
  LOOKUP[2] = lo;
  LOOKUP[3] = (hi ^ Math.floor(p / TWO32)) >>> 0;
  LOOKUP[4] = (lo ^ (p % TWO32)) >>> 0;
}

/**
 * The cuckoo lookup of an item: its 64-bit hash (MurmurHash64A, seed 0), fingerprint and both
 * bucket indexes before reduction, as 16-digit hex strings (for tests and debugging).
 * @param {string|Uint8Array} item
 * @returns {{hash: string, fp: number, h1: string, h2: string}}
 */
export function cuckooLookupHex(item) {
  const len = encodeItem(item);
  cuckooLookup(scratch, len);
  const hex = (h, l) => h.toString(16).padStart(8, '0') + l.toString(16).padStart(8, '0');
  const h1 = hex(LOOKUP[1], LOOKUP[2]);
  return { hash: h1, fp: LOOKUP[0], h1, h2: hex(LOOKUP[3], LOOKUP[4]) };
}

function checkMaxExpansion(v) {
  if (!(Number.isInteger(v) && v >= 0 && v <= 0xffff)) {
    throw new TypeError(`maxExpansion must be an integer in 0..65535, not ${String(v)}`);
  }
}

/** A cuckoo filter rebuilt from a CF.SCANDUMP walk; read-only. */
export class CuckooFilter {
  /** @private */
  constructor(items, buckets, deletes, bucketSize, maxIterations, expansion, subFilters) {
    /** Items the server counts (CF.INFO Number of items inserted); a bigint, as sent. */
    this.items = items;
    /** Buckets of the first sub-filter (CF.INFO Number of buckets). */
    this.buckets = buckets;
    /** Deletions since the last compaction (CF.INFO Number of items deleted); a bigint. */
    this.deletes = deletes;
    /** Slots per bucket (CF.INFO Bucket size). */
    this.bucketSize = bucketSize;
    /** Evictions an insertion tries (CF.INFO Max iterations). */
    this.maxIterations = maxIterations;
    /** Growth factor of the sub-filters (CF.INFO Expansion rate). */
    this.expansion = expansion;
    /** @private */
    this.subFilters = subFilters;
    /** @private */
    this.offsets = new Offsets(subFilters.map((f) => f.bytes));
  }

  /**
   * Sub-filter lookups made placing chunks so far (applyChunk, fromScandump): one or two per
   * chunk of a walk in order, at most 2 + ⌈log2(subFilterCount + 1)⌉ (18 for 65 535
   * sub-filters) per chunk in any order. A deterministic measure of the work done.
   * @returns {number}
   */
  get placeSteps() {
    return this.offsets.steps;
  }

  /**
   * An empty filter: what a walk with no header stands for (CF.SCANDUMP answers `[0, nil]`
   * at iterator 0 for a filter with no items). It answers false / 0 to everything, as the
   * server does for such a filter.
   */
  static empty() {
    return new CuckooFilter(0n, 0, 0n, 0, 0, 0, []);
  }

  /**
   * Decodes a header (the data CF.SCANDUMP returns for iterator 0) with CF.LOADCHUNK's checks,
   * allocating no table: one step and one small object per declared sub-filter (at most
   * 65 535, the count's low 16 bits; with an expansion above 1, a header is refused within 57).
   * @param {Uint8Array} data
   * @param {{maxBytes?: number, maxExpansion?: number}} [opts]
   * @returns {CuckooFilter}
   */
  static decodeHeader(data, opts = {}) {
    const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    const maxExpansion = opts.maxExpansion ?? CF_DEFAULT_MAX_EXPANSION;
    checkMaxBytes(maxBytes);
    checkMaxExpansion(maxExpansion);
    data = toCfBytes(data, 'header');
    if (data.length !== CF_HEADER_BYTES) {
      throw new ScandumpError('INVALID_HEADER',
        `bad CF.SCANDUMP header: ${data.length} bytes, ${CF_HEADER_BYTES} expected (CF.LOADCHUNK would answer Invalid header)`);
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const items = view.getBigUint64(0, true);
    const buckets = view.getBigUint64(8, true);
    const deletes = view.getBigUint64(16, true);
    const sent = view.getBigUint64(24, true);
    const bucketSize = view.getUint16(32, true);
    const maxIterations = view.getUint16(34, true);
    const expansion = view.getUint16(36, true);
    // The server stores the sub-filter count in 16 bits.
    const count = Number(sent & 0xffffn);
    const bad = (why) => new ScandumpError('CANNOT_CREATE',
      `bad CF.SCANDUMP header: ${why} (CF.LOADCHUNK would answer Couldn't create filter!)`);
    if (bucketSize === 0 || bucketSize > CF_MAX_BUCKET_SIZE) throw bad(`bucket size ${bucketSize} is outside 1..${CF_MAX_BUCKET_SIZE}`);
    if (maxIterations === 0) throw bad('max iterations 0');
    if (expansion > maxExpansion) throw bad(`expansion ${expansion} is above ${maxExpansion} (option maxExpansion)`);
    if (count === 0) throw bad(`${sent} sub-filters (${count} in the server's 16 bits)`);
    if (expansion === 0 && count > 1) throw bad(`${count} sub-filters with expansion 0`);
    if (buckets === 0n) throw bad('0 buckets');
    if (buckets > CF_MAX_BUCKETS) throw bad(`${buckets} buckets, above 2^56 - 1`);
    if ((buckets & (buckets - 1n)) !== 0n) throw bad(`${buckets} buckets, not a power of two`);
    // One step per sub-filter the header declares (at most 65 535; with an expansion above 1,
    // the bucket count passes 2^56 within 57 sub-filters).
    const sizes = [];
    let n = buckets;
    let total = 0n;
    const grow = BigInt(expansion);
    const width = BigInt(bucketSize);
    const limit = maxBytes === Infinity ? U64_MAX : BigInt(maxBytes);
    for (let i = 0; i < count; i++) {
      if (i > 0 && grow !== 1n) n *= grow;
      if (n > CF_MAX_BUCKETS) throw bad(`sub-filter ${i} would have ${n} buckets, above 2^56 - 1`);
      total += n * width;
      if (total > U64_MAX) throw bad(`the tables' byte count overflows 64 bits at sub-filter ${i}`);
      if (maxBytes !== Infinity && total > limit) {
        throw new ScandumpError('OUT_OF_MEMORY',
          `the tables take more than ${maxBytes} bytes (option maxBytes) from sub-filter ${i} on: ${total} bytes so far`);
      }
      sizes.push(n);
    }
    if (total > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ScandumpError('OUT_OF_MEMORY', `the tables take ${total} bytes, more than a JS array can hold`);
    }
    const subs = sizes.map((b) => new SubFilter(Number(b), bucketSize));
    return new CuckooFilter(items, Number(buckets), deletes, bucketSize, maxIterations, expansion, subs);
  }

  /**
   * Where a chunk goes, with CF.LOADCHUNK's checks, writing and allocating nothing.
   * @returns {[number, number, number, number]} [start, end) offsets over all tables,
   *   sub-filter index, offset in it
   * @private
   */
  placeChunk(iter, data) {
    const pos = toCfPosition(iter);
    if (pos === 1n) {
      throw new ScandumpError('ITEM_EXISTS', 'a second header (iterator 1) after the first (CF.LOADCHUNK would answer ERR item exists)');
    }
    const len = BigInt(data.length);
    const refuse = (why) => new ScandumpError('CANNOT_LOAD',
      `invalid chunk at iterator ${pos}: ${why} (CF.LOADCHUNK would answer Couldn't load chunk!)`);
    if (len === 0n) throw refuse('empty chunk');
    // As the server: the sub-filter holding the start; a start past the last sub-filter is
    // taken relative to the end of the tables, inside the last one.
    const start = pos - len - 1n;
    if (start < 0n) throw refuse(`it starts before the first byte (offset ${start})`);
    const offsets = this.offsets;
    let at;
    let offset;
    if (start < BigInt(offsets.total)) {
      at = offsets.find(Number(start));
      offset = start - BigInt(offsets.starts[at]);
    } else {
      at = this.subFilters.length - 1;
      offset = start - BigInt(offsets.total);
    }
    const f = this.subFilters[at];
    if (BigInt(f.bytes) < offset + len) {
      throw refuse(`${len} bytes from offset ${offset} of sub-filter ${at} run past its end (${f.bytes} bytes)`);
    }
    const base = offsets.starts[at];
    const off = Number(offset);
    return [base + off, base + off + data.length, at, off];
  }

  /**
   * Copies one chunk in, with CF.LOADCHUNK's checks: `iter` is the iterator CF.SCANDUMP
   * returned with the chunk (the chunk starts at offset `iter - len - 1`). Nothing changes when
   * it throws.
   * @param {number|bigint|string} iter
   * @param {Uint8Array} data
   * @returns {[number, number]} the [start, end) offsets written, over all tables
   */
  applyChunk(iter, data) {
    return applyPlaced(this, this.subFilters, iter, toCfBytes(data, 'chunk'));
  }

  /**
   * Rebuilds a filter from a whole CF.SCANDUMP walk: the `[iterator, data]` pairs it returned,
   * header first (iterator 1); a final `[0, nil]` pair may be included and is ignored. A walk
   * with no pair at all (CF.SCANDUMP answers `[0, nil]` at once for a filter with no items) is
   * the empty filter. Every check of CF.LOADCHUNK applies, and the chunks must cover every
   * byte of every sub-filter.
   *
   * Work: O(S + B + C·log C) for S sub-filters declared by the header (at most 65 535, and at
   * most maxBytes) and C chunks of B bytes in all, in any order; at most 2 + ⌈log2(S + 1)⌉
   * sub-filter lookups per chunk (placeSteps); memory O(S + B).
   * @param {Iterable<[number|bigint|string, Uint8Array|ArrayBuffer|null]>} chunks
   * @param {{maxBytes?: number, maxExpansion?: number}} [opts] maxBytes: largest total of table
   *   bytes (default 1 GiB); maxExpansion: largest expansion (default 32768, RedisBloom 8's
   *   limit; Redis 7's line accepts up to 65535)
   * @returns {CuckooFilter}
   * @throws {ScandumpError}
   */
  static fromScandump(chunks, opts = {}) {
    let filter = null;
    const placed = [];
    for (const pair of chunks) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError('each chunk must be an [iterator, data] pair');
      const [it, raw] = pair;
      const empty = raw === null || raw === undefined || (ArrayBuffer.isView(raw) && raw.byteLength === 0);
      if (empty && toCfPosition(it, true) === 0n) continue; // the end of the walk: [0, nil]
      const data = toCfBytes(raw, 'chunk');
      if (filter === null) {
        const pos = toCfPosition(it);
        if (pos !== 1n) {
          throw new ScandumpError('NOT_FOUND',
            `the first pair must be the header (iterator 1), got iterator ${pos} (CF.LOADCHUNK of a chunk before its header would answer ERR not found)`);
        }
        filter = CuckooFilter.decodeHeader(data, opts);
        continue;
      }
      const [start, end, at, off] = filter.placeChunk(it, data);
      placed.push([start, end, at, off, data, placed.length]);
    }
    if (filter === null) return CuckooFilter.empty();
    placed.sort((x, y) => x[0] - y[0]);
    let covered = 0;
    const total = filter.byteLength;
    for (const [s, e] of placed) {
      if (s > covered) break;
      if (e > covered) covered = e;
    }
    if (covered < total) {
      throw new ScandumpError('INCOMPLETE', `incomplete CF.SCANDUMP walk: bytes from offset ${covered} of ${total} are missing`);
    }
    placed.sort((x, y) => x[5] - y[5]);
    for (const [, , at, off, data] of placed) writeInto(filter.subFilters[at], off, data);
    return filter;
  }

  /**
   * True when the item may be in the filter (CF.EXISTS's 1); false means it certainly is not
   * (never added, or deleted as often as added).
   * @param {string|Uint8Array} item a string (hashed as UTF-8) or bytes
   * @returns {boolean}
   */
  has(item) {
    return this.slotsHolding(item, true) > 0;
  }

  /**
   * CF.COUNT's answer: the slots holding the item's fingerprint in its two buckets of every
   * sub-filter (a bucket counted twice when both indexes meet in it).
   * @param {string|Uint8Array} item
   * @returns {number}
   */
  count(item) {
    return this.slotsHolding(item, false);
  }

  /**
   * The slots holding the item's fingerprint in its two buckets of every sub-filter, newest
   * last; with `first`, 1 at the first such slot.
   * @private
   */
  slotsHolding(item, first) {
    const len = encodeItem(item);
    cuckooLookup(scratch, len);
    const fp = LOOKUP[0];
    const bs = this.bucketSize;
    let n = 0;
    for (const f of this.subFilters) {
      const d = f.data;
      if (d.length === 0) continue;
      for (const s of [f.bucket(LOOKUP[1], LOOKUP[2]) * bs, f.bucket(LOOKUP[3], LOOKUP[4]) * bs]) {
        for (let i = 0; i < bs; i++) {
          if (d[s + i] !== fp) continue;
          if (first) return 1;
          n++;
        }
      }
    }
    return n;
  }

  /** Number of sub-filters (CF.INFO Number of filters). */
  get subFilterCount() {
    return this.subFilters.length;
  }

  /** Total bytes of the tables. */
  get byteLength() {
    return this.offsets.total;
  }

  /** Buckets of every sub-filter, oldest first. */
  get subFilterBuckets() {
    return this.subFilters.map((f) => f.buckets);
  }
}

function toCfBytes(data, what) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`${what}: data must be a Uint8Array, Buffer or ArrayBuffer`);
}

/**
 * A CF.LOADCHUNK position read as the server reads it (Redis' integer rules; 0 is refused);
 * a BigInt. `allowZero`: the end-of-walk marker's 0 is returned instead of refused.
 */
function toCfPosition(it, allowZero = false) {
  let v;
  try {
    v = toIterator(it, 'chunk');
  } catch (e) {
    if (e instanceof ScandumpError && e.code === 'NOT_NUMERIC') {
      throw new ScandumpError('INVALID_POSITION', e.message.replace(NUMERIC, 'CF.LOADCHUNK would answer Invalid position'));
    }
    throw e;
  }
  v = BigInt(v);
  if (v === 0n && !allowZero) {
    throw new ScandumpError('INVALID_POSITION', 'chunk: iterator 0 (CF.LOADCHUNK would answer Invalid position)');
  }
  return v;
}

export { CF_HEADER_BYTES, CF_DEFAULT_MAX_EXPANSION };

export { OPT_NOROUND, OPT_ENTS_IS_BITS, OPT_FORCE64, OPT_NO_SCALING, DEFAULT_MAX_BYTES, MAX_LAYERS };

// ---------------------------------------------------------------------------------------------
// Ribbon filters (RF.*)
//
// Format (docs/format.md "Ribbon filters"; what RF.SCANDUMP returns): the first pair is
// (1, header), 49 bytes little endian: u8 version (1), f64 error rate, u64 items, u64 blocks,
// u32 r (columns of the lower blocks), u64 upper_start (the first block with r + 1 columns),
// u32 seed, u64 bumped hashes. Every later pair is (next iterator, bytes): a run of the body,
// which starts at body position `next - len` (1-based) and must follow the previous run. The
// body is the solution, block after block, each column as two u64 (low half first; bit t is
// slot 128·block + t), then the bumped hashes, increasing; every word a u64 little endian.
//
// An item's hash is h = MurmurHash64A(item, 0xc6a4a7935bd1e995). Its start slot is
// s = (h × (slots − 127)) >> 64; with fmix64 the MurmurHash3 finalizer, k = fmix64(h XOR
// (seed × 0x9e3779b97f4a7c15)), coefficients c = (fmix64(k XOR 0x5851f42d4c957f2d) << 64 | k)
// | 1 (128 bits), result b = the low 32 bits of fmix64(k XOR 0x14057b7ef767814f). The item is
// present when, for each column j of block s / 128, the parity of the column's 128 slots from s
// ANDed with c is bit j of b, or when h is one of the bumped hashes.

/** Bytes of an RF.SCANDUMP header. */
const RF_HEADER_BYTES = 49;
/** The copy form's version. */
const RF_VERSION = 1;
/** Most distinct items a filter is built from (2^32 − 2). */
const RF_MAX_ITEMS = 2n ** 32n - 2n;
/** Most columns of a block. */
const RF_MAX_RESULT_BITS = 32;
/** Most u64 words of a solution (2^58). */
const RF_MAX_WORDS = 2n ** 58n;
/** The header's fields after the version: name, DataView getter, byte offset. */
const RF_HEADER_FIELDS = [
  ['errorRate', 'getFloat64', 1], ['items', 'getBigUint64', 9], ['blocks', 'getBigUint64', 17],
  ['lowerBits', 'getUint32', 25], ['upperStart', 'getBigUint64', 29], ['seed', 'getUint32', 37],
  ['bumped', 'getBigUint64', 41],
];
/** Little-endian platform (every JS engine in use): the body is read in place as u32 words. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

// fmix64 multipliers as 32-bit halves (signed, for Math.imul) and low halves unsigned.
const F1H = 0xff51afd7 | 0;
const F1L = 0xed558ccd | 0;
const F1LU = 0xed558ccd;
const F2H = 0xc4ceb9fe | 0;
const F2L = 0x1a85ec53 | 0;
const F2LU = 0x1a85ec53;

/** fmix64 of (hi:lo) → OUT (high word, low word). */
function fmix64(hi, lo) {
  lo = (lo ^ (hi >>> 1)) >>> 0;
  let h = (mulhi32(lo, F1LU) + Math.imul(lo, F1H) + Math.imul(hi, F1L)) >>> 0;
  let l = Math.imul(lo, F1L) >>> 0;
  l = (l ^ (h >>> 1)) >>> 0;
  const h2 = (mulhi32(l, F2LU) + Math.imul(l, F2H) + Math.imul(h, F2L)) >>> 0;
  const l2 = Math.imul(l, F2L) >>> 0;
  OUT[0] = h2;
  OUT[1] = (l2 ^ (h2 >>> 1)) >>> 0;
}

/** Parity of a 32-bit word. */
function parity32(x) {
  x ^= x >>> 16;
  x ^= x >>> 8;
  x ^= x >>> 4;
  return (0x6996 >>> (x & 0xf)) & 1;
}

/** An RF.LOADCHUNK iterator, read with Redis' integer rules as toIterator does. */
function rfIterator(it) {
  try {
    return toIterator(it, 'chunk');
  } catch (e) {
    if (e instanceof ScandumpError) e.message = e.message.replace('BF.LOADCHUNK', 'RF.LOADCHUNK');
    throw e;
  }
}

/** The 64-bit words of `view` at byte `at`: [high, low] as unsigned 32-bit numbers. */
function u64Halves(view, at) {
  return [view.getUint32(at + 4, true), view.getUint32(at, true)];
}

/**
 * A Ribbon filter rebuilt from an RF.SCANDUMP walk; read-only. Built with its header
 * ({@link RibbonFilter.decodeHeader}) and filled by its body chunks in order
 * ({@link RibbonFilter#applyChunk}); it answers only once the whole body has arrived, so a
 * half-copied filter never answers a false "no".
 */
export class RibbonFilter {
  /**
   * @param {{errorRate: number, items: number, blocks: number, lowerBits: number, upperStart: number,
   *   seed: number, bumpedCount: number, byteLength: number}} fields the header's, public (see
   *   index.d.ts): the error rate it was built for (RF.INFO Error rate), distinct items it was
   *   built from (RF.CARD), blocks of 128 slots, r (columns of the lower blocks), the first
   *   block with r + 1 columns (`blocks` when none has), its rows' seed, hashes kept exactly,
   *   bytes of the body (8 per solution word and per bumped hash)
   * @param {number} bumpedAt the u32 index of the first bumped hash in the body
   * @private
   */
  constructor(fields, bumpedAt) {
    Object.assign(this, fields);
    /** @private */
    this.bumpedAt = bumpedAt;
    /** @private the body, written in order; its u32 view once complete */
    this.body = new Uint8Array(this.byteLength);
    /** @private body bytes received */
    this.received = 0;
    /** @private */
    this.words32 = null;
    /** @private slots − 127, the number of start positions */
    this.starts = this.blocks * 128 - 127;
    // seed × 0x9e3779b97f4a7c15 mod 2^64, XORed into every hash.
    const mix = (BigInt(this.seed) * 0x9e3779b97f4a7c15n) & U64_MAX;
    /** @private */
    this.mixHi = Number(mix >> 32n);
    /** @private */
    this.mixLo = Number(mix & 0xffffffffn);
  }

  /**
   * Decodes a header (RF.SCANDUMP's data for iterator 0) with the checks of the server's
   * loader, in its order, before allocating anything: 49 bytes, version 1, an error rate in
   * (0, 1), at most 2^32 − 2 items and no more bumped hashes than items, at least one block, r
   * ≥ 1, at most 32 columns in a block, `upper_start` ≤ blocks, a solution of at most 2^58
   * words; then the body within `maxBytes`. The filter returned has an empty body, to be
   * filled by {@link RibbonFilter#applyChunk}.
   * @param {Uint8Array} data
   * @param {{maxBytes?: number}} [opts] maxBytes: largest body accepted (default 1 GiB)
   * @returns {RibbonFilter}
   * @throws {ScandumpError} INVALID_HEADER, OUT_OF_MEMORY
   */
  static decodeHeader(data, opts = {}) {
    const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    checkMaxBytes(maxBytes);
    data = toCfBytes(data, 'header');
    const bad = (why) => new ScandumpError('INVALID_HEADER', `bad RF.SCANDUMP header: ${why}`);
    if (data.length !== RF_HEADER_BYTES) throw bad(`${data.length} bytes, ${RF_HEADER_BYTES} expected`);
    if (data[0] !== RF_VERSION) throw bad(`version ${data[0]}, ${RF_VERSION} expected`);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const h = {};
    for (const [name, get, at] of RF_HEADER_FIELDS) h[name] = view[get](at, true);
    const { errorRate, items, blocks, lowerBits, upperStart, seed, bumped } = h;
    if (!(errorRate > 0 && errorRate < 1)) throw bad(`error rate ${errorRate} is not between 0 and 1`);
    if (items > RF_MAX_ITEMS) throw bad(`${items} items, more than ${RF_MAX_ITEMS}`);
    if (bumped > items) throw bad(`${bumped} bumped hashes, more than its ${items} items`);
    const top = lowerBits + (upperStart < blocks ? 1 : 0);
    if (blocks === 0n) throw bad('no blocks');
    if (lowerBits === 0) throw bad('no result bits');
    if (top > RF_MAX_RESULT_BITS) throw bad(`${top} columns in a block, more than ${RF_MAX_RESULT_BITS}`);
    if (upperStart > blocks) throw bad(`upper blocks start at ${upperStart}, past the ${blocks} blocks`);
    const words = 2n * (blocks * BigInt(lowerBits) + blocks - upperStart);
    const bytes = (words + bumped) * 8n;
    if (words > RF_MAX_WORDS || (maxBytes !== Infinity && bytes > BigInt(maxBytes))) {
      throw new ScandumpError('OUT_OF_MEMORY',
        `the body takes ${bytes} bytes, more than the limit of ${maxBytes} (option maxBytes)`);
    }
    if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ScandumpError('OUT_OF_MEMORY', `the body takes ${bytes} bytes, more than a JS array can hold`);
    }
    const fields = { errorRate, items: Number(items), blocks: Number(blocks), lowerBits, upperStart: Number(upperStart), seed };
    return new RibbonFilter({ ...fields, bumpedCount: Number(bumped), byteLength: Number(bytes) }, Number(words) * 2);
  }

  /** The body position (1-based) the next chunk must start at. */
  get nextPosition() {
    return this.received + 1;
  }

  /** Has the whole body arrived? */
  get complete() {
    return this.words32 !== null;
  }

  /**
   * Copies the next body chunk in: `iter` is the iterator RF.SCANDUMP returned with it, so
   * the chunk starts at body position `iter - len` (1-based), which must be
   * {@link RibbonFilter#nextPosition}; chunks come in order, each once, none empty or past the
   * body's end. The last one completes the body, whose bumped hashes must be strictly
   * increasing. Nothing changes when it throws INVALID_POSITION or NOT_NUMERIC; after BAD_DATA
   * the filter is not usable (as the server's loader, which is dropped).
   * @param {number|bigint|string} iter
   * @param {Uint8Array} data
   * @throws {ScandumpError} NOT_NUMERIC, INVALID_POSITION, BAD_DATA
   */
  applyChunk(iter, data) {
    data = toCfBytes(data, 'chunk');
    const it = rfIterator(iter);
    const len = data.length;
    const at = typeof it === 'bigint' ? Number.NaN : it - len;
    const rest = this.byteLength - this.received;
    if (this.complete || at !== this.received + 1 || len === 0 || len > rest) {
      const why = len === 0 ? 'an empty chunk' : len > rest ? `${len} bytes, ${rest} left in the body`
        : `position ${typeof it === 'bigint' ? it - BigInt(len) : at}, not the next one (${this.received + 1})`;
      throw new ScandumpError('INVALID_POSITION', `invalid RF.SCANDUMP chunk at iterator ${it}: ${why}`);
    }
    this.body.set(data, this.received);
    this.received += len;
    if (this.received === this.byteLength) this.finish();
  }

  /** The body is complete: checks the bumped hashes and makes the words readable. @private */
  finish() {
    const body = this.body;
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    let prev = null;
    for (let i = 0; i < this.bumpedCount; i++) {
      const [hi, lo] = u64Halves(view, this.bumpedAt * 4 + 8 * i);
      if (prev !== null && (hi < prev[0] || (hi === prev[0] && lo <= prev[1]))) {
        throw new ScandumpError('BAD_DATA', `bumped hash ${i} is not above the one before it: not a Ribbon filter`);
      }
      prev = [hi, lo];
    }
    let words = new Uint32Array(body.buffer, body.byteOffset, body.byteLength >>> 2);
    if (!LITTLE_ENDIAN) {
      words = new Uint32Array(body.byteLength >>> 2);
      for (let i = 0; i < words.length; i++) words[i] = view.getUint32(4 * i, true);
    }
    this.words32 = words;
  }

  /**
   * Rebuilds a filter from a whole RF.SCANDUMP walk: the `[iterator, data]` pairs it returned,
   * header first (iterator 1), then the body chunks in order; a final `[0, empty]` pair is
   * ignored. Work and memory: O(B) for a body of B bytes (at most maxBytes, checked from the
   * header before anything is allocated), O(1) per chunk.
   * @param {Iterable<[number|bigint|string, Uint8Array|ArrayBuffer|null]>} chunks
   * @param {{maxBytes?: number}} [opts] maxBytes: largest body accepted (default 1 GiB)
   * @returns {RibbonFilter}
   * @throws {ScandumpError} NOT_FOUND (the first pair is not the header), INVALID_HEADER,
   *   OUT_OF_MEMORY, NOT_NUMERIC, INVALID_POSITION, BAD_DATA, INCOMPLETE
   */
  static fromScandump(chunks, opts = {}) {
    let filter = null;
    for (const pair of chunks) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError('each chunk must be an [iterator, data] pair');
      const [it, raw] = pair;
      const empty = raw === null || raw === undefined || (ArrayBuffer.isView(raw) && raw.byteLength === 0);
      if (empty && rfIterator(it) === 0) continue; // the end of the walk
      if (filter === null) {
        if (rfIterator(it) !== 1) {
          throw new ScandumpError('NOT_FOUND',
            `the first pair must be the header (iterator 1), got iterator ${String(it)} (RF.LOADCHUNK of a chunk before its header would answer ERR not found)`);
        }
        filter = RibbonFilter.decodeHeader(raw, opts);
        continue;
      }
      filter.applyChunk(it, raw);
    }
    if (filter === null) throw new ScandumpError('INCOMPLETE', 'no header: the RF.SCANDUMP walk is empty');
    if (!filter.complete) {
      throw new ScandumpError('INCOMPLETE',
        `incomplete RF.SCANDUMP walk: body bytes from position ${filter.nextPosition} of ${filter.byteLength} are missing`);
    }
    return filter;
  }

  /**
   * True when the item may be in the set the filter was built from (RF.EXISTS's 1); false
   * means it certainly is not.
   * @param {string|Uint8Array} item a string (hashed as UTF-8) or bytes
   * @returns {boolean}
   * @throws {ScandumpError} INCOMPLETE before the whole body has arrived
   */
  has(item) {
    const w = this.words32;
    if (w === null) {
      throw new ScandumpError('INCOMPLETE', `the body is incomplete (${this.received} of ${this.byteLength} bytes): no answer`);
    }
    const len = encodeItem(item);
    murmur64a(scratch, len, MH, ML);
    const hh = OUT[0] >>> 0;
    const hl = OUT[1] >>> 0;
    // Start slot: the high 64 bits of h × starts.
    const starts = this.starts;
    let start;
    if (starts < TWO32) {
      const low = (Math.imul(hh, starts) >>> 0) + mulhi32(hl, starts);
      start = mulhi32(hh, starts) + (low >= TWO32 ? 1 : 0);
    } else {
      start = Number(((((BigInt(hh) << 32n) | BigInt(hl)) * BigInt(starts)) >> 64n));
    }
    fmix64((hh ^ this.mixHi) >>> 0, (hl ^ this.mixLo) >>> 0);
    const kh = OUT[0];
    const kl = OUT[1];
    fmix64((kh ^ 0x5851f42d) >>> 0, (kl ^ 0x4c957f2d) >>> 0);
    const c3 = OUT[0];
    const c2 = OUT[1];
    fmix64((kh ^ 0x14057b7e) >>> 0, (kl ^ 0xf767814f) >>> 0);
    const b = OUT[1];
    const c0 = kl | 1;
    const c1 = kh;
    const block = Math.floor(start / 128);
    const shift = start % 128;
    const lower = this.lowerBits;
    const upper = block >= this.upperStart;
    const columns = lower + (upper ? 1 : 0);
    const base = 4 * (block * lower + (upper ? block - this.upperStart : 0));
    const q = shift >>> 5;
    const r = shift & 31;
    let solved = true;
    for (let j = 0; j < columns && solved; j++) {
      const at = base + 4 * j;
      let x0, x1, x2, x3;
      if (shift === 0) {
        x0 = w[at]; x1 = w[at + 1]; x2 = w[at + 2]; x3 = w[at + 3];
      } else {
        // The 256 bits of this column then the same column of the next block, from `shift`.
        const next = at + 4 * columns;
        const word = (i) => (i < 4 ? w[at + i] : w[next + i - 4]);
        const bits = (i) => (r === 0 ? word(q + i) : (word(q + i) >>> r) | (word(q + i + 1) << (32 - r)));
        x0 = bits(0); x1 = bits(1); x2 = bits(2); x3 = bits(3);
      }
      if (parity32((x0 & c0) ^ (x1 & c1) ^ (x2 & c2) ^ (x3 & c3)) !== ((b >>> j) & 1)) solved = false;
    }
    return solved || this.isBumped(hh, hl);
  }

  /** Is (hi:lo) one of the bumped hashes? Binary search. @private */
  isBumped(hi, lo) {
    const w = this.words32;
    let a = 0;
    let z = this.bumpedCount;
    while (a < z) {
      const m = (a + z) >>> 1;
      const at = this.bumpedAt + 2 * m;
      const h = w[at + 1];
      const l = w[at];
      if (h === hi && l === lo) return true;
      if (h < hi || (h === hi && l < lo)) a = m + 1;
      else z = m;
    }
    return false;
  }
}

export { RF_HEADER_BYTES };
