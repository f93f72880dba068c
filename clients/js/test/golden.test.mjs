// The checker against recorded data: the golden vectors (hash pairs, bit positions, SCANDUMP
// walks) and every RedisBloom fixture key's recorded SCANDUMP walk, items and probe answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BloomFilter, hashPairHex } from '../src/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const GOLDEN = JSON.parse(readFileSync(join(ROOT, 'tests', 'data', 'golden-vectors.json'), 'utf8'));
const FX = join(ROOT, 'tests', 'fixtures', 'redisbloom', 'keys');
const unhex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

/** The [iterator, bytes] pairs of a golden vector's recorded walk. */
function goldenChunks(gv) {
  const out = [];
  for (const c of gv.scandump) {
    let data;
    if (c.hex !== null) data = unhex(c.hex);
    else {
      data = new Uint8Array(c.len);
      for (const [off, v] of Object.entries(c.nonzero_bytes)) data[Number(off)] = parseInt(v, 16);
    }
    out.push([c.reply_iter, data]);
  }
  return out;
}

test('hash pairs match the golden vectors and the legacy check values', () => {
  let n = 0;
  for (const [name, gv] of Object.entries(GOLDEN)) {
    if (name.startsWith('_')) continue;
    for (const [item, pair] of Object.entries(gv.hash64)) {
      assert.deepEqual(hashPairHex(item), pair, `${name} ${JSON.stringify(item)}`);
      n++;
    }
  }
  assert.equal(n, 8);
  assert.deepEqual(hashPairHex('hello', true), ['000000007f1ddbbd', '00000000ed999d2d']);
  assert.deepEqual(hashPairHex('', true), ['00000000106e08d9', '00000000456d9087']);
  // Every tail length of both hashes, bytes and strings alike.
  assert.deepEqual(hashPairHex(new TextEncoder().encode('foobar123')), hashPairHex('foobar123'));
});

test('golden SCANDUMP walks rebuild filters that hold exactly their items', () => {
  const items = { gv1: ['hello'], gv2: 'abcdefghijkl'.split(''), gv3: ['foo', 'bar', 'baz'], gv4: [''] };
  for (const [name, members] of Object.entries(items)) {
    const gv = GOLDEN[name];
    const f = BloomFilter.fromScandump(goldenChunks(gv));
    assert.equal(f.layerCount, gv.links.length, name);
    assert.equal(f.size, members.length, name);
    for (const m of members) assert.equal(f.has(m), true, `${name} has ${m}`);
  }
  // gv1: the one item sets exactly the recorded bit positions, so a probe is present only when
  // its 8 positions are all among them.
  const f = BloomFilter.fromScandump(goldenChunks(GOLDEN.gv1));
  assert.equal(f.has('hello'), true);
  assert.equal(f.has('hellp'), false);
  assert.equal(f.has(''), false);
  const bytes = f.layers[0].data;
  const set = [];
  for (let x = 0; x < 11072; x++) if (bytes[x >> 3] & (1 << (x & 7))) set.push(x);
  assert.deepEqual(set, [...GOLDEN.gv1.hello_bit_positions].sort((a, b) => a - b));
});

test('RedisBloom fixture keys: items present, recorded false positives exactly', () => {
  let checked = 0;
  for (const file of readdirSync(FX).sort()) {
    const fx = JSON.parse(readFileSync(join(FX, file), 'utf8'));
    if (fx.type !== 'MBbloom--') continue;
    if (fx.scandump.some((c) => c.data_hex == null)) continue; // fx:big: only a digest recorded
    const f = BloomFilter.fromScandump(fx.scandump.map((c) => [c.next_iter, unhex(c.data_hex)]));
    assert.equal(f.layerCount, fx.header.nfilters, file);
    assert.equal(f.options, fx.header.options, file);
    const absent = new Set(fx.items_mexists_zero_n);
    fx.items_hex.forEach((h, i) => assert.equal(f.has(unhex(h)), !absent.has(i), `${file} item ${i}`));
    const key = unhex(fx.key_hex);
    const fps = [];
    for (let n = 0; n < fx.probes.count; n++) {
      const probe = Buffer.concat([Buffer.from('probe:'), key, Buffer.from(`:${n}`)]);
      if (f.has(probe)) fps.push(n);
    }
    assert.deepEqual(fps, fx.probes.false_positive_n, file);
    checked++;
  }
  assert.equal(checked, 10);
});

test('every modulo strategy agrees with exact BigInt arithmetic', () => {
  // One-layer headers: exact-size layers just above 2^21 and 2^22 bits (float quotient), a small
  // one (small-modulus path) and power-of-two layers (mask path); bit arrays 90% ones so most
  // probes test every position.
  const shapes = [[4_198_400, 0], [2_097_216, 0], [1_152, 0], [1 << 20, 20], [1 << 14, 14], [64, 3]];
  let seed = 12345;
  const rnd = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
  for (const [bits, n2] of shapes) {
    const bpe = 9.585058377367446;
    const h = new DataView(new ArrayBuffer(73));
    h.setUint32(8, 1, true);
    h.setUint32(12, n2 ? 4 : 5, true);
    h.setUint32(16, 2, true);
    h.setBigUint64(20, BigInt(bits / 8), true);
    h.setBigUint64(28, BigInt(bits), true);
    h.setFloat64(44, 0.01, true);
    h.setFloat64(52, bpe, true);
    h.setUint32(60, 7, true);
    h.setBigUint64(64, 1000n, true);
    h.setUint8(72, n2);
    const data = new Uint8Array(bits / 8);
    for (let i = 0; i < data.length; i++) for (let b = 0; b < 8; b++) if (rnd() < 0.9) data[i] |= 1 << b;
    const fast = BloomFilter.fromScandump([[1, new Uint8Array(h.buffer)], [1 + data.length, data]]);
    const exact = BloomFilter.fromScandump([[1, new Uint8Array(h.buffer)], [1 + data.length, data]]);
    for (const l of exact.layers) {
      l.kind = 3;
      l.bigM = BigInt(l.m);
    }
    let present = 0;
    for (let i = 0; i < 20_000; i++) {
      const item = `probe:${bits}:${i}`;
      assert.equal(fast.has(item), exact.has(item), `${bits} bits, n2 ${n2}, ${item}`);
      present += fast.has(item);
    }
    assert.ok(present > 5_000 && present < 15_000, `${present} present`);
    // All ones: every item must be present, i.e. every position computed is inside the array
    // (a position off by ±M, the float path's correction, would fall outside and read as 0).
    const ones = new Uint8Array(bits / 8).fill(0xff);
    const full = BloomFilter.fromScandump([[1, new Uint8Array(h.buffer)], [1 + ones.length, ones]]);
    let missing = 0;
    for (let i = 0; i < 300_000; i++) if (!full.has(`ones:${i}`)) missing++;
    assert.equal(missing, 0, `${bits} bits, n2 ${n2}`);
  }
});
