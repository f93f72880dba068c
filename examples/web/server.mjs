// Example server for the sign-up page: serves the page, the filter of taken usernames as a
// BF.SCANDUMP dump with a version tag, answers the page's "maybe" questions, and serves a
// static blocklist of 1 000 000 weak passwords as a Ribbon filter built offline by the core
// (blocklist.mjs; built into BLOCKLIST_DIR, default examples/web/blocklist, when missing).
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 node examples/web/server.mjs
//
// Redis holds (names configurable with KEY, default `web`):
//   web:names        the Bloom filter of taken usernames (BF.*; created on first start)
//   web:users        the set of taken usernames: the authority the "maybe" answers come from
//   web:version      a counter bumped with every sign-up: the version tag of the filter
//
// HTTP:
//   GET  /                   the page (public/index.html, public/app.js)
//   GET  /redis-bf-check.js  the JavaScript checker (clients/js/src/index.js)
//   GET  /api/filter         the dump, framed as repeated [f64 LE iterator, u32 LE length, bytes];
//                            ETag = version; answers 304 to a matching If-None-Match
//   GET  /api/check?name=N   {"taken": bool, "version": "..."}  (SISMEMBER: exact)
//   GET  /api/blocklist      the password blocklist's Ribbon filter (RF.SCANDUMP walk), framed
//                            as /api/filter; HEAD answers its size
//   GET  /api/blocklist.bloom  the Bloom filter of the same list and error rate, the same way
//                            (the page asks only its size, with HEAD)
//   POST /api/signup         body {"name": N} → 201 {"version"} or 409 {"taken": true}
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, RESP_TYPES } from 'redis';
import { buildBlocklist } from './blocklist.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CHECKER = resolve(HERE, '..', '..', 'clients', 'js', 'src', 'index.js');
const KEY = process.env.KEY ?? 'web';
const NAMES = `${KEY}:names`;
const USERS = `${KEY}:users`;
const VERSION = `${KEY}:version`;
const PORT = Number(process.env.PORT ?? 8080);
const HOST = process.env.HOST ?? '127.0.0.1';

const BLOCKLIST = buildBlocklist(resolve(process.env.BLOCKLIST_DIR ?? join(HERE, 'blocklist')));

const redis = createClient({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
redis.on('error', (e) => console.error('redis:', e.message));
await redis.connect();
// SCANDUMP's data must stay bytes.
const raw = redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });

// A filter for a million names at 1% false positives, unless one exists already.
if (!(await redis.exists(NAMES))) {
  await redis.sendCommand(['BF.RESERVE', NAMES, '0.01', '1000000']);
}

/** The dump of the current version, framed; rebuilt only when the version changed. */
let cached = { version: null, body: null };
async function currentVersion() {
  return String((await redis.get(VERSION)) ?? '0');
}
async function dump() {
  for (;;) {
    const version = await currentVersion();
    if (cached.version === version) return cached;
    const parts = [];
    let iter = 0;
    for (;;) {
      const [next, data] = await raw.sendCommand(['BF.SCANDUMP', NAMES, String(iter)]);
      if (Number(next) === 0) break;
      const frame = Buffer.alloc(12);
      frame.writeDoubleLE(Number(next), 0);
      frame.writeUInt32LE(data.length, 8);
      parts.push(frame, data);
      iter = Number(next);
    }
    // A sign-up during the walk could tear it: keep it only if the version did not move.
    if ((await currentVersion()) === version) {
      cached = { version, body: Buffer.concat(parts) };
      return cached;
    }
  }
}

const STATIC = {
  '/': [join(HERE, 'public', 'index.html'), 'text/html; charset=utf-8'],
  '/app.js': [join(HERE, 'public', 'app.js'), 'text/javascript; charset=utf-8'],
  '/redis-bf-check.js': [CHECKER, 'text/javascript; charset=utf-8'],
  '/api/blocklist': [BLOCKLIST.ribbon, 'application/octet-stream'],
  '/api/blocklist.bloom': [BLOCKLIST.bloom, 'application/octet-stream'],
};

function json(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readBody(req, limit = 4096) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > limit) throw new Error('body too large');
  }
  return body;
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://x');
  const file = STATIC[url.pathname];
  if ((req.method === 'GET' || req.method === 'HEAD') && file) {
    const body = await readFile(file[0]);
    res.writeHead(200, { 'Content-Type': file[1], 'Cache-Control': 'no-cache', 'Content-Length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  } else if (req.method === 'GET' && url.pathname === '/api/filter') {
    const { version, body } = await dump();
    const etag = `"${version}"`;
    const headers = { ETag: etag, 'Cache-Control': 'no-cache', 'Content-Type': 'application/octet-stream' };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers);
      res.end();
    } else {
      res.writeHead(200, { ...headers, 'Content-Length': body.length });
      res.end(body);
    }
  } else if (req.method === 'GET' && url.pathname === '/api/check') {
    const name = url.searchParams.get('name') ?? '';
    const [taken, version] = await Promise.all([redis.sIsMember(USERS, name), currentVersion()]);
    json(res, 200, { taken: Boolean(taken), version: `"${version}"` });
  } else if (req.method === 'POST' && url.pathname === '/api/signup') {
    const { name } = JSON.parse(await readBody(req));
    if (typeof name !== 'string' || name.length === 0 || name.length > 64) return json(res, 400, { error: 'bad name' });
    if (!(await redis.sAdd(USERS, name))) return json(res, 409, { taken: true });
    const [, version] = await redis.multi()
      .addCommand(['BF.ADD', NAMES, name])
      .incr(VERSION)
      .exec();
    json(res, 201, { version: `"${version}"` });
  } else {
    res.writeHead(404).end();
  }
}

createServer((req, res) => {
  handle(req, res).catch((e) => {
    console.error(e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
}).listen(PORT, HOST, () => console.log(`sign-up example on http://${HOST}:${PORT}/`));
