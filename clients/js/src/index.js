// redis-bf-check: answer membership questions from a redis-bf (or RedisBloom) filter downloaded
// with BF.SCANDUMP, in Node ≥ 18 or a browser, exactly as BF.MEXISTS would answer them.
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
 * missing).
 */
export class ScandumpError extends Error {
  /**
   * @param {'BAD_DATA'|'NO_LINK'|'TOO_BIG'|'NOT_NUMERIC'|'OUT_OF_MEMORY'|'NOT_FOUND'|'UNSUPPORTED'|'INCOMPLETE'} code
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

// Each "× M mod 2^64" below is written out inline (it is the hot path): for x = (xh:xl),
//   low word  = imul(xl, ML)
//   high word = mulhi(xl, MLU) + imul(xl, MH) + imul(xh, ML)   (mod 2^32)
// where mulhi, the high 32 bits of the 64-bit product xl × MLU, is computed exactly in doubles
// from 16-bit pieces: t = (xl & 0xffff)·MLU < 2^47, u = (xl >>> 16)·MLU + ⌊t / 2^16⌋ < 2^48,
// mulhi = ⌊u / 2^16⌋.

/** Output of murmur64a: [high word, low word]. */
const OUT = new Int32Array(2);

/** MurmurHash64A of bytes[0..len) with seed (sh:sl) → OUT. */
function murmur64a(bytes, len, sh, sl) {
  // h = seed ^ (len × M)
  let t = (len & 0xffff) * MLU;
  let u = (len >>> 16) * MLU + ((t / 65536) >>> 0);
  let hh = sh ^ ((((u / 65536) >>> 0) + Math.imul(len, MH)) | 0);
  let hl = sl ^ Math.imul(len, ML);
  const end = len & ~7;
  let p = 0;
  for (; p < end; p += 8) {
    let kl = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24);
    let kh = bytes[p + 4] | (bytes[p + 5] << 8) | (bytes[p + 6] << 16) | (bytes[p + 7] << 24);
    // k ×= M
    t = (kl & 0xffff) * MLU;
    u = (kl >>> 16) * MLU + ((t / 65536) >>> 0);
    kh = (((u / 65536) >>> 0) + Math.imul(kl, MH) + Math.imul(kh, ML)) | 0;
    kl = Math.imul(kl, ML);
    // k ^= k >> 47 (only bits 15..31 of the high word land in the low word)
    kl ^= kh >>> 15;
    // k ×= M
    t = (kl & 0xffff) * MLU;
    u = (kl >>> 16) * MLU + ((t / 65536) >>> 0);
    kh = (((u / 65536) >>> 0) + Math.imul(kl, MH) + Math.imul(kh, ML)) | 0;
    kl = Math.imul(kl, ML);
    // h ^= k; h ×= M
    hh ^= kh;
    hl ^= kl;
    t = (hl & 0xffff) * MLU;
    u = (hl >>> 16) * MLU + ((t / 65536) >>> 0);
    hh = (((u / 65536) >>> 0) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
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
    t = (hl & 0xffff) * MLU;
    u = (hl >>> 16) * MLU + ((t / 65536) >>> 0);
    hh = (((u / 65536) >>> 0) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
    hl = Math.imul(hl, ML);
  }
  // h ^= h >> 47; h ×= M; h ^= h >> 47
  hl ^= hh >>> 15;
  t = (hl & 0xffff) * MLU;
  u = (hl >>> 16) * MLU + ((t / 65536) >>> 0);
  hh = (((u / 65536) >>> 0) + Math.imul(hl, MH) + Math.imul(hh, ML)) | 0;
  hl = Math.imul(hl, ML);
  OUT[0] = hh;
  OUT[1] = hl ^ (hh >>> 15);
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
  constructor(bytes, bits, items, error, bpe, hashes, entries, n2) {
    this.bytes = bytes;
    this.bits = bits;
    this.items = items;
    this.error = error;
    this.bpe = bpe;
    this.hashes = hashes;
    this.entries = entries;
    this.n2 = n2;
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
    const layers = shapes.map(([bytes, items, error, bpe, hashes, entries, n2]) =>
      new Layer(Number(bytes), Number(bytes) * 8, Number(items), error, bpe, hashes, Number(entries), n2));
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
    data = toBytes(data, 'chunk');
    const [start, end, j, off] = this.placeChunk(iter, data);
    const l = this.layers[j];
    if (data.length > 0) {
      if (l.data.length !== l.bytes) l.data = new Uint8Array(l.bytes);
      l.data.set(data, off);
    }
    return [start, end];
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
    let base = 0;
    for (let j = 0; j < this.layers.length; j++) {
      const l = this.layers[j];
      if (start - 1 < base + l.bytes && start >= 1) {
        const off = start - 1 - base;
        if (len > l.bytes - off) {
          throw new ScandumpError('TOO_BIG',
            `invalid chunk at iterator ${iter}: ${len} bytes from offset ${start - 1} run past the end of layer ${j} (${l.bytes - off} bytes left)`);
        }
        return [start - 1, start - 1 + len, j, off];
      }
      base += l.bytes;
    }
    throw new ScandumpError('NO_LINK',
      `invalid chunk at iterator ${iter}: its start, offset ${start - 1}, is outside every layer (${base} bytes)`);
  }

  /**
   * Rebuilds a filter from a whole BF.SCANDUMP walk: the `[iterator, data]` pairs it returned,
   * header first (iterator 1); a final `[0, empty]` pair may be included and is ignored.
   * Every check of BF.LOADCHUNK applies, and the chunks must cover every layer byte (a missing
   * chunk would make the filter answer "absent" for items the server has).
   *
   * @param {Iterable<[number|bigint|string, Uint8Array|ArrayBuffer]>} chunks
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
      const [start, end] = filter.placeChunk(iter, data);
      written.push([start, end, iter, data, written.length]);
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
    written.sort((x, y) => x[4] - y[4]);
    for (const [, , iter, data] of written) filter.applyChunk(iter, data);
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

export { OPT_NOROUND, OPT_ENTS_IS_BITS, OPT_FORCE64, OPT_NO_SCALING, DEFAULT_MAX_BYTES, MAX_LAYERS };
