// The Ribbon filter checker (RibbonFilter) against the Rust core: filters of nine shapes built
// by core/examples/ribbon_vectors.rs (no items, one, a few hundred, 1e5 at 1 %, 0.1 % and
// 0.01 %, whole result bits, ε = 0.5, a crowded set with bumped items), each rebuilt from its
// RF.SCANDUMP walk and asked every item the core was asked (1 007 601 in all): every answer is
// the core's, which RF.MEXISTS gives. Then hostile headers, chunks and walks with the verdicts
// of the core's loader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RibbonFilter, ScandumpError, RF_HEADER_BYTES } from '../src/index.js';
import { ribbonVectors } from './ribbon_vectors.mjs';

const shape = (name) => ribbonVectors().shapes.find((s) => s.name === name);

/** Asserts that `f` throws a ScandumpError with `code`. */
function refuses(f, code, what) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof ScandumpError, `${what}: ${e}`);
    assert.equal(e.code, code, `${what}: ${e.message}`);
    return true;
  }, what);
}

test('every answer is the core\'s on 1 007 601 items of nine shapes; no member is absent', () => {
  const { shapes } = ribbonVectors();
  assert.equal(shapes.length, 9);
  let asked = 0;
  for (const s of shapes) {
    const f = RibbonFilter.fromScandump(s.pairs);
    assert.deepEqual([f.items, f.blocks, f.lowerBits, f.upperStart, f.bumpedCount, f.byteLength, f.errorRate],
      [s.items, s.blocks, s.lower_bits, s.upper_start, s.bumped, s.body_bytes, s.error_rate], s.name);
    assert.equal(s.asked.length, s.members + s.probes, s.name);
    let differ = 0;
    let firstDiffer = null;
    let positives = 0;
    let membersFound = 0;
    s.asked.forEach((item, i) => {
      const has = f.has(item);
      const core = (s.answers[i >> 3] >> (i & 7)) & 1;
      if (has !== (core === 1)) {
        differ++;
        firstDiffer ??= item;
      }
      if (has) positives++;
      if (has && i < s.members) membersFound++;
    });
    assert.equal(differ, 0, `${s.name}: ${differ} answers differ from the core's, the first for ${firstDiffer}`);
    assert.equal(membersFound, s.members, `${s.name}: a member answered absent`);
    assert.equal(positives, s.positives, s.name);
    asked += s.asked.length;
  }
  assert.equal(asked, 1007601);
  // The shapes cover what they are named for.
  assert.ok(shape('crowded').bumped > 100, 'crowded: bumped items');
  assert.equal(shape('half').lower_bits, 1);
  assert.ok(shape('e2_1e5').upper_start > 0 && shape('e2_1e5').upper_start < shape('e2_1e5').blocks, '1 %: fractional');
});

test('a body split anywhere loads the same filter, in order only', () => {
  const s = shape('crowded');
  const header = s.pairs[0][1];
  const body = s.pairs[1][1];
  assert.equal(body.length, s.body_bytes);
  // Pieces of 3, 5, 7 … bytes, each with the iterator RF.SCANDUMP would give it (its end + 1).
  const pairs = [[1, header]];
  for (let at = 0, len = 3; at < body.length; at += len, len += 2) {
    const end = Math.min(body.length, at + len);
    pairs.push([String(end + 1), body.subarray(at, end)]);
  }
  const f = RibbonFilter.fromScandump(pairs);
  for (let i = 0; i < s.asked.length; i += 7) {
    assert.equal(f.has(s.asked[i]), ((s.answers[i >> 3] >> (i & 7)) & 1) === 1, s.asked[i]);
  }
  // Out of order, repeated, empty, past the end: refused, and the filter is unchanged.
  const g = RibbonFilter.decodeHeader(header);
  g.applyChunk(9, body.subarray(0, 8));
  for (const [what, iter, data] of [
    ['the first chunk again', 9, body.subarray(0, 8)],
    ['a chunk skipped', 25, body.subarray(16, 24)],
    ['an empty chunk', 9, body.subarray(8, 8)],
    ['one byte past the end', body.length + 2, Uint8Array.from([...body.subarray(8), 0])],
    ['the header again', 1, header],
    ['iterator 0', 0, body.subarray(8)],
    ['a negative iterator', -1, body.subarray(8)],
  ]) {
    refuses(() => g.applyChunk(iter, data), 'INVALID_POSITION', what);
    assert.equal(g.nextPosition, 9, what);
    assert.equal(g.complete, false, what);
  }
  refuses(() => g.has('x'), 'INCOMPLETE', 'a half-copied filter answers nothing');
  refuses(() => g.applyChunk('9x', body.subarray(8)), 'NOT_NUMERIC', 'an iterator that is not an integer');
  g.applyChunk(body.length + 1, body.subarray(8));
  assert.equal(g.complete, true);
  assert.equal(g.has(s.asked[0]), true);
  refuses(() => g.applyChunk(body.length + 1, body.subarray(8)), 'INVALID_POSITION', 'a chunk after the last');
});

/** The 49-byte header of `shape('few')` with `bytes` written at `at`. */
function header(at, bytes) {
  const h = Uint8Array.from(shape('few').pairs[0][1]);
  h.set(bytes, at);
  return h;
}
const u64 = (v) => new Uint8Array(new BigUint64Array([BigInt(v)]).buffer);
const u32 = (v) => new Uint8Array(new Uint32Array([v]).buffer);
const f64 = (v) => new Uint8Array(new Float64Array([v]).buffer);

test('hostile headers: the core loader\'s checks, before anything is allocated', () => {
  assert.equal(shape('few').pairs[0][1].length, RF_HEADER_BYTES);
  for (const [what, data, code] of [
    ['version 2', header(0, [2]), 'INVALID_HEADER'],
    ['version 0', header(0, [0]), 'INVALID_HEADER'],
    ['error rate 0', header(1, f64(0)), 'INVALID_HEADER'],
    ['error rate 1', header(1, f64(1)), 'INVALID_HEADER'],
    ['error rate NaN', header(1, f64(NaN)), 'INVALID_HEADER'],
    ['error rate -0.5', header(1, f64(-0.5)), 'INVALID_HEADER'],
    ['2^32 - 1 items', header(9, u64(2 ** 32 - 1)), 'INVALID_HEADER'],
    ['no blocks', header(17, u64(0)), 'INVALID_HEADER'],
    ['2^62 blocks', header(17, u64(2n ** 62n)), 'OUT_OF_MEMORY'],
    ['2^40 blocks (the body over maxBytes)', header(17, u64(2n ** 40n)), 'OUT_OF_MEMORY'],
    ['no result bits', header(25, u32(0)), 'INVALID_HEADER'],
    ['33 result bits', header(25, u32(33)), 'INVALID_HEADER'],
    ['32 result bits and upper blocks of 33', header(25, u32(32)), 'INVALID_HEADER'],
    ['upper blocks past the end', header(29, u64(4)), 'INVALID_HEADER'],
    ['more bumped hashes than items', header(41, u64(301)), 'INVALID_HEADER'],
    ['48 bytes', shape('few').pairs[0][1].subarray(0, 48), 'INVALID_HEADER'],
    ['50 bytes', Uint8Array.from([...shape('few').pairs[0][1], 0]), 'INVALID_HEADER'],
  ]) {
    refuses(() => RibbonFilter.decodeHeader(data), code, what);
    refuses(() => RibbonFilter.fromScandump([[1, data]]), code, what);
  }
  // Accepted at the edges: 32 result bits with no upper block, upper_start = blocks, the body
  // exactly maxBytes.
  const whole = header(25, u32(32));
  whole.set(u64(3), 29);
  assert.equal(RibbonFilter.decodeHeader(whole).byteLength, 3 * 32 * 16);
  const body = shape('few').body_bytes;
  assert.equal(RibbonFilter.decodeHeader(header(0, [1]), { maxBytes: body }).byteLength, body);
  refuses(() => RibbonFilter.decodeHeader(header(0, [1]), { maxBytes: body - 1 }), 'OUT_OF_MEMORY', 'maxBytes');
});

test('walks: the header first, the body whole, bumped hashes increasing', () => {
  const s = shape('crowded');
  const [head, chunk] = s.pairs;
  refuses(() => RibbonFilter.fromScandump([]), 'INCOMPLETE', 'no pair');
  refuses(() => RibbonFilter.fromScandump([[0, new Uint8Array(0)]]), 'INCOMPLETE', 'the end pair alone');
  refuses(() => RibbonFilter.fromScandump([chunk, head]), 'NOT_FOUND', 'a chunk before the header');
  for (const it of [1.5, '01', null]) {
    refuses(() => RibbonFilter.fromScandump([[it, head[1]], chunk]), 'NOT_NUMERIC', `header iterator ${it}`);
  }
  refuses(() => RibbonFilter.fromScandump([head]), 'INCOMPLETE', 'the header alone');
  refuses(() => RibbonFilter.fromScandump([head, [chunk[0] - 1, chunk[1].subarray(0, -1)]]), 'INCOMPLETE', 'the last byte missing');
  refuses(() => RibbonFilter.fromScandump([head, chunk, chunk]), 'INVALID_POSITION', 'the body twice');
  // Two bumped hashes swapped: the body is complete but not a filter.
  const words = s.body_bytes - 8 * s.bumped;
  const swapped = Uint8Array.from(chunk[1]);
  swapped.set(chunk[1].subarray(words + 8, words + 16), words);
  swapped.set(chunk[1].subarray(words, words + 8), words + 8);
  refuses(() => RibbonFilter.fromScandump([head, [chunk[0], swapped]]), 'BAD_DATA', 'bumped hashes out of order');
  // A repeated bumped hash too.
  const repeated = Uint8Array.from(chunk[1]);
  repeated.set(chunk[1].subarray(words, words + 8), words + 8);
  refuses(() => RibbonFilter.fromScandump([head, [chunk[0], repeated]]), 'BAD_DATA', 'a bumped hash twice');
  // The end pair in any of its forms is ignored; iterators as strings and bigints are read.
  for (const end of [[0, new Uint8Array(0)], [0n, null], ['0', new Uint8Array(0)]]) {
    const f = RibbonFilter.fromScandump([['1', head[1]], [BigInt(chunk[0]), chunk[1]], end]);
    assert.equal(f.has(s.asked[0]), true);
  }
});
