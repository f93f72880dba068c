// The cuckoo-filter checker against RedisBloom's recordings: every recorded key's CF.SCANDUMP
// walk rebuilt (cf:big, whose chunks were too big to record, from its DUMP payload's tables), and every recorded CF.EXISTS / CF.COUNT answer (items, deleted items and
// 20 000 probes per key) given exactly; then hostile headers, positions and chunks with
// CF.LOADCHUNK's verdicts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CuckooFilter, ScandumpError, cuckooLookupHex } from '../src/index.js';
import { CF_HOSTILE, cfHeader, shuffled } from './cases.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
// The shared reference recordings (RedisBloom's own replies), beside the repository or at BF_SHARED.
const SHARED = resolve(process.env.BF_SHARED ?? join(ROOT, '..', 'shared'));
const CF_KEYS = join(SHARED, 'fixtures', 'redisbloom-cf', 'keys');
const unhex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

/** The items of a `*_hex` list or a `*_spec` run list (prefix + decimal n, or explicit hex). */
export function expandItems(fx, name) {
  if (fx[`${name}_hex`]) return fx[`${name}_hex`].map(unhex);
  const out = [];
  for (const run of fx[`${name}_spec`] ?? []) {
    if (run.hex) out.push(...run.hex.map(unhex));
    else for (let n = run.start; n < run.stop; n++) out.push(Buffer.concat([Buffer.from(run.prefix_hex, 'hex'), Buffer.from(String(n))]));
  }
  return out;
}

/** The items of an `items_generator` (prefix + decimal n for n in [start, stop)), or null. */
function expandGenerator(fx) {
  const g = fx.items_generator;
  if (!g) return null;
  const prefix = Buffer.from(g.prefix_hex, 'hex');
  return Array.from({ length: g.stop - g.start }, (_, i) => Buffer.concat([prefix, Buffer.from(String(g.start + i))]));
}

/** An RDB length at buf[i]: [value, next index, is a special string encoding]. */
function rdbLen(buf, i) {
  const b = buf[i];
  const kind = b >> 6;
  if (kind === 0) return [b & 0x3f, i + 1, false];
  if (kind === 1) return [((b & 0x3f) << 8) | buf[i + 1], i + 2, false];
  if (b === 0x80) return [buf.readUInt32BE(i + 1), i + 5, false];
  if (b === 0x81) return [Number(buf.readBigUInt64BE(i + 1)), i + 9, false];
  return [b & 0x3f, i + 1, true];
}

function lzf(data, ulen) {
  const out = new Uint8Array(ulen);
  let o = 0;
  for (let i = 0; i < data.length;) {
    const ctrl = data[i++];
    if (ctrl < 32) {
      out.set(data.subarray(i, i + ctrl + 1), o);
      o += ctrl + 1;
      i += ctrl + 1;
      continue;
    }
    let n = ctrl >> 5;
    if (n === 7) n += data[i++];
    let ref = o - ((ctrl & 0x1f) << 8) - data[i++] - 1;
    for (let k = 0; k < n + 2; k++) out[o++] = out[ref++];
  }
  assert.equal(o, ulen);
  return out;
}

/**
 * The CF.SCANDUMP walk of a key rebuilt from its recorded DUMP payload (for keys whose chunks
 * were too big to record): the recorded header, then each sub-filter's table from the
 * MBbloomCF value (encoding version 4: U sub-filters, U buckets, U items, U deletes, U bucket
 * size, U max iterations, U expansion, then per sub-filter U buckets, S table).
 */
function walkFromDump(fx, payload) {
  assert.equal(payload[0], 7); // RDB_TYPE_MODULE_2
  let [, i] = rdbLen(payload, 1); // module id and encoding version
  const fields = [];
  const tables = [];
  for (;;) {
    let op;
    [op, i] = rdbLen(payload, i);
    if (op === 0) break; // EOF
    if (op === 2) {
      let v;
      [v, i] = rdbLen(payload, i);
      fields.push(v);
    } else if (op === 5) {
      let n;
      let special;
      [n, i, special] = rdbLen(payload, i);
      if (special) {
        assert.equal(n, 3, 'only LZF strings are expected');
        let clen;
        let ulen;
        [clen, i] = rdbLen(payload, i);
        [ulen, i] = rdbLen(payload, i);
        tables.push(lzf(payload.subarray(i, i + clen), ulen));
        i += clen;
      } else {
        tables.push(payload.subarray(i, i + n));
        i += n;
      }
    } else {
      assert.fail(`unexpected module opcode ${op}`);
    }
  }
  assert.equal(fields[0], tables.length);
  const walk = [[1, unhex(fx.header_hex)]];
  let pos = 1;
  for (const t of tables) {
    pos += t.length;
    walk.push([pos, t]);
  }
  return walk;
}

/** The recorded CF.COUNT answers of one query set, one per query. */
export function expectedCounts(q) {
  const n = Number(q.count);
  if (q.count_digits !== undefined && q.count_digits !== null) return [...q.count_digits].map(Number);
  const out = new Array(n).fill(Number(q.count_default));
  for (const [i, c] of q.count_exceptions) out[i] = c;
  return out;
}

function skipWithoutShared(t) {
  if (existsSync(CF_KEYS)) return false;
  if (process.env.BF_REQUIRE_SHARED) assert.fail(`${CF_KEYS} is absent but BF_REQUIRE_SHARED is set`);
  t.skip(`the reference recordings (${CF_KEYS}) are absent: nothing was checked`);
  return true;
}

test('RedisBloom CF fixture keys: every recorded CF.EXISTS and CF.COUNT answer', (t) => {
  if (skipWithoutShared(t)) return;
  let keys = 0;
  let queries = 0;
  for (const file of readdirSync(CF_KEYS).filter((f) => f.endsWith('.json')).sort()) {
    const fx = JSON.parse(readFileSync(join(CF_KEYS, file), 'utf8'));
    if (fx.type !== 'MBbloomCF') continue;
    const walk = fx.scandump.filter((c) => !c.nil);
    let pairs;
    if (walk.every((c) => c.data_hex !== undefined)) pairs = walk.map((c) => [c.next_iter, unhex(c.data_hex)]);
    else {
      // cf:big: chunks above 64 KiB are not recorded; its tables come from its DUMP payload,
      // and must give the recorded chunks' sha256.
      pairs = walkFromDump(fx, readFileSync(join(CF_KEYS, fx.dump_payload_file)));
      assert.deepEqual(pairs.map(([it, d]) => [it, createHash('sha256').update(d).digest('hex')]),
        walk.map((c) => [c.next_iter, c.sha256]), file);
    }
    const f = CuckooFilter.fromScandump(pairs);
    if (fx.header) {
      assert.equal(f.subFilterCount, fx.header.numFilters, file);
      assert.equal(f.items, BigInt(fx.info['Number of items inserted']), file);
      assert.equal(f.buckets, fx.info['Number of buckets'], file);
      assert.equal(f.subFilterCount, fx.info['Number of filters'], file);
      assert.equal(f.bucketSize, fx.info['Bucket size'], file);
      assert.equal(f.expansion, fx.info['Expansion rate'], file);
      assert.equal(f.maxIterations, fx.info['Max iterations'], file);
    } else {
      assert.equal(f.subFilterCount, 0, `${file}: an empty walk is the empty filter`);
    }
    const key = unhex(fx.key_hex);
    const sets = {
      items: expandGenerator(fx) ?? expandItems(fx, 'items'),
      deleted: expandItems(fx, 'deleted'),
      probes: Array.from({ length: Number(fx.queries.probes.count) }, (_, n) =>
        Buffer.concat([Buffer.from('probe:'), key, Buffer.from(`:${n}`)])),
    };
    for (const [name, items] of Object.entries(sets)) {
      const q = fx.queries[name];
      assert.equal(items.length, Number(q.count), `${file} ${name}`);
      const counts = expectedCounts(q);
      let present = 0;
      items.forEach((item, i) => {
        assert.equal(f.count(item), counts[i], `${file} ${name}[${i}] CF.COUNT`);
        assert.equal(f.has(item), counts[i] > 0, `${file} ${name}[${i}] CF.EXISTS`);
        present += f.has(item);
        queries++;
      });
      assert.equal(present, Number(q.exists_true), `${file} ${name} exists_true`);
    }
    keys++;
  }
  assert.equal(keys, 27);
  assert.ok(queries > 27 * 20_000, `${queries} queries`);
});

test('cuckoo lookups: fingerprint and alternate index', () => {
  const l = cuckooLookupHex('dup');
  assert.deepEqual(l, { hash: 'd46a6eba6eae141d', fp: 183, h1: 'd46a6eba6eae141d', h2: 'd46a6efbcda3ed9e' });
  assert.equal(cuckooLookupHex(new TextEncoder().encode('dup')).fp, 183);
});

test('hostile CF walks get CF.LOADCHUNK verdicts', () => {
  for (const c of CF_HOSTILE) {
    const walk = c.walk(cfHeader);
    if (c.code === null) {
      const f = CuckooFilter.fromScandump(walk, c.opts);
      if (c.check) c.check(f);
      continue;
    }
    assert.throws(() => CuckooFilter.fromScandump(walk, c.opts), (e) => {
      assert.ok(e instanceof ScandumpError, `${c.name}: ${e}`);
      assert.equal(e.code, c.code, `${c.name}: ${e.message}`);
      if (c.message) assert.match(e.message, c.message, c.name);
      return true;
    }, c.name);
  }
});

test('the empty walk and the end marker', () => {
  for (const walk of [[], [[0, null]], [[0, new Uint8Array(0)]], [['0', null]]]) {
    const f = CuckooFilter.fromScandump(walk);
    assert.equal(f.has('x'), false);
    assert.equal(f.count('x'), 0);
    assert.equal(f.subFilterCount, 0);
  }
  // A chunk later overwrites an earlier one, as on the server.
  const h = cfHeader({ buckets: 4n });
  const fp = cuckooLookupHex('x').fp;
  const f = CuckooFilter.fromScandump([[1, h], [9, new Uint8Array(8)], [9, new Uint8Array(8).fill(fp)]]);
  assert.equal(f.count('x'), 4);
});

/**
 * The CF.SCANDUMP walk of a filter grown by one CF.INSERT to `filters` sub-filters of one size
 * (CF.RESERVE k 4 BUCKETSIZE 2 EXPANSION 1): the header, then one chunk per sub-filter, returned
 * with the position after its last byte. Item `g<i>` for every 97th i has its fingerprint in
 * the first slot of its first bucket of sub-filter i. Returns [walk, those items].
 */
function grownWalk(filters, buckets = 2, bucketSize = 2) {
  const size = buckets * bucketSize;
  const walk = [[1, cfHeader({ buckets: BigInt(buckets), filters: BigInt(filters), bucketSize, expansion: 1 })]];
  for (let i = 0; i < filters; i++) walk.push([1 + (i + 1) * size, new Uint8Array(size)]);
  const items = [];
  for (let i = 0; i < filters; i += 97) {
    const l = cuckooLookupHex(`g${i}`);
    walk[1 + i][1][Number(BigInt('0x' + l.h1) % BigInt(buckets)) * bucketSize] = l.fp;
    items.push(`g${i}`);
  }
  return [walk, items];
}

/** A hostile 38-byte header declaring `filters` one-byte sub-filters (one bucket of one slot,
 * expansion 1), then a one-byte chunk for each, holding fingerprint 1. */
function oneByteWalk(filters) {
  const walk = [[1, cfHeader({ items: 1n, buckets: 1n, filters: BigInt(filters), bucketSize: 1, maxIterations: 1, expansion: 1 })]];
  for (let i = 0; i < filters; i++) walk.push([i + 2, new Uint8Array([1])]);
  return walk;
}

/** An item whose fingerprint is 1. */
const FP1 = (() => {
  for (let i = 0; ; i++) if (cuckooLookupHex(`f${i}`).fp === 1) return `f${i}`;
})();

// Placing chunks costs a bounded number of sub-filter lookups per chunk (placeSteps), whatever
// the sub-filter count and the chunks' order. A checker that walks the sub-filters for every
// chunk makes about chunks × sub-filters / 2 of them: 2.1 billion for 65 535 sub-filters, 8
// million for the first, small case.
test('many sub-filters: a bounded number of lookups per chunk', () => {
  const [grown, items] = grownWalk(65535);
  const hostile = oneByteWalk(65535);
  const small = oneByteWalk(4096);
  const anyOrder = 2 + Math.ceil(Math.log2(65536));
  const reversed = (w) => [w[0], ...w.slice(1).reverse()];
  // [name, walk, lookups allowed per chunk]: 1-2 in a walk's order, 2 + log2 in any.
  const cases = [
    ['4096 one-byte sub-filters, reversed', reversed(small), 2 + Math.ceil(Math.log2(4097))],
    ['grown to 65 535 sub-filters', grown, 2],
    ['grown to 65 535 sub-filters, reversed', reversed(grown), anyOrder],
    ['38-byte header, 65 535 one-byte chunks', hostile, 2],
    ['38-byte header, 65 535 one-byte chunks, shuffled', [hostile[0], ...shuffled(hostile.slice(1), 7)], anyOrder],
  ];
  for (const [name, walk, perChunk] of cases) {
    const f = CuckooFilter.fromScandump(walk);
    const chunks = walk.length - 1;
    assert.ok(f.placeSteps <= perChunk * chunks, `${name}: ${f.placeSteps} lookups for ${chunks} chunks`);
    assert.ok(f.placeSteps >= chunks, name);
    const grownShape = name.startsWith('grown');
    assert.deepEqual([f.subFilterCount, f.byteLength], [chunks, chunks * (grownShape ? 4 : 1)], name);
    if (grownShape) {
      for (const x of items) assert.equal(f.has(x), true, `${name}: ${x}`);
    } else {
      // Every slot holds fingerprint 1: both buckets of every sub-filter count.
      assert.equal(f.count(FP1), 2 * chunks, name);
    }
  }
});

test('a header declaring 65 535 sub-filters with few chunks', () => {
  // The header costs one step per declared sub-filter (at most 65 535); each chunk, one search.
  const walk = oneByteWalk(65535);
  const f = CuckooFilter.decodeHeader(walk[0][1]);
  assert.equal(f.placeSteps, 0);
  const b = new Uint8Array([7]);
  assert.deepEqual(f.applyChunk(65536, b), [65534, 65535]);
  f.applyChunk(2, b);
  assert.deepEqual(f.applyChunk(65537, b), [65534, 65535]); // past the end: into the last one
  assert.ok(f.placeSteps <= 3 * (2 + 16), `${f.placeSteps}`);
  assert.throws(() => CuckooFilter.fromScandump([walk[0], walk[walk.length - 1], walk[1]]),
    (e) => e instanceof ScandumpError && e.code === 'INCOMPLETE');
});
