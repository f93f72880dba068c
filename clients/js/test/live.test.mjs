// Proof of identity against a live server: for filters with 1, 3 and 8 layers, NONSCALING,
// EXPANSION 1 and 4, a legacy power-of-two / 32-bit-hash filter, and every Bloom key of the
// RedisBloom fixture RDB, the checker answers exactly what BF.MEXISTS answers on 200 000 probes
// (members, strangers of every length, binary and UTF-8 items); and every hostile header,
// iterator and chunk of cases.mjs gets from BF.LOADCHUNK the verdict the checker gives.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BloomFilter, ScandumpError } from '../src/index.js';
import { startServer, scandump, probes as probesOf } from './redis.mjs';
import { HEADER, WALK, HOSTILE_HEADERS, ITERATORS, CHUNKS } from './cases.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PROBES = 200_000;

/** PROBES probes of `members` and strangers (see redis.mjs). */
const probes = (members, seed) => probesOf(members, seed, PROBES);

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

// ---------------------------------------------------------------------------------------------
// The checker refuses what BF.LOADCHUNK refuses, with the matching code: every hostile header,
// iterator and chunk of cases.mjs is also sent to the server.

/** What BF.LOADCHUNK answers for each of the checker's codes. */
const SERVER_TEXT = {
  BAD_DATA: 'ERR received bad data',
  NO_LINK: 'ERR invalid offset - no link found',
  TOO_BIG: 'ERR invalid chunk - Too big for current filter',
  NOT_NUMERIC: 'ERR Second argument must be numeric',
  OUT_OF_MEMORY: 'ERR received bad data',
  NOT_FOUND: 'ERR not found',
};

async function loadchunk(c, key, it, data) {
  try {
    return await c.call('BF.LOADCHUNK', key, it, Buffer.from(data));
  } catch (e) {
    return e.message;
  }
}

function local(fn) {
  try {
    fn();
    return null;
  } catch (e) {
    if (!(e instanceof ScandumpError)) throw e;
    return e.code;
  }
}

async function gv2(c, key) {
  await c.call('DEL', key);
  assert.equal(await loadchunk(c, key, 1, HEADER), 'OK');
  return key;
}

test('hostile headers: the server gives the same verdict', async () => {
  const c = server.client;
  for (const [name, h, code, , expected] of HOSTILE_HEADERS) {
    await c.call('DEL', 'v:h');
    const reply = await loadchunk(c, 'v:h', 1, h);
    assert.equal(local(() => BloomFilter.decodeHeader(h)), code, name);
    if (expected !== null) assert.ok(reply.includes(expected), `${name}: server said ${reply}`);
    if (code !== 'UNSUPPORTED' && expected !== null) assert.equal(reply, SERVER_TEXT[code], name);
  }
});

test('a real window filter dump: UNSUPPORTED here, loaded by the server', async () => {
  const c = server.client;
  await c.call('BF.RESERVE', 'v:w', '0.01', '1000', 'WINDOW', '60000');
  await c.call('BF.ADD', 'v:w', 'x');
  const chunks = await scandump(c, 'v:w');
  assert.equal(Buffer.from(chunks[0][1].subarray(0, 8)).toString(), 'BFwindow');
  assert.throws(() => BloomFilter.fromScandump(chunks),
    (e) => e.code === 'UNSUPPORTED' && e.message.includes('this is a window filter dump (header begins with BFwindow'));
  for (const [it, data] of chunks) assert.equal(await loadchunk(c, 'v:w2', it, data), 'OK');
});

test('iterators and chunks: the server gives the same verdict', async () => {
  const c = server.client;
  for (const [value, code] of ITERATORS) {
    // Sent as the server receives them: only what has one exact decimal form (a number past
    // 2^53 - 1 may already be a rounded value, which the checker refuses by design).
    const exact = typeof value === 'string' || typeof value === 'bigint' ||
      (typeof value === 'number' && (Number.isSafeInteger(value) || !Number.isInteger(value)));
    if (!exact) continue;
    const reply = await loadchunk(c, await gv2(c, 'v:i'), value, new Uint8Array(0));
    const f = BloomFilter.decodeHeader(HEADER);
    assert.equal(local(() => f.applyChunk(value, new Uint8Array(0))), code, String(value));
    assert.equal(reply, code === null ? 'OK' : SERVER_TEXT[code], String(value));
  }
  for (const [it, data, code] of CHUNKS) {
    const reply = await loadchunk(c, await gv2(c, 'v:c'), it, data);
    const f = BloomFilter.decodeHeader(HEADER);
    assert.equal(local(() => f.applyChunk(it, data)), code, String(it));
    assert.equal(reply, code === null ? 'OK' : SERVER_TEXT[code], String(it));
  }
  await c.call('DEL', 'v:n');
  assert.equal(await loadchunk(c, 'v:n', WALK[1][0], WALK[1][1]), SERVER_TEXT.NOT_FOUND);
  assert.equal(local(() => BloomFilter.fromScandump(WALK.slice(1))), 'NOT_FOUND');
});
