// The Ribbon filter checker against a live server (issue #33 item 5): filters of nine shapes —
// ε = 1 % on 1e5 items, 0.1 %, 0.01 %, 3 % (fractional result bits), 2^-7 / 0.9 (whole result
// bits), ε = 0.5, one item, a crowded set whose rows all start in the first slots (most items
// bumped) — staged with RF.MADD and built by RF.BUILD, plus the empty filter (which RF.MADD
// cannot stage: the core's build, from core/examples/ribbon_vectors.rs, uploaded by
// RF.LOADCHUNK); each walked with RF.SCANDUMP and rebuilt by RibbonFilter.fromScandump, which
// answers exactly what RF.MEXISTS answers on every probe: 1 030 000 in all, members and
// never-staged items (ASCII, UTF-8, raw bytes). The core's side is tests/ribbon_checkers.rs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RibbonFilter, hashPairHex } from '../src/index.js';
import { startServer, scandump, probes } from './redis.mjs';
import { ribbonVectors } from './ribbon_vectors.mjs';

let server;
before(async () => { server = await startServer(); });
after(() => server?.stop());

const numbered = (p, n) => Array.from({ length: n }, (_, i) => `${p}${i}`);

/** `n` items whose hash is below 2^54 (hex below 0040…): their rows start in the first slots. */
function crowded(n) {
  const out = [];
  for (let i = 0; out.length < n; i++) {
    if (hashPairHex(`crowd:${i}`)[0] < '0040000000000000') out.push(`crowd:${i}`);
  }
  return out;
}

// key, members, the rate given to RF.BUILD … ERROR, probes asked.
const SHAPES = [
  ['rf:e2_1e5', numbered('a:', 100_000), '0.01', 300_000],
  ['rf:e3', numbered('b:', 20_000), '0.001', 200_000],
  ['rf:e4', numbered('c:', 20_000), '0.0001', 200_000],
  ['rf:frac', numbered('f:', 5_000), '0.03', 100_000],
  ['rf:whole', numbered('w:', 5_000), String(1 / 128 / 0.9), 50_000],
  ['rf:half', numbered('h:', 2_000), '0.5', 100_000],
  ['rf:one', ['one:0'], '0.01', 20_000],
  ['rf:crowded', crowded(300), '0.01', 30_000],
  ['rf:empty', [], '0.01', 30_000],
];

test('RibbonFilter answers exactly as RF.MEXISTS on 1 030 000 probes of nine shapes', async (t) => {
  const c = server.client;
  let asked = 0;
  for (const [n, [key, members, rate, count]] of SHAPES.entries()) {
    if (members.length) {
      for (let i = 0; i < members.length; i += 1000) await c.call('RF.MADD', key, ...members.slice(i, i + 1000));
      assert.equal(String(await c.call('RF.BUILD', key, 'ERROR', rate)), 'OK', key);
    } else {
      const empty = ribbonVectors().shapes.find((s) => s.name === 'empty');
      for (const [it, data] of empty.pairs) if (it !== 0) await c.call('RF.LOADCHUNK', key, it, data);
    }
    const f = RibbonFilter.fromScandump(await scandump(c, key, 'RF.SCANDUMP'));
    const list = probes(members, n + 1, count);
    let differ = 0;
    let firstDiffer = null;
    let positives = 0;
    // 20 commands of 1000 probes in flight at a time.
    for (let i = 0; i < list.length; i += 20_000) {
      const batches = [];
      for (let j = i; j < Math.min(list.length, i + 20_000); j += 1000) {
        batches.push(c.call('RF.MEXISTS', key, ...list.slice(j, j + 1000)));
      }
      (await Promise.all(batches)).flat().forEach((answer, j) => {
        const p = list[i + j];
        const local = f.has(p) ? 1 : 0;
        positives += local;
        if (local !== answer) {
          differ++;
          firstDiffer ??= p;
        }
      });
    }
    assert.equal(differ, 0, `${key}: ${differ} answers differ from RF.MEXISTS, the first for ${firstDiffer}`);
    const memberProbes = members.length ? list.filter((_, i) => i % 4 === 0) : [];
    assert.ok(memberProbes.every((m) => f.has(m)), `${key}: a member answered absent`);
    assert.equal(f.items, members.length, key);
    // What each shape is named for.
    const strangers = list.length - memberProbes.length;
    const falsePositives = positives - memberProbes.length;
    if (key === 'rf:crowded') assert.ok(f.bumpedCount > 100, `${key}: ${f.bumpedCount} bumped`);
    // Whole result bits: every start position in a lower block but the very last one.
    else if (key === 'rf:whole') assert.equal(f.upperStart, f.blocks - 1, `${key}: one upper block`);
    else if (key === 'rf:half') assert.ok(falsePositives * 3 > strangers, `${key}: ${falsePositives} of ${strangers}`);
    else assert.ok(falsePositives <= Number(rate) * strangers * 1.3 + 5, `${key}: ${falsePositives} of ${strangers}`);
    if (['rf:e2_1e5', 'rf:e3', 'rf:e4', 'rf:frac'].includes(key)) {
      assert.ok(f.upperStart > 0 && f.upperStart < f.blocks, `${key}: fractional result bits`);
    }
    t.diagnostic(`${key}: ${f.items} items, ${f.byteLength} body bytes, ${list.length} probes, `
      + `${falsePositives} false positives of ${strangers}, ${f.bumpedCount} bumped, 0 differ`);
    asked += list.length;
  }
  assert.equal(asked, 1_030_000);
});
