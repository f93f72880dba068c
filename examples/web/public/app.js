// The sign-up page: "free" comes from the downloaded filter alone (no request); only a "maybe"
// (the filter says the name may be taken) asks the server, which knows for sure. The password
// is checked against a static blocklist of 1 000 000 weak passwords, downloaded once as a Ribbon
// filter and asked only here: a password typed never leaves the page.
import { BloomFilter, RibbonFilter } from '/redis-bf-check.js';

const input = document.getElementById('username');
const status = document.getElementById('status');
const stats = document.getElementById('stats');
const submit = document.getElementById('submit');
const result = document.getElementById('result');
const password = document.getElementById('password');
const pwstatus = document.getElementById('pwstatus');
const blockstats = document.getElementById('blockstats');

let filter = null;
let blocklist = null;
let version = null; // the ETag of the filter we hold
let serverChecks = 0;

/** The /api/filter body: repeated [f64 LE iterator, u32 LE length, bytes]. */
function decodeFrames(buf) {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const chunks = [];
  for (let p = 0; p < buf.length;) {
    const iter = view.getFloat64(p, true);
    const len = view.getUint32(p + 8, true);
    chunks.push([iter, buf.subarray(p + 12, p + 12 + len)]);
    p += 12 + len;
  }
  return chunks;
}

/** Fetches the filter; the server answers 304 (no body) when our version is current. */
async function loadFilter() {
  const headers = version ? { 'If-None-Match': version } : {};
  const res = await fetch('/api/filter', { headers, cache: 'no-store' });
  if (res.status === 304) return;
  const body = new Uint8Array(await res.arrayBuffer());
  filter = BloomFilter.fromScandump(decodeFrames(body));
  version = res.headers.get('ETag');
  stats.textContent = `filter ${version}: ${filter.size} names, ${(body.length / 1024).toFixed(1)} KiB`;
  document.body.dataset.filterVersion = version;
  check();
}

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;

/**
 * Downloads the blocklist's Ribbon filter and asks only the size of the Bloom filter of the same
 * list and error rate (HEAD), to show both.
 */
async function loadBlocklist() {
  const res = await fetch('/api/blocklist');
  const body = new Uint8Array(await res.arrayBuffer());
  blocklist = RibbonFilter.fromScandump(decodeFrames(body));
  const bloom = Number((await fetch('/api/blocklist.bloom', { method: 'HEAD' })).headers.get('Content-Length'));
  blockstats.dataset.ribbonBytes = String(body.length);
  blockstats.dataset.bloomBytes = String(bloom);
  blockstats.textContent = `password blocklist: ${blocklist.items.toLocaleString('en')} entries at ${blocklist.errorRate * 100} %, `
    + `downloaded as a Ribbon filter of ${kib(body.length)}; the Bloom filter of the same list and rate: `
    + `${kib(bloom)} (${Math.round((1 - body.length / bloom) * 100)} % smaller as a Ribbon filter)`;
  checkPassword();
}

/** The password against the blocklist: in the page only, no request. */
function checkPassword() {
  const pw = password.value;
  const blocked = pw !== '' && blocklist !== null && blocklist.has(pw);
  pwstatus.dataset.state = pw === '' ? '' : blocked ? 'blocked' : 'ok';
  pwstatus.dataset.value = pw;
  pwstatus.textContent = pw === '' ? '' : blocked ? '✗ this password is on a list of weak passwords' : '✓ not on the weak-password list';
}

password.addEventListener('input', checkPassword);

function show(name, state, source, text) {
  status.dataset.state = state;
  status.dataset.source = source;
  status.dataset.name = name;
  status.textContent = text;
  submit.disabled = state !== 'free';
}

let latest = 0;
async function check() {
  const name = input.value;
  const ticket = ++latest;
  if (name === '') return show('', '', '', '');
  if (filter && !filter.has(name)) {
    // Certainly never added: no request.
    return show(name, 'free', 'filter', `✓ “${name}” is free`);
  }
  show(name, 'checking', 'server', 'checking…');
  serverChecks++;
  const res = await fetch(`/api/check?name=${encodeURIComponent(name)}`, { cache: 'no-store' });
  const { taken, version: current } = await res.json();
  if (current !== version) loadFilter(); // the filter changed since we fetched it
  if (ticket !== latest) return; // the user typed on
  show(name, taken ? 'taken' : 'free', 'server', taken ? `✗ “${name}” is taken` : `✓ “${name}” is free`);
}

input.addEventListener('input', check);

document.getElementById('signup').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = input.value;
  const res = await fetch('/api/signup', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (res.status === 201) {
    result.textContent = `Welcome, ${name}!`;
    await loadFilter(); // our own sign-up changed the filter
  } else {
    result.textContent = res.status === 409 ? `“${name}” was just taken` : 'sign-up failed';
  }
  check();
});

// Re-validate when the tab comes back (a 304 costs a few hundred bytes).
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') loadFilter();
});

window.signupPage = { get serverChecks() { return serverChecks; }, loadFilter, get blocklist() { return blocklist; } };
await Promise.all([loadFilter(), loadBlocklist()]);
document.body.dataset.ready = 'true';
