// The cuckoo-filter checker against a live server: for filters of every shape (auto-created,
// bucket sizes 1 and 4, expansion 2 with growth, deletions with compaction, a table above the
// 16 MiB chunk size, and every key of the RedisBloom fixture RDB, cf:big included) the walk
// checked locally answers exactly what CF.MEXISTS answers on 20 000 probes and what CF.COUNT
// answers on 2 000; and every hostile walk of cases.mjs gets from CF.LOADCHUNK the verdict
// the checker gives. Skipped while the server's CF.* commands answer "not implemented yet".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CuckooFilter } from '../src/index.js';
import { startServer, scandump, probes as probesOf } from './redis.mjs';
import { CF_HOSTILE, cfHeader } from './cases.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SHARED = resolve(process.env.BF_SHARED ?? join(ROOT, '..', 'shared'));
const RDB = join(SHARED, 'fixtures', 'redisbloom-cf', 'dump.rdb');
const PROBES = 20_000;
const COUNTS = 2_000;

let server;
let missing = null; // why the CF commands cannot be tested, if they cannot

before(async () => {
  server = await startServer(existsSync(RDB) ? { rdb: RDB } : {});
  try {
    await server.client.call('CF.RESERVE', 'cf:probe-support', 8);
    await server.client.call('DEL', 'cf:probe-support');
  } catch (e) {
    missing = `the server's CF.RESERVE answers ${e.message}`;
  }
});
after(() => server?.stop());

function skipIfMissing(t) {
  if (missing === null) return false;
  t.skip(`${missing}: nothing was checked`);
  return true;
}

/** PROBES probes of `members` and strangers (see redis.mjs). */
const probes = (members, seed) => probesOf(members, seed, PROBES);

/** Checks the local answers against CF.MEXISTS and CF.COUNT; returns how many were positive. */
async function compare(client, key, list) {
  const f = CuckooFilter.fromScandump(await scandump(client, key, 'CF.SCANDUMP'));
  let positives = 0;
  for (let i = 0; i < list.length; i += 1000) {
    const batch = list.slice(i, i + 1000);
    const answers = await client.call('CF.MEXISTS', key, ...batch);
    batch.forEach((p, j) => {
      const local = f.has(p) ? 1 : 0;
      positives += local;
      assert.equal(local, answers[j], `${key}: CF.MEXISTS of probe ${i + j}`);
    });
  }
  const sample = list.slice(0, COUNTS);
  const counts = await Promise.all(sample.map((p) => client.call('CF.COUNT', key, p)));
  sample.forEach((p, j) => assert.equal(f.count(p), counts[j], `${key}: CF.COUNT of probe ${j}`));
  return { f, positives };
}

async function insertAll(client, key, items) {
  for (let i = 0; i < items.length; i += 1000) await client.call('CF.INSERT', key, 'ITEMS', ...items.slice(i, i + 1000));
}

test('filters of every shape: identical to CF.MEXISTS and CF.COUNT', async (t) => {
  if (skipIfMissing(t)) return;
  const c = server.client;
  const range = (p, n) => Array.from({ length: n }, (_, i) => `${p}:${i}`);
  const shapes = [
    { key: 'live:auto', setup: [], items: range('a', 500) },
    { key: 'live:bs1', setup: ['CF.RESERVE', 'live:bs1', 1000, 'BUCKETSIZE', 1], items: range('b1', 1500) },
    { key: 'live:bs4', setup: ['CF.RESERVE', 'live:bs4', 1000, 'BUCKETSIZE', 4], items: range('b4', 900) },
    { key: 'live:exp2', setup: ['CF.RESERVE', 'live:exp2', 64, 'EXPANSION', 2], items: range('e2', 5000) },
    { key: 'live:dups', setup: ['CF.RESERVE', 'live:dups', 1000], items: [...range('d', 300), ...Array(12).fill('dup')] },
    { key: 'live:del', setup: ['CF.RESERVE', 'live:del', 256], items: range('x', 3000), del: range('x', 2000) },
    // 2^25 one-slot buckets: a 32 MiB table, walked in 16 MiB chunks.
    { key: 'live:huge', setup: ['CF.RESERVE', 'live:huge', 20_000_000, 'BUCKETSIZE', 1], items: range('h', 10_000) },
  ];
  for (const s of shapes) {
    if (s.setup.length) await c.call(...s.setup);
    await insertAll(c, s.key, s.items);
    for (const d of s.del ?? []) await c.call('CF.DEL', s.key, d);
    const { f, positives } = await compare(c, s.key, probes(s.items, s.key.length));
    const kept = s.items.filter((i) => !(s.del ?? []).includes(i));
    for (const m of kept) assert.equal(f.has(m), true, `${s.key} ${m}`);
    assert.ok(positives >= PROBES / 4 * (kept.length / s.items.length) * 0.9, `${s.key}: ${positives} positives`);
  }
  const huge = await scandump(c, 'live:huge', 'CF.SCANDUMP');
  assert.deepEqual(huge.map(([, d]) => d.length), [38, 1 << 24, 1 << 24], "header + two 16 MiB chunks");
});

test('every key of the RedisBloom fixture RDB (cf:big too): identical to CF.MEXISTS and CF.COUNT', async (t) => {
  if (skipIfMissing(t)) return;
  if (!existsSync(RDB)) {
    t.skip(`${RDB} is absent: nothing was checked`);
    return;
  }
  const c = server.client;
  const keys = (await c.call('KEYS', 'cf:*')).map((k) => Buffer.from(k));
  let checked = 0;
  for (const key of keys) {
    if (String(await c.call('TYPE', key)) !== 'MBbloomCF') continue;
    const list = Array.from({ length: PROBES }, (_, n) => Buffer.concat([Buffer.from('probe:'), key, Buffer.from(`:${n}`)]));
    await compare(c, key, list);
    checked++;
  }
  assert.equal(checked, 27);
});

test('hostile CF walks: CF.LOADCHUNK gives the same verdict', async (t) => {
  if (skipIfMissing(t)) return;
  const c = server.client;
  let n = 0;
  for (const cs of CF_HOSTILE) {
    if (cs.live === false) continue;
    const key = `hostile:cf:${n++}`;
    let first = null;
    for (const [it, data] of cs.walk(cfHeader)) {
      try {
        assert.equal(String(await c.call('CF.LOADCHUNK', key, String(it), data)), 'OK');
      } catch (e) {
        if (e.code === 'ERR_ASSERTION') throw e;
        first = e.message;
        break;
      }
    }
    assert.equal(first, cs.server, cs.name);
  }
});
