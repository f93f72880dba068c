// Malformed, hostile and truncated walks (the tables in cases.mjs): every one is refused with a
// ScandumpError carrying the verdict BF.LOADCHUNK gives (live.test.mjs checks the server's side),
// UNSUPPORTED for a window filter's dump or INCOMPLETE for a walk with bytes missing, and a
// message saying what is wrong; nothing is allocated from a header and nothing hangs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BloomFilter, ScandumpError } from '../src/index.js';
import {
  HEADER, WALK, L0, L1, header, layerRecord, chain,
  HOSTILE_HEADERS, ACCEPTED_HEADERS, ITERATORS, CHUNKS, shuffled,
} from './cases.mjs';

const enc = (s) => new TextEncoder().encode(s);

function refused(code, fn) {
  assert.throws(fn, (e) => e instanceof ScandumpError && e.code === code, `expected ${code}`);
}

test('the intact walk loads; reordered chunks load too', () => {
  const f = BloomFilter.fromScandump(WALK);
  assert.equal(f.layerCount, 2);
  assert.equal(f.byteLength, 24);
  const g = BloomFilter.fromScandump([WALK[0], WALK[2], WALK[1]]);
  for (const x of 'abcdefghijkl') assert.equal(g.has(x), true);
  // Iterators as BigInt or decimal strings (what some clients return) are accepted.
  BloomFilter.fromScandump(WALK.map(([i, d]) => [BigInt(i), d]));
  BloomFilter.fromScandump(WALK.map(([i, d]) => [String(i), Buffer.from(d)]));
});

function refusedWith(code, words, fn) {
  let err;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ScandumpError, `expected ScandumpError ${code}, got ${err}`);
  assert.equal(err.code, code, err.message);
  assert.ok(err.message.includes(words), `${JSON.stringify(err.message)} lacks ${JSON.stringify(words)}`);
}

test('bad headers: every LOADCHUNK header check, with what is wrong', () => {
  for (const [name, h, code, words] of HOSTILE_HEADERS) {
    refusedWith(code, words, () => BloomFilter.fromScandump([[1, h]]));
    refusedWith(code, words, () => BloomFilter.decodeHeader(h));
    assert.ok(name);
  }
});

test('headers the server accepts are accepted', () => {
  for (const [name, h] of ACCEPTED_HEADERS) {
    const f = BloomFilter.decodeHeader(h);
    assert.equal(f.size, Number(new DataView(h.buffer, h.byteOffset).getBigUint64(0, true)), name);
    assert.equal(f.has('a'), false, name);
  }
  BloomFilter.fromScandump([[1, header((h) => (h[L0 + 52] = 6))], ...WALK.slice(1)]);
});

test('maxBytes: the caller\'s limit, checked after every BAD_DATA check', () => {
  refusedWith('OUT_OF_MEMORY', 'the layers take 24 bytes, more than the limit of 23 (option maxBytes)',
    () => BloomFilter.fromScandump(WALK, { maxBytes: 23 }));
  BloomFilter.fromScandump(WALK, { maxBytes: 24 });
  BloomFilter.fromScandump(WALK, { maxBytes: Infinity });
  refused('BAD_DATA', () => BloomFilter.decodeHeader(HEADER.subarray(0, 125), 0));
  for (const m of [-1, 1.5, NaN, '24', 2 ** 60]) {
    assert.throws(() => BloomFilter.fromScandump(WALK, { maxBytes: m }), TypeError);
  }
});

test('a header announcing 1 GiB allocates nothing; its arrays come with the chunks', () => {
  // Measured as ArrayBuffer memory (what a Uint8Array of the layer would count), not time.
  const gib = chain([layerRecord(2 ** 29), layerRecord(2 ** 29)]);
  const before = process.memoryUsage().arrayBuffers;
  const f = BloomFilter.decodeHeader(gib);
  assert.equal(f.byteLength, 2 ** 30);
  assert.equal(f.has('a'), false); // a query of the header alone allocates nothing either
  refusedWith('INCOMPLETE', 'bytes from offset 16 of 1073741824 are missing',
    () => BloomFilter.fromScandump([[1, gib], [17, new Uint8Array(16)]]));
  refused('OUT_OF_MEMORY', () => BloomFilter.fromScandump([[1, gib]], { maxBytes: 2 ** 30 - 1 }));
  refused('OUT_OF_MEMORY', () => BloomFilter.fromScandump([[1, chain([layerRecord(2 ** 40)])]]));
  const grown = process.memoryUsage().arrayBuffers - before;
  assert.ok(grown < 2 ** 20, `${grown} bytes of ArrayBuffers`);
  // A layer's array is allocated by its first chunk, and only that layer's.
  const g = BloomFilter.decodeHeader(HEADER);
  g.applyChunk(25, new Uint8Array(16).fill(1));
  assert.equal(g.layers[0].data.length, 0);
  assert.equal(g.layers[1].data.length, 16);
});

test('iterators: Redis integers exactly, numbers only where exact', () => {
  for (const [value, code, words] of ITERATORS) {
    const f = BloomFilter.decodeHeader(HEADER);
    if (code === null) f.applyChunk(value, new Uint8Array(0));
    else refusedWith(code, words, () => f.applyChunk(value, new Uint8Array(0)));
  }
  refused('NOT_NUMERIC', () => BloomFilter.fromScandump([['\u0661', HEADER]]));
  refused('NOT_NUMERIC', () => BloomFilter.fromScandump([WALK[0], ['1e3', new Uint8Array(0)]]));
});

test('bad chunks: the LOADCHUNK verdicts, nothing written', () => {
  for (const [it, data, code, words] of CHUNKS) {
    const f = BloomFilter.decodeHeader(HEADER);
    if (code === null) {
      f.applyChunk(it, data);
    } else {
      refusedWith(code, words, () => f.applyChunk(it, data));
      assert.ok(f.layers.every((l) => l.data.every((b) => b === 0)));
    }
  }
  const g = BloomFilter.decodeHeader(HEADER);
  g.applyChunk(9, enc('01234567'));
  assert.deepEqual(Buffer.from(g.layers[0].data).toString(), '01234567');
  refused('BAD_DATA', () => g.applyChunk(9, 'not bytes'));
});

test('truncated or malformed walks', () => {
  refused('INCOMPLETE', () => BloomFilter.fromScandump([]));
  refused('INCOMPLETE', () => BloomFilter.fromScandump([WALK[0]])); // header only
  refused('INCOMPLETE', () => BloomFilter.fromScandump(WALK.slice(0, 2))); // second layer missing
  refused('INCOMPLETE', () => BloomFilter.fromScandump([WALK[0], [9, WALK[1][1].subarray(1)], WALK[2]]));
  refusedWith('NOT_FOUND', 'the first pair must be the header (iterator 1), got iterator 9',
    () => BloomFilter.fromScandump(WALK.slice(1))); // no header first
  refused('BAD_DATA', () => BloomFilter.fromScandump([[1, HEADER], [9]]));
  refused('BAD_DATA', () => BloomFilter.fromScandump([[1, HEADER], 'junk']));
  refused('TOO_BIG', () => BloomFilter.fromScandump([WALK[0], [25, new Uint8Array(24)]]));
});

test('random corruption: a ScandumpError or a filter, never anything else', () => {
  let seed = 0x2545f491;
  const rnd = (n) => {
    seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  let refusedCount = 0;
  for (let round = 0; round < 5000; round++) {
    const walk = WALK.map(([i, d]) => [i, d.slice()]);
    const which = rnd(walk.length);
    const [, d] = walk[which];
    switch (rnd(4)) {
      case 0: if (d.length) d[rnd(d.length)] ^= 1 << rnd(8); break;
      case 1: walk[which][1] = d.subarray(0, rnd(d.length + 1)); break;
      case 2: walk[which][0] = walk[which][0] + rnd(40) - 20; break;
      default: walk.splice(which, 1);
    }
    try {
      BloomFilter.fromScandump(walk);
    } catch (e) {
      assert.ok(e instanceof ScandumpError, `round ${round}: ${e}`);
      refusedCount++;
    }
  }
  assert.ok(refusedCount > 1000, `${refusedCount} refused`);
});

// Placing chunks costs a bounded number of layer lookups per chunk (placeSteps), whatever the
// layer count and the chunks' order: a checker that walks the layers for every chunk makes about
// chunks × layers / 2 of them (8 million for 4096 layers of 2 bytes).
test('one-byte chunks over 4096 layers: a bounded number of lookups per chunk', () => {
  const layers = 4096;
  const h = chain(Array(layers).fill(layerRecord(2)));
  // Layer j's bytes are j's low byte then its high byte, one chunk each.
  const ordered = [];
  for (let b = 0; b < layers * 2; b++) ordered.push([2 + b, new Uint8Array([((b >> 1) >> (8 * (b & 1))) & 0xff])]);
  const anyOrder = 2 + Math.ceil(Math.log2(layers + 1));
  // [name, chunks, lookups allowed per chunk]: 1-2 in a walk's order, 2 + log2 in any.
  const cases = [
    ['in order', ordered, 2],
    ['reversed', ordered.slice().reverse(), anyOrder],
    ['shuffled', shuffled(ordered, 7), anyOrder],
  ];
  for (const [name, chunks, perChunk] of cases) {
    const f = BloomFilter.fromScandump([[1, h], ...chunks]);
    assert.ok(f.placeSteps <= perChunk * chunks.length, `${name}: ${f.placeSteps} lookups for ${chunks.length} chunks`);
    assert.ok(f.placeSteps >= chunks.length, name);
    for (const j of [0, 1, 255, 256, 4095]) assert.deepEqual([...f.layers[j].data], [j & 0xff, j >> 8], `${name}: layer ${j}`);
  }
  // A header alone, then one chunk in its last layer: one search, not a walk of the layers.
  const f = BloomFilter.decodeHeader(h);
  assert.deepEqual(f.applyChunk(1 + layers * 2, new Uint8Array([0xff])), [layers * 2 - 1, layers * 2]);
  assert.ok(f.placeSteps <= anyOrder, `${f.placeSteps}`);
  refused('NO_LINK', () => f.applyChunk(2 + layers * 2, new Uint8Array([0xff])));
});
