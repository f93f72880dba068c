// Proof of identity against a live server: for filters with 1, 3 and 8 layers, NONSCALING,
// EXPANSION 1 and 4, a legacy power-of-two / 32-bit-hash filter, and every Bloom key of the
// RedisBloom fixture RDB, the checker answers exactly what BF.MEXISTS answers on 200 000 probes
// (members, strangers of every length, binary and UTF-8 items).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BloomFilter } from '../src/index.js';
import { startServer, scandump } from './redis.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PROBES = 200_000;

/** xorshift32 PRNG: deterministic probes. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return (s >>> 0) % n;
  };
}

/** 200 000 probes: every fourth a member, the rest strangers (strings, UTF-8, raw bytes). */
function probes(members, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < PROBES; i++) {
    if (members.length && i % 4 === 0) out.push(members[r(members.length)]);
    else if (i % 4 === 1) out.push(`stranger:${seed}:${i}`);
    else if (i % 4 === 2) out.push(`名前-${i}-ユーザー`);
    else {
      const b = new Uint8Array(r(41));
      for (let j = 0; j < b.length; j++) b[j] = r(256);
      out.push(b);
    }
  }
  return out;
}

/** Compares has() with BF.MEXISTS on the probes; returns {positives, mismatches}. */
async function compare(client, key, filter, list) {
  let positives = 0;
  let mismatches = 0;
  for (let i = 0; i < list.length; i += 1000) {
    const batch = list.slice(i, i + 1000);
    const server = await client.call('BF.MEXISTS', key, ...batch);
    batch.forEach((p, j) => {
      const local = filter.has(p);
      if (local) positives++;
      if ((local ? 1 : 0) !== server[j]) mismatches++;
    });
  }
  return { positives, mismatches };
}

async function addAll(client, key, items) {
  for (let i = 0; i < items.length; i += 1000) await client.call('BF.MADD', key, ...items.slice(i, i + 1000));
}

/** A legacy header (options 0: power-of-two layer, 32-bit MurmurHash2) for `capacity`/`error`. */
function legacyHeader(capacity, error) {
  const bpe = Math.abs(Math.log(error) / 0.480453013918201);
  const hashes = Math.ceil(0.693147180559945 * bpe);
  const product = capacity * bpe;
  const n2 = Math.floor(Math.log2(product)) + 1;
  const bits = 2 ** n2;
  const entries = capacity + Math.trunc(Math.trunc(bits - product) / bpe);
  const bytes = Math.ceil(bits / 64) * 8;
  const h = new DataView(new ArrayBuffer(73));
  h.setBigUint64(0, 0n, true);
  h.setUint32(8, 1, true);
  h.setUint32(12, 0, true);
  h.setUint32(16, 2, true);
  h.setBigUint64(20, BigInt(bytes), true);
  h.setBigUint64(28, BigInt(bytes * 8), true);
  h.setBigUint64(36, 0n, true);
  h.setFloat64(44, error, true);
  h.setFloat64(52, bpe, true);
  h.setUint32(60, hashes, true);
  h.setBigUint64(64, BigInt(entries), true);
  h.setUint8(72, n2);
  return new Uint8Array(h.buffer);
}

let server;
before(async () => { server = await startServer(); });
after(() => server?.stop());

const CASES = [
  // [key, RESERVE arguments, items added, expected layers]
  ['id:one', ['0.01', '300000'], 250_000, 1],
  ['id:three', ['0.01', '100000'], 350_000, 3],
  ['id:eight', ['0.05', '100'], 20_000, 8],
  ['id:nonscaling', ['0.02', '30000', 'NONSCALING'], 29_000, 1],
  ['id:exp1', ['0.01', '2000', 'EXPANSION', '1'], 9_000, 5],
  ['id:exp4', ['0.001', '1000', 'EXPANSION', '4'], 30_000, 4],
];

for (const [key, reserve, count, layers] of CASES) {
  test(`${key}: identical to BF.MEXISTS on ${PROBES} probes`, async () => {
    const c = server.client;
    await c.call('BF.RESERVE', key, ...reserve);
    const members = Array.from({ length: count }, (_, i) => `${key}:member:${i}`);
    await addAll(c, key, members);
    const filter = BloomFilter.fromScandump(await scandump(c, key));
    assert.equal(filter.layerCount, layers);
    assert.equal(filter.size, await c.call('BF.CARD', key));
    const r = await compare(c, key, filter, probes(members, count));
    assert.equal(r.mismatches, 0);
    assert.ok(r.positives >= PROBES / 4, `${r.positives} positives`);
    console.log(`# ${key}: ${layers} layers, ${filter.byteLength} bytes, ${r.positives} positives, 0 mismatches`);
  });
}

test('legacy filter (power-of-two layers, 32-bit hash): identical to BF.MEXISTS', async () => {
  const c = server.client;
  assert.equal(await c.call('BF.LOADCHUNK', 'id:legacy', 1, Buffer.from(legacyHeader(1000, 0.01))), 'OK');
  const members = Array.from({ length: 6000 }, (_, i) => `legacy:${i}`);
  await addAll(c, 'id:legacy', members);
  const filter = BloomFilter.fromScandump(await scandump(c, 'id:legacy'));
  assert.equal(filter.options, 0);
  assert.ok(filter.layerCount >= 2, `${filter.layerCount} layers`);
  assert.ok(filter.layers.every((l) => l.n2 > 0));
  const r = await compare(c, 'id:legacy', filter, probes(members, 7));
  assert.equal(r.mismatches, 0);
});

test('every Bloom key of the RedisBloom fixture RDB: identical to BF.MEXISTS', async () => {
  const fx = await startServer({ rdb: join(ROOT, 'tests', 'fixtures', 'redisbloom', 'dump.rdb') });
  try {
    const keys = (await fx.client.call('KEYS', '*')).sort(Buffer.compare);
    let blooms = 0;
    for (const key of keys) {
      if ((await fx.client.call('TYPE', key)) !== 'MBbloom--') continue;
      const filter = BloomFilter.fromScandump(await scandump(fx.client, key));
      const r = await compare(fx.client, key, filter, probes([], blooms + 1));
      assert.equal(r.mismatches, 0, key.toString());
      blooms++;
    }
    assert.equal(blooms, 11);
  } finally {
    fx.stop();
  }
});
