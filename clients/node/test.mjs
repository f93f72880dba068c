// Client compatibility test: drive every `client.bf.*` and `client.cf.*` command of node-redis
// (@redis/bloom) against redis-bf, in RESP2 and RESP3.
//
// Starts its own redis-server (free port on 127.0.0.1, temporary directory) with the module from
// $BF_MODULE (default ../../target/release/libredis_bf.so relative to this file). Binary-safe
// SCANDUMP/LOADCHUNK uses `client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })`, the
// node-redis v5+ replacement of v4's `commandOptions({ returnBuffers: true })`.
//
// The last line is `N passed, N failed`; the exit code is non-zero when anything failed.
// Environment: BF_MODULE (module path), REDIS_SERVER (server binary, default redis-server).

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, RESP_TYPES, ErrorReply } from 'redis';
import { freePort } from '../js/test/redis.mjs';
import { CuckooFilter } from '../js/src/index.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const MODULE = resolve(process.env.BF_MODULE ?? join(HERE, '..', '..', 'target', 'release', 'libredis_bf.so'));
const SERVER = process.env.REDIS_SERVER ?? 'redis-server';
const REDIS_VERSION = JSON.parse(readFileSync(join(HERE, 'node_modules', 'redis', 'package.json'), 'utf8')).version;
const INFO_KEYS = ['Capacity', 'Size', 'Number of filters', 'Number of items inserted', 'Expansion rate'];

// ---------------------------------------------------------------------------------------------
// Independent model of the module's sizing (`docs/format.md` ("Layer sizing", "The chain", "Memory accounting")).
const LN2_SQUARED = 0.480453013918201;
function layerBytes(capacity, error) {
  const bpe = Math.abs(Math.log(error) / LN2_SQUARED);
  const bits = Math.max(1, Math.trunc(capacity * bpe));
  return Math.ceil(bits / 64) * 8;
}
function expectedSize(capacity, error, expansion, nonscaling, layers) {
  let err = nonscaling ? error : error * 0.5;
  let cap = capacity;
  let size = 32;
  for (let i = 0; i < layers; i++) {
    size += 64 + layerBytes(cap, err);
    cap *= expansion;
    err *= 0.5;
  }
  return size;
}

// ---------------------------------------------------------------------------------------------
// Server
async function startServer() {
  if (!existsSync(MODULE)) {
    console.error(`module not found: ${MODULE} (run cargo build --release or set BF_MODULE)`);
    process.exit(2);
  }
  const dir = mkdtempSync(join(tmpdir(), 'redis-bf-node-'));
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const proc = spawn(SERVER, [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
      '--appendonly', 'no', '--daemonize', 'no', '--logfile', join(dir, 'server.log'),
      '--loadmodule', MODULE,
    ], { stdio: 'ignore' });
    let exited = false;
    proc.on('exit', () => { exited = true; });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline && !exited) {
      const c = createClient({ socket: { port, host: '127.0.0.1', reconnectStrategy: false }, RESP: 2 });
      c.on('error', () => {});
      try {
        await c.connect();
        await c.ping();
        await c.quit();
        return {
          port,
          async stop() {
            if (!exited) {
              const done = new Promise((r) => proc.on('exit', r));
              proc.kill('SIGTERM');
              await done;
            }
            rmSync(dir, { recursive: true, force: true });
          },
        };
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (!exited) proc.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
  console.error('redis-server did not start');
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Assertions
class Failed extends Error {}
function eq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Failed(`${what}: expected ${e}, got ${a}`);
}
function check(cond, what) {
  if (!cond) throw new Failed(what);
}
async function rejects(promise, text, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof ErrorReply, `${what}: expected an ErrorReply, got ${e}`);
    eq(e.message, text, `${what}: error text`);
    return;
  }
  throw new Failed(`${what}: expected the error "${text}"`);
}
function bools(v, what) {
  check(Array.isArray(v), `${what}: expected an array, got ${JSON.stringify(v)}`);
  v.forEach((x, i) => check(typeof x === 'boolean', `${what}[${i}] should be a boolean, got ${JSON.stringify(x)}`));
  return v;
}
function bool(v, what) {
  check(typeof v === 'boolean', `${what} should be a boolean, got ${JSON.stringify(v)}`);
  return v;
}

// node-redis returns BF.INFO as a plain object in both protocols (RESP2: pairs → object;
// RESP3: the map decoded as an object).
function assertInfo(info, capacity, size, filters, items, expansion, what) {
  check(info && typeof info === 'object' && !Array.isArray(info), `${what}: object, got ${JSON.stringify(info)}`);
  eq(Object.keys(info), INFO_KEYS, `${what}: keys`);
  eq(info['Capacity'], capacity, `${what}: Capacity`);
  eq(info['Size'], size, `${what}: Size`);
  eq(info['Number of filters'], filters, `${what}: Number of filters`);
  eq(info['Number of items inserted'], items, `${what}: Number of items inserted`);
  eq(info['Expansion rate'], expansion, `${what}: Expansion rate`);
  for (const k of INFO_KEYS.slice(0, 4)) check(typeof info[k] === 'number', `${what}: ${k} is a number`);
}

// ---------------------------------------------------------------------------------------------
// Tests: each gets (client, bufClient, resp) on a flushed database.

/**
 * A whole SCANDUMP walk with `scanDump` (node-redis' `bf.scanDump` or `cf.scanDump` on the
 * Buffer client): every reply before the end, each with a number iterator and a Buffer chunk;
 * `end` checks the last reply's chunk.
 */
async function walkScanDump(scanDump, key, end) {
  const chunks = [];
  let iterator = 0;
  for (let n = 0; n < 100000; n++) {
    const reply = await scanDump(key, iterator);
    check(typeof reply.iterator === 'number', `iterator is a number: ${reply.iterator}`);
    iterator = reply.iterator;
    if (iterator === 0) {
      end(reply.chunk);
      return chunks;
    }
    check(Buffer.isBuffer(reply.chunk), `chunk is a Buffer: ${typeof reply.chunk}`);
    chunks.push(reply);
  }
  throw new Failed('scanDump did not finish');
}

/** BF.SCANDUMP's walk: it ends with [0, ""]. */
function scanDumpAll(bin, key) {
  return walkScanDump((k, it) => bin.bf.scanDump(k, it), key, (chunk) => {
    check(Buffer.isBuffer(chunk), `chunk is a Buffer: ${typeof chunk}`);
    eq(chunk.length, 0, 'final chunk is an empty bulk string');
  });
}

const TESTS = {
  async protocol(c, _b, resp) {
    const info = await c.sendCommand(['CLIENT', 'INFO']);
    eq(/\bresp=(\d)/.exec(String(info))?.[1], String(resp), 'negotiated protocol');
  },

  async reserve(c) {
    eq(await c.bf.reserve('r', 0.01, 1000), 'OK', 'reserve');
    assertInfo(await c.bf.info('r'), 1000, 1480, 1, 0, 2, 'info');
    eq(expectedSize(1000, 0.01, 2, false, 1), 1480, 'model sanity');
    await rejects(c.bf.reserve('r', 0.01, 1000), 'ERR item exists', 'reserve twice');
    // Error rates are sent with toString(): 1e-7 arrives in exponent form.
    eq(await c.bf.reserve('tiny', 1e-7, 10), 'OK', 'reserve 1e-7');
    assertInfo(await c.bf.info('tiny'), 10, expectedSize(10, 1e-7, 2, false, 1), 1, 0, 2, 'tiny');
  },

  async reserveExpansion(c) {
    eq(await c.bf.reserve('e', 0.001, 100, { EXPANSION: 4 }), 'OK', 'reserve EXPANSION 4');
    assertInfo(await c.bf.info('e'), 100, expectedSize(100, 0.001, 4, false, 1), 1, 0, 4, 'info');
    const items = Array.from({ length: 450 }, (_, i) => `item-${i}`);
    const added = bools(await c.bf.mAdd('e', items), 'mAdd');
    eq(added.length, 450, 'mAdd length');
    const n = added.filter(Boolean).length;
    check(n >= 448, `few false positives among 450 fresh items: ${n}`);
    assertInfo(await c.bf.info('e'), 500, expectedSize(100, 0.001, 4, false, 2), 2, n, 4, 'grown');
  },

  async reserveNonScaling(c, _b, resp) {
    eq(await c.bf.reserve('n', 0.01, 3, { NONSCALING: true }), 'OK', 'reserve NONSCALING');
    assertInfo(await c.bf.info('n'), 3, 104, 1, 0, null, 'nonscaling info');
    eq(bools(await c.bf.mAdd('n', ['a', 'b', 'c']), 'mAdd'), [true, true, true], 'fill');
    // The module's reply is [error] (array stops at the first "full"): check it raw, then
    // what node-redis makes of it (RESP2: transformBooleanArrayReply maps the error to false).
    const raw = await c.sendCommand(['BF.MADD', 'n', 'd', 'a', 'e']);
    check(Array.isArray(raw) && raw.length === 1, `raw reply has one element: ${raw}`);
    check(raw[0] instanceof ErrorReply, `raw element is an error: ${raw[0]}`);
    eq(raw[0].message, 'ERR non scaling filter is full', 'inline error text');
    const mapped = await c.bf.mAdd('n', ['d', 'a']);
    eq(mapped.length, 1, 'stops at the first full error');
    if (resp === 2) eq(mapped, [false], 'RESP2 maps the error element to false');
    else check(mapped[0] instanceof ErrorReply, `RESP3 passes the error element through: ${mapped[0]}`);
    await rejects(c.bf.add('n', 'zz'), 'ERR non scaling filter is full', 'add on full');
    eq(bool(await c.bf.add('n', 'a'), 'add existing'), false, 'existing item on a full filter');
    eq(await c.bf.card('n'), 3, 'card');
    await rejects(c.bf.reserve('x', 0.01, 10, { EXPANSION: 2, NONSCALING: true }),
      'Nonscaling filters cannot expand', 'EXPANSION with NONSCALING');
  },

  async addExists(c) {
    eq(bool(await c.bf.add('a', 'hello'), 'add'), true, 'add new');
    eq(bool(await c.bf.add('a', 'hello'), 'add'), false, 'add again');
    eq(bool(await c.bf.exists('a', 'hello'), 'exists'), true, 'exists');
    eq(bool(await c.bf.exists('a', 'nope'), 'exists'), false, 'not exists');
    eq(bool(await c.bf.exists('missing', 'x'), 'exists'), false, 'missing key');
    assertInfo(await c.bf.info('a'), 100, 240, 1, 1, 2, 'auto-created default filter');
    const blob = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    eq(await c.bf.add('a', blob), true, 'add binary item');
    eq(await c.bf.exists('a', blob), true, 'binary item exists');
    eq(await c.bf.exists('a', blob.subarray(0, 255)), false, 'prefix does not');
    eq(await c.type('a'), 'MBbloom--', 'TYPE');
  },

  async mAddMExists(c) {
    eq(bools(await c.bf.mAdd('m', ['a', 'b', 'a', 'c']), 'mAdd'), [true, true, false, true], 'mAdd');
    eq(bools(await c.bf.mExists('m', ['a', 'x', 'c', 'b']), 'mExists'), [true, false, true, true], 'mExists');
    eq(bools(await c.bf.mExists('missing', ['a', 'b']), 'mExists'), [false, false], 'missing key');
    const many = Array.from({ length: 1000 }, (_, i) => `k${i}`);
    await c.bf.mAdd('m', many);
    eq((await c.bf.mExists('m', many)).filter(Boolean).length, 1000, 'no false negatives');
  },

  async insertDefaults(c) {
    eq(bools(await c.bf.insert('i', ['a', 'b', 'a']), 'insert'), [true, true, false], 'insert');
    assertInfo(await c.bf.info('i'), 100, 240, 1, 2, 2, 'defaults');
    eq(bools(await c.bf.insert('i', 'c'), 'insert one'), [true], 'single item still an array');
  },

  async insertCapacityErrorExpansion(c) {
    const r = await c.bf.insert('ie', ['x', 'y'], { CAPACITY: 50, ERROR: 0.001, EXPANSION: 3 });
    eq(bools(r, 'insert'), [true, true], 'insert with options');
    assertInfo(await c.bf.info('ie'), 50, expectedSize(50, 0.001, 3, false, 1), 1, 2, 3, 'ie');
    await c.bf.insert('ie', ['z'], { CAPACITY: 999999, ERROR: 0.5, EXPANSION: 9 });
    const info = await c.bf.info('ie');
    eq([info['Capacity'], info['Expansion rate'], info['Number of items inserted']], [50, 3, 3], 'options ignored on an existing key');
    await c.bf.insert('ie', Array.from({ length: 60 }, (_, i) => `g${i}`));
    assertInfo(await c.bf.info('ie'), 200, expectedSize(50, 0.001, 3, false, 2), 2,
      (await c.bf.card('ie')), 3, 'grown');
  },

  async insertNoCreate(c) {
    await rejects(c.bf.insert('nc', ['a'], { NOCREATE: true }), 'ERR not found', 'NOCREATE on a missing key');
    eq(await c.exists('nc'), 0, 'nothing created');
    await c.bf.reserve('nc', 0.01, 10);
    eq(bools(await c.bf.insert('nc', ['a', 'b'], { NOCREATE: true }), 'insert'), [true, true], 'existing key');
  },

  async insertNonScaling(c, _b, resp) {
    const r = await c.bf.insert('ns', ['a', 'b', 'c', 'd', 'd'], { CAPACITY: 3, ERROR: 0.01, NONSCALING: true });
    eq(r.length, 4, 'four elements for five items (stops after the full error)');
    eq(r.slice(0, 3), [true, true, true], 'first three');
    if (resp === 2) eq(r[3], false, 'RESP2: error element mapped to false by node-redis');
    else check(r[3] instanceof ErrorReply && r[3].message === 'ERR non scaling filter is full', `RESP3 error element: ${r[3]}`);
    assertInfo(await c.bf.info('ns'), 3, 104, 1, 3, null, 'nonscaling insert');
  },

  async insertAllOptions(c) {
    const r = await c.bf.insert('all', ['p', 'q'], { CAPACITY: 10, ERROR: 0.05, EXPANSION: 2, NONSCALING: true });
    eq(bools(r, 'insert'), [true, true], 'insert with every creation option');
    assertInfo(await c.bf.info('all'), 10, expectedSize(10, 0.05, 2, true, 1), 1, 2, null, 'all');
  },

  async card(c) {
    eq(await c.bf.card('nothing'), 0, 'card of a missing key');
    await c.bf.mAdd('cd', Array.from({ length: 250 }, (_, i) => `v${i}`));
    const n = await c.bf.card('cd');
    check(typeof n === 'number' && n >= 248 && n <= 250, `card ≈ 250: ${n}`);
    assertInfo(await c.bf.info('cd'), 300, expectedSize(100, 0.01, 2, false, 2), 2, n, 2, 'grown default filter');
    await c.set('str', 'v');
    try {
      await c.bf.card('str');
      throw new Failed('card on a string should fail');
    } catch (e) {
      check(e instanceof ErrorReply && e.message.startsWith('WRONGTYPE'), `WRONGTYPE: ${e.message}`);
    }
  },

  async infoErrors(c) {
    await rejects(c.bf.info('nothing'), 'ERR not found', 'info on a missing key');
  },

  async scanDumpLoadChunk(c, b) {
    await c.bf.reserve('src', 0.001, 100, { EXPANSION: 2 });
    const items = Array.from({ length: 700 }, (_, i) => `user:${i}`);
    const binItems = Array.from({ length: 50 }, (_, i) => Buffer.from([i, 0, 255 - i, 0x80]));
    await c.bf.mAdd('src', [...items, ...binItems]);
    const chunks = await scanDumpAll(b, 'src');
    const info = await c.bf.info('src');
    const nf = info['Number of filters'];
    eq(chunks.length, 1 + nf, 'header + one chunk per layer');
    eq(chunks[0].iterator, 1, 'header iterator');
    eq(chunks[0].chunk.length, 20 + 53 * nf, 'header length');
    // Chunks hold bytes ≥ 0x80 that a UTF-8 string decoding would mangle.
    check(chunks.slice(1).some((ch) => ch.chunk.some((x) => x >= 0x80)), 'chunks contain high bytes');
    for (const { iterator, chunk } of chunks) {
      eq(await b.bf.loadChunk('dst', iterator, chunk), 'OK', `loadChunk ${iterator}`);
    }
    eq((await c.bf.mExists('dst', [...items, ...binItems])).filter(Boolean).length, 750, 'every item in the copy');
    eq(await c.bf.exists('dst', 'user:123'), true, 'exists on the copy');
    const probes = Array.from({ length: 2000 }, (_, i) => `other:${i}`);
    eq(await c.bf.mExists('dst', probes), await c.bf.mExists('src', probes), 'same answers for non-members');
    eq(await c.bf.info('dst'), info, 'BF.INFO identical');
    eq(await c.sendCommand(['BF.DEBUG', 'dst']), await c.sendCommand(['BF.DEBUG', 'src']), 'BF.DEBUG identical');
    eq(await c.bf.add('dst', 'fresh-after-restore'), true, 'copy accepts new items');
  },

  async scanDumpLarge(c, b) {
    // 15M entries at 0.005 per layer ≈ 20.7 MB of bits: a 16 MiB chunk plus the rest.
    await c.bf.reserve('big', 0.01, 15000000);
    const items = Array.from({ length: 5000 }, (_, i) => `b${i}`);
    await c.bf.mAdd('big', items);
    const chunks = await scanDumpAll(b, 'big');
    eq(chunks.length, 3, 'header + 2 chunks');
    eq(chunks[1].chunk.length, 16 * 1024 * 1024, 'first data chunk is 16 MiB');
    for (const { iterator, chunk } of chunks) await b.bf.loadChunk('big2', iterator, chunk);
    eq((await c.bf.mExists('big2', items)).filter(Boolean).length, 5000, 'all items in the copy');
    eq(await c.sendCommand(['BF.DEBUG', 'big2']), await c.sendCommand(['BF.DEBUG', 'big']), 'BF.DEBUG identical');
    await c.del(['big', 'big2']);
  },

  async scanDumpNonScaling(c, b) {
    await c.bf.reserve('nsrc', 0.01, 20, { NONSCALING: true });
    await c.bf.mAdd('nsrc', Array.from({ length: 20 }, (_, i) => `z${i}`));
    for (const { iterator, chunk } of await scanDumpAll(b, 'nsrc')) await b.bf.loadChunk('ndst', iterator, chunk);
    const src = await c.bf.info('nsrc');
    assertInfo(await c.bf.info('ndst'), 20, src['Size'], 1, 20, null, 'nonscaling copy');
    eq(await c.bf.exists('ndst', 'z7'), true, 'exists on the copy');
  },

  async scanDumpErrors(c, b) {
    await rejects(b.bf.scanDump('nothing', 0), 'ERR not found', 'scanDump on a missing key');
    await rejects(b.bf.loadChunk('nothing2', 1, Buffer.alloc(19)), 'ERR received bad data', 'short header');
  },
};

// ---------------------------------------------------------------------------------------------
// Cuckoo filters: client.cf.*. Expected values are RedisBloom's replies (its recorded CF
// batteries; the whole suite also passes with BF_MODULE set to RedisBloom 2.8.20's
// redisbloom.so): CF.INFO Size = 40 + 16 × sub-filters + table bytes; buckets = next power of two of
// capacity / bucket size. RESP3: CF.ADD / ADDNX / INSERT / EXISTS / MEXISTS / DEL answer
// booleans (node-redis maps RESP2's 1 to true), CF.INSERTNX and CF.COUNT integers.
const CF_INFO_KEYS = ['Size', 'Number of buckets', 'Number of filters', 'Number of items inserted',
  'Number of items deleted', 'Bucket size', 'Expansion rate', 'Max iterations'];

/** CF.INFO as [size, buckets, filters, inserted, deleted, bucket size, expansion, max iterations]. */
async function cfInfo(c, key) {
  const info = await c.cf.info(key);
  check(info && typeof info === 'object' && !Array.isArray(info), `CF.INFO: object, got ${JSON.stringify(info)}`);
  eq(Object.keys(info), CF_INFO_KEYS, 'CF.INFO keys');
  const out = CF_INFO_KEYS.map((k) => info[k]);
  out.forEach((v, i) => check(typeof v === 'number', `CF.INFO ${CF_INFO_KEYS[i]} is a number: ${v}`));
  return out;
}

/** CF.SCANDUMP's walk: it ends with [0, nil]. */
function cfScanDumpAll(bin, key) {
  return walkScanDump((k, it) => bin.cf.scanDump(k, it), key, (chunk) => eq(chunk, null, 'the walk ends with [0, nil]'));
}

Object.assign(TESTS, {
  async cfReserveInfo(c) {
    eq(await c.cf.reserve('c', 1000), 'OK', 'reserve');
    eq(await cfInfo(c, 'c'), [1080, 512, 1, 0, 0, 2, 1, 20], 'defaults: 512 buckets of 2');
    eq(await c.cf.reserve('c2', 100, { BUCKETSIZE: 4, MAXITERATIONS: 5, EXPANSION: 2 }), 'OK', 'reserve with options');
    eq(await cfInfo(c, 'c2'), [184, 32, 1, 0, 0, 4, 2, 5], '32 buckets of 4');
    await rejects(c.cf.reserve('c', 100), 'ERR item exists', 'reserve twice');
    await rejects(c.cf.info('nothing'), 'ERR not found', 'info on a missing key');
    eq(await c.type('c'), 'MBbloomCF', 'TYPE');
  },

  async cfAddAddNxExists(c) {
    eq(bool(await c.cf.add('a', 'x'), 'add'), true, 'add');
    eq(bool(await c.cf.add('a', 'x'), 'add again'), true, 'a second copy is stored');
    eq(await c.cf.count('a', 'x'), 2, 'count');
    eq(bool(await c.cf.addNX('a', 'x'), 'addNX present'), false, 'addNX of a present item');
    eq(bool(await c.cf.addNX('a', 'y'), 'addNX new'), true, 'addNX of a new item');
    eq(bool(await c.cf.exists('a', 'x'), 'exists'), true, 'exists');
    eq(bool(await c.cf.exists('a', 'zz'), 'exists'), false, 'exists of another item');
    eq(bool(await c.cf.exists('missing', 'x'), 'exists'), false, 'exists on a missing key');
    eq(bools(await c.cf.mExists('a', ['x', 'zz', 'y']), 'mExists'), [true, false, true], 'mExists');
    eq(bools(await c.cf.mExists('missing', ['x', 'y']), 'mExists'), [false, false], 'mExists on a missing key');
    eq(await cfInfo(c, 'a'), [1080, 512, 1, 3, 0, 2, 1, 20], 'auto-created: capacity 1024');
    const blob = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    eq(await c.cf.add('a', blob), true, 'binary item');
    eq(await c.cf.exists('a', blob), true, 'binary item present');
    eq(await c.cf.count('a', blob.subarray(0, 255)), 0, 'a prefix is another item');
    await c.set('str', 'v');
    try {
      await c.cf.add('str', 'x');
      throw new Failed('CF.ADD on a string should fail');
    } catch (e) {
      check(e instanceof ErrorReply && e.message.startsWith('WRONGTYPE'), `WRONGTYPE: ${e.message}`);
    }
    eq(await c.cf.exists('str', 'x'), false, 'CF.EXISTS answers 0 for another type');
  },

  async cfInsert(c) {
    eq(bools(await c.cf.insert('i', ['a', 'b', 'a']), 'insert'), [true, true, true], 'insert stores every copy');
    eq(await cfInfo(c, 'i'), [1080, 512, 1, 3, 0, 2, 1, 20], 'insert defaults');
    eq(bools(await c.cf.insert('i2', 'a', { CAPACITY: 100 }), 'insert one'), [true], 'one item: an array');
    eq(await cfInfo(c, 'i2'), [184, 64, 1, 1, 0, 2, 1, 20], 'CAPACITY 100: 64 buckets');
    await c.cf.insert('i2', ['b'], { CAPACITY: 100000 });
    eq((await cfInfo(c, 'i2')).slice(0, 4), [184, 64, 1, 2], 'options are ignored once the key exists');
    await rejects(c.cf.insert('nc', ['a'], { NOCREATE: true }), 'ERR not found', 'NOCREATE on a missing key');
    eq(await c.exists('nc'), 0, 'nothing created');
    eq(await c.cf.insert('i2', ['c'], { NOCREATE: true }), [true], 'NOCREATE on an existing key');
  },

  async cfInsertNx(c) {
    const r = await c.cf.insertNX('n', ['a', 'b', 'a'], { CAPACITY: 200 });
    eq(r, [1, 1, 0], 'insertNX: integers in RESP2 and RESP3');
    eq(await cfInfo(c, 'n'), [312, 128, 1, 2, 0, 2, 1, 20], 'CAPACITY 200: 128 buckets');
    await rejects(c.cf.insertNX('nc', ['a'], { NOCREATE: true }), 'ERR not found', 'NOCREATE on a missing key');
  },

  async cfFull(c, _b, resp) {
    eq(await c.cf.reserve('full', 4, { BUCKETSIZE: 2, MAXITERATIONS: 1, EXPANSION: 0 }), 'OK', 'reserve');
    for (let i = 0; i < 4; i++) eq(await c.cf.add('full', `x:${i}`), true, `x:${i} fits`);
    for (let i = 4; i < 8; i++) await rejects(c.cf.add('full', `x:${i}`), 'Filter is full', `add x:${i}`);
    // -1 for an item that did not fit: RESP2 -1 (node-redis: false), RESP3 false.
    const raw = await c.sendCommand(['CF.INSERT', 'full', 'ITEMS', 'y:0', 'y:1', 'x:0']);
    eq(raw, resp === 2 ? [-1, -1, -1] : [false, false, false], 'raw CF.INSERT on a full filter');
    eq(await c.cf.insert('full', ['y:0']), [false], 'cf.insert maps it to false');
    eq(await c.cf.insertNX('full', ['x:0', 'y:2']), [0, -1], 'insertNX: 0 present, -1 full (integers in RESP3 too)');
    eq(await c.cf.addNX('full', 'x:0'), false, 'addNX of a present item on a full filter');
    await rejects(c.cf.addNX('full', 'y:3'), 'Filter is full', 'addNX of a new item');
    eq(await cfInfo(c, 'full'), [60, 2, 1, 4, 0, 2, 0, 1], 'full filter');
    eq(await c.cf.mExists('full', ['x:0', 'x:1', 'x:2', 'x:3', 'x:4', 'y:0']), [true, true, true, true, false, false], 'contents');
  },

  async cfDelCount(c, b) {
    await c.cf.reserve('dl', 100);
    eq(bool(await c.cf.del('dl', 'a'), 'del'), false, 'delete of an absent item');
    await c.cf.add('dl', 'a');
    await c.cf.add('dl', 'a');
    eq(await c.cf.count('dl', 'a'), 2, 'two copies');
    eq(await c.cf.del('dl', 'a'), true, 'delete one copy');
    eq(await c.cf.count('dl', 'a'), 1, 'one copy left');
    eq(await c.cf.del('dl', 'a'), true, 'delete the last copy');
    eq(await c.cf.del('dl', 'a'), false, 'nothing left to delete');
    eq(await c.cf.exists('dl', 'a'), false, 'gone');
    eq(await cfInfo(c, 'dl'), [184, 64, 1, 0, 2, 2, 1, 20], '0 items, 2 deletions');
    eq(await c.cf.count('missing', 'a'), 0, 'count on a missing key');
    await rejects(c.cf.del('missing', 'a'), 'Not found', 'delete on a missing key');
    eq(await cfScanDumpAll(b, 'dl'), [], 'CF.SCANDUMP of an empty filter: [0, nil] at once');
    eq(await c.sendCommand(['CF.COMPACT', 'dl']), 'OK', 'CF.COMPACT');
    eq((await cfInfo(c, 'dl'))[4], 0, 'compaction resets the deletion count');
  },

  async cfScanDumpLoadChunk(c, b) {
    await c.cf.reserve('src', 64, { EXPANSION: 2 });
    const items = [...Array.from({ length: 1000 }, (_, i) => `user:${i}`),
      ...Array.from({ length: 50 }, (_, i) => Buffer.from([i, 0, 255 - i, 0x80]))];
    for (let i = 0; i < items.length; i += 250) await c.cf.insert('src', items.slice(i, i + 250));
    const info = await cfInfo(c, 'src');
    const nf = info[2];
    const chunks = await cfScanDumpAll(b, 'src');
    eq(chunks.length, 1 + nf, 'header + one chunk per sub-filter');
    eq([chunks[0].iterator, chunks[0].chunk.length], [1, 38], 'header: iterator 1, 38 bytes');
    eq(chunks.slice(1).map((ch) => ch.chunk.length), Array.from({ length: nf }, (_, i) => 64 * 2 ** i),
      'sub-filter i: 32 × 2^i buckets of 2');
    eq(chunks.slice(1).reduce((s, ch) => s + ch.chunk.length, 0) + 40 + 16 * nf, info[0], 'tables + records = Size');
    for (const { iterator, chunk } of chunks) eq(await b.cf.loadChunk('dst', iterator, chunk), 'OK', `loadChunk ${iterator}`);
    eq(await cfInfo(c, 'dst'), info, "the copy's CF.INFO");
    eq(await c.sendCommand(['CF.DEBUG', 'dst']), await c.sendCommand(['CF.DEBUG', 'src']), 'CF.DEBUG identical');
    const probes = [...items, ...Array.from({ length: 3000 }, (_, i) => `other:${i}`)];
    const copy = await c.cf.mExists('dst', probes);
    eq(copy, await c.cf.mExists('src', probes), 'the copy answers as the original');
    eq(copy.slice(0, items.length).filter(Boolean).length, items.length, 'every item present in the copy');
    // The local checker rebuilt from the same walk answers as CF.MEXISTS and CF.COUNT.
    const local = CuckooFilter.fromScandump(chunks.map(({ iterator, chunk }) => [iterator, chunk]));
    eq(probes.map((p) => local.has(p)), copy, 'redis-bf-check CuckooFilter == CF.MEXISTS');
    const counts = await Promise.all(probes.slice(0, 300).map((p) => c.cf.count('src', p)));
    eq(probes.slice(0, 300).map((p) => local.count(p)), counts, 'count == CF.COUNT');
    eq(await c.cf.add('dst', 'after-restore'), true, 'the copy takes new items');
    await rejects(b.cf.loadChunk('dst', 1, chunks[0].chunk), 'ERR item exists', 'a header onto an existing key');
    await rejects(b.cf.loadChunk('x', 1, Buffer.alloc(37)), 'Invalid header', 'a short header');
    await rejects(b.cf.scanDump('nothing', 0), 'ERR not found', 'scanDump of a missing key');
  },
});

// ---------------------------------------------------------------------------------------------
async function main() {
  console.log(`node-redis ${REDIS_VERSION}, module ${MODULE}`);
  const server = await startServer();
  let passed = 0;
  let failed = 0;
  const perMode = [];
  try {
    for (const resp of [2, 3]) {
      const client = createClient({ socket: { port: server.port, host: '127.0.0.1' }, RESP: resp });
      client.on('error', (e) => console.error('client error', e));
      await client.connect();
      const bin = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
      let p = 0;
      let f = 0;
      for (const [name, fn] of Object.entries(TESTS)) {
        await client.flushAll();
        try {
          await fn(client, bin, resp);
          console.log(`PASS resp${resp}::${name}`);
          p++;
        } catch (e) {
          console.log(`FAIL resp${resp}::${name}: ${e instanceof Failed ? e.message : e.stack}`);
          f++;
        }
      }
      await client.quit();
      perMode.push(`  resp${resp}: ${p} passed, ${f} failed`);
      passed += p;
      failed += f;
    }
  } finally {
    await server.stop();
  }
  for (const l of perMode) console.log(l);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
