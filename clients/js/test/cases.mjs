// Hostile and accepted inputs shared by hostile.test.mjs (the checker's verdicts) and
// live.test.mjs (the server's replies to the same bytes through BF.LOADCHUNK).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const GOLDEN = JSON.parse(readFileSync(join(ROOT, 'tests', 'data', 'golden-vectors.json'), 'utf8'));
const unhex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

// gv2: BF.RESERVE 0.1 4 EXPANSION 3 + 12 items: two layers of 8 and 16 bytes (offsets 0..24).
export const HEADER = unhex(GOLDEN.gv2.header_hex);
export const WALK = GOLDEN.gv2.scandump.map((c) => [c.reply_iter, unhex(c.hex)]);

export const header = (edit) => {
  const h = HEADER.slice();
  edit(h, new DataView(h.buffer));
  return h;
};
export const L0 = 20; // first layer's fields
export const L1 = 20 + 53;

/** A consistent 53-byte layer record of `bytes` bytes (gv2's first layer's error and k). */
export function layerRecord(bytes, items = 0n, { bpe, hashes } = {}) {
  const r = HEADER.slice(L0, L0 + 53);
  const v = new DataView(r.buffer);
  v.setBigUint64(0, BigInt(bytes), true);
  v.setBigUint64(8, BigInt(bytes) * 8n, true);
  v.setBigUint64(16, BigInt(items), true);
  if (bpe !== undefined) v.setFloat64(32, bpe, true);
  if (hashes !== undefined) v.setUint32(40, hashes, true);
  return r;
}

/** A header of the given layer records; size defaults to the sum of their item counts. */
export function chain(records, { size, options = 5, growth = 3 } = {}) {
  const h = new Uint8Array(20 + 53 * records.length);
  const v = new DataView(h.buffer);
  let sum = 0n;
  records.forEach((r, j) => {
    h.set(r, 20 + 53 * j);
    sum += new DataView(r.buffer, r.byteOffset).getBigUint64(16, true);
  });
  v.setBigUint64(0, size ?? sum, true);
  v.setUint32(8, records.length, true);
  v.setUint32(12, options, true);
  v.setUint32(16, growth, true);
  return h;
}

/** A window filter's header: magic, zero layer count, then the window fields (64 bytes). */
export const WINDOW_HEADER = (() => {
  const h = new Uint8Array(64);
  h.set(new TextEncoder().encode('BFwindow'));
  const v = new DataView(h.buffer);
  v.setUint32(12, 1, true);
  v.setBigUint64(16, 1000n, true);
  v.setBigUint64(24, 100n, true);
  v.setFloat64(32, 0.01, true);
  v.setUint32(40, 2, true);
  return h;
})();

const BAD = 'received bad data';
/**
 * Hostile headers: [name, header, checker's code, words its message must contain, the server's
 * reply to BF.LOADCHUNK key 1 header on a missing key (null: depends on the memory budget)].
 * live.test.mjs sends every one to the server.
 */
export const HOSTILE_HEADERS = [
  ['empty', new Uint8Array(0), 'BAD_DATA', '0 bytes, at least 20', BAD],
  ['19 bytes', HEADER.subarray(0, 19), 'BAD_DATA', '19 bytes, at least 20', BAD],
  ['one byte short', HEADER.subarray(0, HEADER.length - 1), 'BAD_DATA', '125 bytes for 2 layers (126 expected)', BAD],
  ['one byte too many', Uint8Array.of(...HEADER, 0), 'BAD_DATA', '127 bytes for 2 layers', BAD],
  ['no layers', header((h, v) => v.setUint32(8, 0, true)), 'BAD_DATA', 'no layers', BAD],
  ['2^32-1 layers', header((h, v) => v.setUint32(8, 0xffffffff, true)), 'BAD_DATA', "4294967295 layers, more than the server's limit of 4096", BAD],
  ['4097 layers', chain(Array(4097).fill(layerRecord(8))), 'BAD_DATA', "4097 layers, more than the server's limit of 4096", BAD],
  ['window filter', WINDOW_HEADER, 'UNSUPPORTED', 'window filter dump', 'OK'],
  ['window magic, 12 bytes', WINDOW_HEADER.subarray(0, 12), 'UNSUPPORTED', 'window filter dump', BAD],
  ['BFwindow with layers', Uint8Array.of(...new TextEncoder().encode('BFwindow'), 1, 0, 0, 0, ...HEADER.subarray(12)), 'BAD_DATA', '', BAD],
  ['option bit 16', header((h, v) => v.setUint32(12, 5 | 16, true)), 'BAD_DATA', 'unknown option bits 0x10', BAD],
  ['sizes do not add up', header((h, v) => v.setBigUint64(0, 13n, true)), 'BAD_DATA', "add up to 12, not the chain's 13", BAD],
  ['chain size 2^63', header((h, v) => v.setBigUint64(0, 2n ** 63n, true)), 'BAD_DATA', 'add up to 12', BAD],
  ['error 0', header((h, v) => v.setFloat64(L0 + 24, 0, true)), 'BAD_DATA', 'layer 0: error rate 0 is not', BAD],
  ['error 1', header((h, v) => v.setFloat64(L0 + 24, 1, true)), 'BAD_DATA', 'layer 0: error rate 1 is not', BAD],
  ['error NaN', header((h, v) => v.setFloat64(L1 + 24, NaN, true)), 'BAD_DATA', 'layer 1: error rate NaN', BAD],
  ['k != ceil(ln2 bpe)', header((h, v) => v.setUint32(L0 + 40, 6, true)), 'BAD_DATA', 'layer 0: 6 hashes, but ceil', BAD],
  ['bpe NaN', header((h, v) => v.setFloat64(L0 + 32, NaN, true)), 'BAD_DATA', 'layer 0: 5 hashes, but ceil(ln2 x bpe NaN) = 0', BAD],
  ['bpe -inf, k 0', header((h, v) => { v.setFloat64(L0 + 32, -Infinity, true); v.setUint32(L0 + 40, 0, true); }), 'BAD_DATA', 'layer 0: 0 hashes, outside 1..2048', BAD],
  ['bpe -inf', header((h, v) => v.setFloat64(L0 + 32, -Infinity, true)), 'BAD_DATA', 'ceil(ln2 x bpe -Infinity) = 0', BAD],
  ['k 2773', header((h, v) => { v.setFloat64(L0 + 32, 4000, true); v.setUint32(L0 + 40, 2773, true); }), 'BAD_DATA', '2773 hashes, outside 1..2048', BAD],
  ['bits != 8 bytes', header((h, v) => v.setBigUint64(L0 + 8, 65n, true)), 'BAD_DATA', 'layer 0: 65 bits is not 8 x 8 bytes', BAD],
  ['bytes 2^64-1', header((h, v) => v.setBigUint64(L1, 2n ** 64n - 1n, true)), 'BAD_DATA', 'layer 1: 128 bits is not 8 x', BAD],
  ['0 bits', header((h, v) => { v.setBigUint64(L0, 0n, true); v.setBigUint64(L0 + 8, 0n, true); }), 'BAD_DATA', 'layer 0: 0 bits', BAD],
  ['n2 64', header((h) => (h[L0 + 52] = 64)), 'BAD_DATA', 'n2 64 is above 63', BAD],
  ['bits < 2^n2', header((h) => (h[L0 + 52] = 7)), 'BAD_DATA', '64 bits, fewer than 2^n2 = 2^7', BAD],
  ['item counts overflow', chain([layerRecord(8, 2n ** 63n), layerRecord(8, 2n ** 63n)], { size: 0n }), 'BAD_DATA', 'item counts overflow 64 bits at layer 1', BAD],
  ['byte counts overflow', chain(Array(16).fill(layerRecord(2n ** 60n))), 'BAD_DATA', 'byte counts overflow 64 bits at layer 15', BAD],
  ['2^40 bytes', header((h, v) => { v.setBigUint64(L1, 2n ** 40n, true); v.setBigUint64(L1 + 8, 2n ** 43n, true); }), 'OUT_OF_MEMORY', 'the layers take 1099511627784 bytes, more than the limit of 1073741824', 'received bad data'],
  ['2^60 bytes x 15', chain(Array(15).fill(layerRecord(2n ** 60n))), 'OUT_OF_MEMORY', 'more than the limit', 'received bad data'],
  ['1 GiB + 8 bytes', chain([layerRecord(2 ** 30), layerRecord(8)]), 'OUT_OF_MEMORY', 'the layers take 1073741832 bytes, more than the limit of 1073741824 (option maxBytes)', null],
];

/** Headers the server accepts and so does the checker (decodeHeader alone: no chunks). */
export const ACCEPTED_HEADERS = [
  ['n2 6 (64-bit power-of-two layer)', header((h) => (h[L0 + 52] = 6))],
  ['4096 layers', chain(Array(4096).fill(layerRecord(8)))],
  ['item counts above 2^53', chain([layerRecord(8, 2n ** 62n + 1n), layerRecord(8, 3n)])],
  ['growth 0, options 0', chain([layerRecord(8)], { options: 0, growth: 0 })],
  ['exactly 1 GiB', chain([layerRecord(2 ** 30)])],
];

/**
 * Iterators: [value, the verdict of applyChunk(value, empty) on a gv2 filter (a code, or null
 * when accepted), words the message must contain]. live.test.mjs sends every string, bigint
 * and safe-integer one to the server as BF.LOADCHUNK's iterator.
 */
export const ITERATORS = [
  [9, null, ''],
  ['9', null, ''],
  [9n, null, ''],
  ['24', null, ''],
  ['\u0661\u0662', 'NOT_NUMERIC', '"١٢" is not a Redis integer (ASCII digits'],
  ['\u00b2', 'NOT_NUMERIC', 'not a Redis integer'],
  ['1e3', 'NOT_NUMERIC', '"1e3" is not a Redis integer'],
  ['9.0', 'NOT_NUMERIC', 'not a Redis integer'],
  [' 9', 'NOT_NUMERIC', 'not a Redis integer'],
  ['9 ', 'NOT_NUMERIC', 'not a Redis integer'],
  ['9\n', 'NOT_NUMERIC', 'not a Redis integer'],
  ['+9', 'NOT_NUMERIC', 'not a Redis integer'],
  ['09', 'NOT_NUMERIC', 'no leading zeros'],
  ['-0', 'NOT_NUMERIC', "no leading zeros, no '-0'"],
  ['00', 'NOT_NUMERIC', 'no leading zeros'],
  ['', 'NOT_NUMERIC', 'not a Redis integer'],
  ['-', 'NOT_NUMERIC', 'not a Redis integer'],
  ['--9', 'NOT_NUMERIC', 'not a Redis integer'],
  ['0x10', 'NOT_NUMERIC', 'not a Redis integer'],
  ['9223372036854775808', 'NOT_NUMERIC', 'outside the signed 64-bit range'],
  ['-9223372036854775809', 'NOT_NUMERIC', 'outside the signed 64-bit range'],
  [2n ** 63n, 'NOT_NUMERIC', '9223372036854775808 is outside the signed 64-bit range'],
  [-(2n ** 63n) - 1n, 'NOT_NUMERIC', 'outside the signed 64-bit range'],
  [2 ** 62, 'NOT_NUMERIC', 'iterator 4611686018427387904 is above 2^53 − 1, beyond what a JS number holds exactly'],
  [2 ** 53, 'NOT_NUMERIC', 'iterator 9007199254740992 is above 2^53 − 1'],
  [-(2 ** 60), 'NOT_NUMERIC', 'is below −(2^53 − 1)'],
  [1.5, 'NOT_NUMERIC', 'iterator 1.5 is not an integer'],
  [NaN, 'NOT_NUMERIC', 'iterator NaN is not an integer'],
  [Infinity, 'NOT_NUMERIC', 'iterator Infinity is not an integer'],
  [null, 'NOT_NUMERIC', 'must be a number, bigint or string, not null'],
  [true, 'NOT_NUMERIC', 'not boolean'],
  [Uint8Array.of(0x39), 'NOT_NUMERIC', 'not object'],
  [2 ** 53 - 1, 'NO_LINK', 'iterator 9007199254740991: its start, offset 9007199254740990, is outside every layer (24 bytes)'],
  [2n ** 62n, 'NO_LINK', 'iterator 4611686018427387904: its start, offset 4611686018427387903, is outside every layer (24 bytes)'],
  ['4611686018427387904', 'NO_LINK', 'offset 4611686018427387903'],
  ['9223372036854775807', 'NO_LINK', 'offset 9223372036854775806'],
  ['-9223372036854775808', 'BAD_DATA', 'iterator -9223372036854775808 for 0 bytes (not positive)'],
  [0, 'BAD_DATA', 'not positive'],
  ['-5', 'BAD_DATA', 'not positive'],
];

/** Chunks on a gv2 filter (layers of 8 and 16 bytes): [iterator, data, code or null, words]. */
const enc = (s) => new TextEncoder().encode(s);
export const CHUNKS = [
  [0, new Uint8Array(0), 'BAD_DATA', 'iterator 0 for 0 bytes (not positive)'],
  [-5, new Uint8Array(0), 'BAD_DATA', 'not positive'],
  [2, enc('abc'), 'BAD_DATA', "iterator 2 for 3 bytes (smaller than the chunk's length)"],
  [3, enc('abc'), 'NO_LINK', 'its start, offset -1, is outside every layer'],
  [26, new Uint8Array(0), 'NO_LINK', 'offset 25, is outside every layer (24 bytes)'],
  [25, new Uint8Array(0), 'NO_LINK', 'offset 24'],
  [24, new Uint8Array(0), null, ''],
  [12, enc('0123456789'), 'TOO_BIG', '10 bytes from offset 1 run past the end of layer 0 (7 bytes left)'],
  [30, new Uint8Array(20), 'TOO_BIG', '20 bytes from offset 9 run past the end of layer 1 (15 bytes left)'],
  [9, enc('01234567'), null, ''],
  [25, new Uint8Array(16), null, ''],
  [2n ** 53n + 5n, new Uint8Array(10), 'NO_LINK', 'offset 9007199254740986'],
];


// ---------------------------------------------------------------------------------------------
// Cuckoo filters: CF.SCANDUMP walks, each with the checker's verdict (`code`, null = accepted)
// and, for the live test, what CF.LOADCHUNK answers when the walk's pairs are sent in order
// (`server`: the first error, null = every pair answered OK; `live: false` = not sent, such as
// a header the server would allocate gigabytes for). `walk(h)` builds the pairs from a header
// maker `h({items, buckets, deletes, filters, bucketSize, maxIterations, expansion})`.
/** A 38-byte header. */
export function cfHeader({ items = 20n, buckets = 4n, deletes = 0n, filters = 1n, bucketSize = 2, maxIterations = 20, expansion = 1 } = {}) {
  const h = new DataView(new ArrayBuffer(38));
  h.setBigUint64(0, BigInt(items), true);
  h.setBigUint64(8, BigInt(buckets), true);
  h.setBigUint64(16, BigInt(deletes), true);
  h.setBigUint64(24, BigInt(filters), true);
  h.setUint16(32, bucketSize, true);
  h.setUint16(34, maxIterations, true);
  h.setUint16(36, expansion, true);
  return new Uint8Array(h.buffer);
}

const bytes = (n, v = 0) => new Uint8Array(n).fill(v);
const CANNOT_CREATE = "Couldn't create filter!";
const CANNOT_LOAD = "Couldn't load chunk!";
export const CF_HOSTILE = [
  { name: 'one sub-filter', walk: (h) => [[1, h()], [9, bytes(8, 7)]], code: null, server: null },
  { name: 'two sub-filters', walk: (h) => [[1, h({ filters: 2n })], [9, bytes(8, 7)], [17, bytes(8, 9)]], code: null, server: null },
  { name: 'expansion 3: 4 then 12 buckets', walk: (h) => [[1, h({ filters: 2n, expansion: 3 })], [9, bytes(8)], [33, bytes(24, 5)]], code: null, server: null,
    check: (f) => { if (f.subFilterBuckets.join() !== '4,12') throw new Error(`buckets ${f.subFilterBuckets}`); } },
  { name: 'a start past the last sub-filter lands in the last one', walk: (h) => [[1, h({ filters: 2n })], [9, bytes(8)], [25, bytes(8, 3)]], code: null, server: null },
  { name: 'sub-filter count kept in 16 bits', walk: (h) => [[1, h({ filters: (1n << 32n) + 1n })], [9, bytes(8)]], code: null, server: null },
  { name: 'header of 37 bytes', walk: (h) => [[1, h().subarray(0, 37)]], code: 'INVALID_HEADER', server: 'Invalid header' },
  { name: 'header of 39 bytes', walk: (h) => [[1, Uint8Array.from([...h(), 0])]], code: 'INVALID_HEADER', server: 'Invalid header' },
  { name: 'empty header', walk: () => [[1, bytes(0)]], code: 'INVALID_HEADER', server: 'Invalid header' },
  { name: '3 buckets', walk: (h) => [[1, h({ buckets: 3n })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE, message: /not a power of two/ },
  { name: '0 buckets', walk: (h) => [[1, h({ buckets: 0n })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: '2^56 buckets', walk: (h) => [[1, h({ buckets: 1n << 56n })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: 'bucket size 0', walk: (h) => [[1, h({ bucketSize: 0 })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: 'bucket size 256', walk: (h) => [[1, h({ bucketSize: 256 })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: 'max iterations 0', walk: (h) => [[1, h({ maxIterations: 0 })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: '0 sub-filters', walk: (h) => [[1, h({ filters: 0n })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: '65536 sub-filters (0 in 16 bits)', walk: (h) => [[1, h({ filters: 65536n })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: '2 sub-filters with expansion 0', walk: (h) => [[1, h({ filters: 2n, expansion: 0 })]], code: 'CANNOT_CREATE', server: CANNOT_CREATE },
  { name: 'expansion 32769 (RedisBloom 8 refuses it)', walk: (h) => [[1, h({ expansion: 32769 })], [9, bytes(8)]], code: 'CANNOT_CREATE', live: false },
  { name: 'expansion 32769 with maxExpansion 65535', walk: (h) => [[1, h({ expansion: 32769 })], [9, bytes(8)]], opts: { maxExpansion: 65535 }, code: null, live: false },
  { name: 'a sub-filter past 2^56 buckets', walk: (h) => [[1, h({ buckets: 1n << 50n, filters: 2n, expansion: 256 })]], opts: { maxBytes: Infinity }, code: 'CANNOT_CREATE', live: false, message: /sub-filter 1/ },
  { name: 'tables over maxBytes', walk: (h) => [[1, h({ buckets: 1n << 30n })]], code: 'OUT_OF_MEMORY', live: false },
  { name: 'tables over a small maxBytes', walk: (h) => [[1, h({ filters: 3n })]], opts: { maxBytes: 20 }, code: 'OUT_OF_MEMORY', live: false, message: /sub-filter 2/ },
  { name: 'a chunk before the header', walk: () => [[9, bytes(8)]], code: 'NOT_FOUND', server: 'ERR not found' },
  { name: 'position abc', walk: (h) => [[1, h()], ['abc', bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position 1.0', walk: (h) => [[1, h()], ['1.0', bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position ""', walk: (h) => [[1, h()], ['', bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position +9', walk: (h) => [[1, h()], ['+9', bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position 0 with data', walk: (h) => [[1, h()], [0, bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position 2^63', walk: (h) => [[1, h()], ['9223372036854775808', bytes(8)]], code: 'INVALID_POSITION', server: 'Invalid position' },
  { name: 'position 2^63 - 1', walk: (h) => [[1, h()], ['9223372036854775807', bytes(8)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'position -1', walk: (h) => [[1, h()], [-1, bytes(8)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'a second header', walk: (h) => [[1, h()], [1, h()]], code: 'ITEM_EXISTS', server: 'ERR item exists' },
  { name: 'an empty chunk', walk: (h) => [[1, h()], [9, bytes(0)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'a chunk longer than its sub-filter', walk: (h) => [[1, h()], [73, bytes(72)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'a chunk crossing into the next sub-filter', walk: (h) => [[1, h({ filters: 2n })], [13, bytes(8)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'position smaller than the length', walk: (h) => [[1, h()], [7, bytes(8)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'far past the end', walk: (h) => [[1, h()], [100009, bytes(8)]], code: 'CANNOT_LOAD', server: CANNOT_LOAD },
  { name: 'header only', walk: (h) => [[1, h()]], code: 'INCOMPLETE', server: null },
  { name: 'a sub-filter missing', walk: (h) => [[1, h({ filters: 2n })], [9, bytes(8)]], code: 'INCOMPLETE', server: null },
  { name: 'half a sub-filter', walk: (h) => [[1, h()], [5, bytes(4)]], code: 'INCOMPLETE', server: null },
];

/** `a` shuffled by a seeded generator (the same order every run). */
export function shuffled(a, seed) {
  const out = a.slice();
  let x = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
