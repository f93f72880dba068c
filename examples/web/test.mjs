// Browser test of the sign-up page: redis-server with the module, the example server, and
// Debian's headless Chromium driven by puppeteer-core (no browser download). Asserts that
//   * a definitely-free name says "free" from the filter alone, with no request;
//   * a taken name says "taken" after one /api/check request;
//   * a false positive of the filter (not taken, but the filter says "maybe") asks the server
//     and says "free";
//   * a sign-up changes the version: the page refetches the filter once (unchanged filters
//     are answered 304), after which the new name is "taken";
//   * the 1 000 000-entry password blocklist (blocklist.mjs, built by the core into a temporary
//     folder) arrives as a Ribbon filter: the page shows its download size and the Bloom
//     filter's (the files' sizes), says "blocked" for a listed password and "ok" for another,
//     and answers 40 000 entries and strangers exactly as the checker does in Node.
//   SCREENSHOT=docs/signup-page.png node test.mjs   also saves a screenshot.
// Environment: BF_MODULE, REDIS_SERVER (see clients/js/test/redis.mjs), CHROMIUM (default
// /usr/bin/chromium).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import puppeteer from 'puppeteer-core';
import { BloomFilter, RibbonFilter } from '../../clients/js/src/index.js';
import { startServer, scandump, freePort } from '../../clients/js/test/redis.mjs';
import { readFrames } from '../../clients/js/test/ribbon_vectors.mjs';
import { buildBlocklist, entry, ENTRIES } from './blocklist.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

const cleanups = [];
async function main() {
  // Redis with 2000 taken names in a filter sized for them at 10% (so false positives are easy
  // to find; the server would create a 1e6-name, 1% filter on an empty Redis).
  const redis = await startServer();
  cleanups.push(() => redis.stop());
  const c = redis.client;
  const taken = ['alice', 'bob', 'carol', ...Array.from({ length: 1997 }, (_, i) => `member${i}`)];
  await c.call('BF.RESERVE', 'web:names', '0.1', '2000');
  await c.call('BF.MADD', 'web:names', ...taken);
  await c.call('SADD', 'web:users', ...taken);

  // Names for each case, found with the checker itself.
  const f = BloomFilter.fromScandump(await scandump(c, 'web:names'));
  const candidates = Array.from({ length: 10000 }, (_, i) => `guest${i}`);
  const freeName = candidates.find((n) => !f.has(n));
  const fpName = candidates.find((n) => f.has(n));
  assert.ok(freeName && fpName, 'no free or false-positive candidate');
  assert.equal((await c.call('BF.EXISTS', 'web:names', fpName)), 1);
  assert.equal((await c.call('SISMEMBER', 'web:users', fpName)), 0);
  const newName = candidates.find((n) => !f.has(n) && n !== freeName);

  // The blocklist, built offline by the core into a temporary folder.
  const blockDir = mkdtempSync(join(tmpdir(), 'redis-bf-blocklist-'));
  cleanups.push(() => rmSync(blockDir, { recursive: true, force: true }));
  const files = buildBlocklist(blockDir);
  const ribbon = RibbonFilter.fromScandump(readFrames(files.ribbon));
  assert.equal(ribbon.items, ENTRIES);

  // The example server.
  const port = await freePort();
  const web = spawn(process.execPath, [join(HERE, 'server.mjs')], {
    env: { ...process.env, PORT: String(port), REDIS_URL: `redis://127.0.0.1:${redis.port}`, BLOCKLIST_DIR: blockDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.unshift(() => web.kill());
  await new Promise((res, rej) => {
    web.stdout.on('data', (d) => d.toString().includes('sign-up example on') && res());
    web.once('exit', (code) => rej(new Error(`server exited with ${code}`)));
  });

  // Headless Chromium with a fresh profile.
  const profile = mkdtempSync(join(tmpdir(), 'redis-bf-chromium-'));
  cleanups.push(() => rmSync(profile, { recursive: true, force: true }));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  cleanups.unshift(() => browser.close());
  const page = await browser.newPage();
  await page.setViewport({ width: 560, height: 520 });
  const requests = [];
  const responses = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  page.on('response', (r) => responses.push([new URL(r.url()).pathname, r.status()]));
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  const checks = () => requests.filter((p) => p === '/api/check').length;
  const filterFetches = () => responses.filter(([p]) => p === '/api/filter');

  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForSelector('body[data-ready=true]');
  assert.deepEqual(filterFetches(), [['/api/filter', 200]]);

  async function ask(name) {
    await page.$eval('#username', (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event('input'));
    }, name);
    await page.waitForFunction(
      (v) => {
        const s = document.getElementById('status');
        return s.dataset.name === v && s.dataset.state !== 'checking';
      }, {}, name);
    return page.$eval('#status', (s) => ({ state: s.dataset.state, source: s.dataset.source, text: s.textContent }));
  }

  // Definitely free: the filter alone, no request at all.
  const before = requests.length;
  let r = await ask(freeName);
  assert.deepEqual([r.state, r.source], ['free', 'filter'], JSON.stringify(r));
  assert.equal(requests.length, before, 'a definitely-free name made a request');

  // Taken: "maybe" from the filter, "taken" from the server.
  r = await ask('alice');
  assert.deepEqual([r.state, r.source], ['taken', 'server']);
  assert.equal(checks(), 1);

  // False positive: "maybe" from the filter, the server says free.
  r = await ask(fpName);
  assert.deepEqual([r.state, r.source], ['free', 'server']);
  assert.equal(checks(), 2);

  // Another definitely-free name: still no request.
  r = await ask(newName);
  assert.deepEqual([r.state, r.source], ['free', 'filter']);
  assert.equal(checks(), 2);

  if (process.env.SCREENSHOT) {
    await ask('alice');
    await page.type('#password', 'correct horse');
    await page.screenshot({ path: resolve(process.env.SCREENSHOT) });
    await ask(newName);
  }

  // Sign up newName: the version changes, the page refetches the filter once...
  await page.click('#submit');
  await page.waitForFunction((v) => document.body.dataset.filterVersion === '"1"' && document.getElementById('status').dataset.name === v
    && document.getElementById('status').dataset.state === 'taken', {}, newName);
  assert.deepEqual(filterFetches().map(([, s]) => s), [200, 200]);
  r = await page.$eval('#status', (s) => ({ state: s.dataset.state, source: s.dataset.source }));
  assert.deepEqual(r, { state: 'taken', source: 'server' });
  // ...and a revalidation of an unchanged filter is a 304 with no body.
  await page.evaluate(() => window.signupPage.loadFilter());
  assert.deepEqual(filterFetches().map(([, s]) => s), [200, 200, 304]);

  // The blocklist: both sizes shown are the files', the Ribbon filter the smaller.
  const sizes = await page.$eval('#blockstats', (s) => [Number(s.dataset.ribbonBytes), Number(s.dataset.bloomBytes), s.textContent]);
  assert.deepEqual(sizes.slice(0, 2), [statSync(files.ribbon).size, statSync(files.bloom).size]);
  assert.ok(sizes[0] < 0.8 * sizes[1], `Ribbon ${sizes[0]} bytes, Bloom ${sizes[1]}`);
  assert.match(sizes[2], /1,000,000 entries at 1 %.*Ribbon filter of [\d.]+ KiB.*Bloom filter of the same list and rate: [\d.]+ KiB/);
  async function typePassword(pw) {
    await page.$eval('#password', (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event('input'));
    }, pw);
    await page.waitForFunction((v) => document.getElementById('pwstatus').dataset.value === v, {}, pw);
    return page.$eval('#pwstatus', (s) => s.dataset.state);
  }
  const strangers = Array.from({ length: 20000 }, (_, i) => `stranger-${i}`);
  const okPassword = strangers.find((p) => !ribbon.has(p));
  const before2 = requests.length;
  assert.equal(await typePassword('password123'), 'blocked');
  assert.equal(await typePassword(okPassword), 'ok');
  assert.equal(requests.length, before2, 'a password check made a request');
  // 20 000 entries and 20 000 strangers: the browser answers as the checker in Node.
  const members = Array.from({ length: 20000 }, (_, i) => entry((i * 49999) % ENTRIES));
  const inBrowser = await page.evaluate((items) => items.map((x) => window.signupPage.blocklist.has(x)), [...members, ...strangers]);
  assert.deepEqual(inBrowser.slice(0, members.length), members.map(() => true));
  assert.deepEqual(inBrowser.slice(members.length), strangers.map((x) => ribbon.has(x)));

  assert.deepEqual(pageErrors, []);
  console.log(`ok: free "${freeName}" with no request, "alice" taken, false positive "${fpName}" free after 1 check, sign-up refetch + 304; `
    + `blocklist of ${ENTRIES} as a Ribbon filter of ${sizes[0]} bytes (Bloom ${sizes[1]}), 40000 answers as in Node`);
}

try {
  await main();
} finally {
  for (const f of cleanups) await f();
}
