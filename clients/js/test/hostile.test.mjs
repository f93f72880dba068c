// Malformed, hostile and truncated walks: every one is refused with a ScandumpError carrying the
// same verdict BF.LOADCHUNK gives (BAD_DATA / NO_LINK / TOO_BIG), or INCOMPLETE for a walk with
// bytes missing; nothing huge is allocated and nothing hangs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BloomFilter, ScandumpError } from '../src/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const GOLDEN = JSON.parse(readFileSync(join(ROOT, 'tests', 'data', 'golden-vectors.json'), 'utf8'));
const unhex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

// gv2: BF.RESERVE 0.1 4 EXPANSION 3 + 12 items: two layers of 8 and 16 bytes (offsets 0..24).
const HEADER = unhex(GOLDEN.gv2.header_hex);
const WALK = GOLDEN.gv2.scandump.map((c) => [c.reply_iter, unhex(c.hex)]);

function refused(code, fn) {
  assert.throws(fn, (e) => e instanceof ScandumpError && e.code === code, `expected ${code}`);
}
const header = (edit) => {
  const h = HEADER.slice();
  edit(h, new DataView(h.buffer));
  return h;
};
const L0 = 20; // first layer's fields
const L1 = 20 + 53;

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

test('bad headers: every LOADCHUNK header check', () => {
  const bad = (h) => refused('BAD_DATA', () => BloomFilter.fromScandump([[1, h]]));
  bad(HEADER.subarray(0, HEADER.length - 1)); // length ≠ 20 + 53·n
  bad(HEADER.subarray(0, 19)); // shorter than the fixed part
  bad(new Uint8Array(0));
  bad(Uint8Array.of(...HEADER, 0)); // one byte too many
  bad(header((h, v) => v.setUint32(8, 0, true))); // no layers
  bad(header((h, v) => v.setUint32(8, 0xffffffff, true))); // layer count vs length
  bad(header((h, v) => v.setUint32(12, 5 | 16, true))); // unknown option bit
  bad(header((h) => (h[0] ^= 1))); // Σ layer sizes ≠ chain size
  bad(header((h, v) => v.setFloat64(L0 + 24, 0, true))); // error 0
  bad(header((h, v) => v.setFloat64(L0 + 24, 1, true))); // error 1
  bad(header((h, v) => v.setFloat64(L1 + 24, NaN, true)));
  bad(header((h, v) => v.setUint32(L0 + 40, 6, true))); // k ≠ ceil(ln2 · bpe)
  bad(header((h, v) => v.setFloat64(L0 + 32, NaN, true))); // k = 0 from a NaN bpe
  bad(header((h, v) => { v.setFloat64(L0 + 32, 4000, true); v.setUint32(L0 + 40, 2773, true); })); // k > 2048
  bad(header((h, v) => v.setBigUint64(L0 + 8, 65n, true))); // bits ≠ bytes × 8
  bad(header((h, v) => { v.setBigUint64(L0, 0n, true); v.setBigUint64(L0 + 8, 0n, true); })); // bits 0
  bad(header((h, v) => h[L0 + 52] = 64)); // n2 > 63
  bad(header((h, v) => h[L0 + 52] = 7)); // bits < 2^n2
  bad(header((h, v) => v.setBigUint64(0, 2n ** 63n, true))); // absurd chain size
  // Valid n2 (power-of-two layer of 2^6 = 64 bits) is accepted, like the server does.
  BloomFilter.fromScandump([[1, header((h) => (h[L0 + 52] = 6))], ...WALK.slice(1)]);
});

test('a header announcing a huge filter is refused before allocating', () => {
  // A consistent layer of 2^40 bytes (8 TiB): refused by the size limit, nothing allocated.
  const h = header((h, v) => {
    v.setBigUint64(L1, 2n ** 40n, true);
    v.setBigUint64(L1 + 8, 2n ** 43n, true);
  });
  refused('BAD_DATA', () => BloomFilter.fromScandump([[1, h]]));
  // The limit is the caller's: 24 bytes is exactly what gv2 needs.
  refused('BAD_DATA', () => BloomFilter.fromScandump(WALK, { maxBytes: 23 }));
  BloomFilter.fromScandump(WALK, { maxBytes: 24 });
  // bytes of 2^64 - 1 (not even a safe integer).
  refused('BAD_DATA', () => BloomFilter.fromScandump([[1, header((h, v) => v.setBigUint64(L1, 2n ** 64n - 1n, true))]]));
});

test('bad chunks: the LOADCHUNK verdicts', () => {
  const f = () => BloomFilter.decodeHeader(HEADER);
  refused('BAD_DATA', () => f().applyChunk(0, new Uint8Array(0)));
  refused('BAD_DATA', () => f().applyChunk(-5, new Uint8Array(0)));
  refused('BAD_DATA', () => f().applyChunk(2, new Uint8Array(3))); // iter < len
  refused('NO_LINK', () => f().applyChunk(3, new Uint8Array(3))); // start 0
  refused('NO_LINK', () => f().applyChunk(26, new Uint8Array(0))); // past the end
  refused('NO_LINK', () => f().applyChunk(25, new Uint8Array(0)));
  f().applyChunk(24, new Uint8Array(0)); // empty chunk inside a layer: a no-op
  refused('TOO_BIG', () => f().applyChunk(12, new Uint8Array(10))); // crosses into layer 2
  refused('TOO_BIG', () => f().applyChunk(30, new Uint8Array(20)));
  const g = f();
  g.applyChunk(9, new TextEncoder().encode('01234567'));
  assert.deepEqual(Buffer.from(g.layers[0].data).toString(), '01234567');
  refused('BAD_DATA', () => f().applyChunk(1.5, new Uint8Array(0)));
  refused('BAD_DATA', () => f().applyChunk(2 ** 60, new Uint8Array(0)));
  refused('BAD_DATA', () => f().applyChunk(9, 'not bytes'));
});

test('truncated or malformed walks', () => {
  refused('INCOMPLETE', () => BloomFilter.fromScandump([]));
  refused('INCOMPLETE', () => BloomFilter.fromScandump([WALK[0]])); // header only
  refused('INCOMPLETE', () => BloomFilter.fromScandump(WALK.slice(0, 2))); // second layer missing
  refused('INCOMPLETE', () => BloomFilter.fromScandump([WALK[0], [9, WALK[1][1].subarray(1)], WALK[2]]));
  refused('BAD_DATA', () => BloomFilter.fromScandump(WALK.slice(1))); // no header first
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
