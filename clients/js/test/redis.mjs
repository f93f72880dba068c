// Test helpers: start a redis-server with the module on a free 127.0.0.1 port in a temporary
// directory, and a minimal RESP2 client (binary-safe; bulk strings come back as Buffers), so the
// checker's tests need no npm packages at all.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, copyFileSync, existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const MODULE = resolve(process.env.BF_MODULE ?? join(ROOT, 'target', 'release', 'libredis_bf.so'));
const SERVER = process.env.REDIS_SERVER ?? 'redis-server';

/** A free TCP port on 127.0.0.1 (asks the OS for one, then releases it). */
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** A RESP2 connection: `call(...args)` resolves to the reply (errors reject). */
export class Resp {
  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.waiting = [];
    sock.on('data', (d) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      for (;;) {
        const r = parse(this.buf, 0);
        if (r === null) break;
        this.buf = this.buf.subarray(r[1]);
        const w = this.waiting.shift();
        if (r[0] instanceof Error) w.rej(r[0]);
        else w.res(r[0]);
      }
    });
  }
  static connect(port) {
    return new Promise((res, rej) => {
      const s = connect(port, '127.0.0.1', () => res(new Resp(s)));
      s.once('error', rej);
    });
  }
  call(...args) {
    const parts = [Buffer.from(`*${args.length}\r\n`)];
    for (const a of args) {
      const b = Buffer.isBuffer(a) || a instanceof Uint8Array ? Buffer.from(a) : Buffer.from(String(a));
      parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
    }
    return new Promise((res, rej) => {
      this.waiting.push({ res, rej });
      this.sock.write(Buffer.concat(parts));
    });
  }
  close() {
    this.sock.destroy();
  }
}

/** Parses one reply at `pos`: [value, next position] or null when incomplete. */
function parse(buf, pos) {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('latin1', pos + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+': return [line, next];
    case '-': return [new Error(line), next];
    case ':': return [Number(line), next];
    case '$': {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (buf.length < next + n + 2) return null;
      return [buf.subarray(next, next + n), next + n + 2];
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return [null, next];
      const out = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = parse(buf, p);
        if (r === null) return null;
        out.push(r[0]);
        p = r[1];
      }
      return [out, p];
    }
    default: throw new Error(`unexpected RESP type ${type}`);
  }
}

/**
 * Starts redis-server with the module. `rdb`: a dump.rdb to load (copied into the temp dir).
 * Returns { port, client, stop }.
 */
export async function startServer({ rdb } = {}) {
  if (!existsSync(MODULE)) throw new Error(`module not found: ${MODULE} (cargo build --release)`);
  const dir = mkdtempSync(join(tmpdir(), 'redis-bf-check-'));
  if (rdb) copyFileSync(rdb, join(dir, 'dump.rdb'));
  const port = await freePort();
  const proc = spawn(SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--dbfilename', 'dump.rdb', '--save', '', '--appendonly', 'no', '--loadmodule', MODULE],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  let client;
  for (let i = 0; i < 200; i++) {
    try {
      client = await Resp.connect(port);
      await client.call('PING');
      break;
    } catch {
      client?.close();
      client = undefined;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const stop = () => {
    client?.close();
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  if (!client) {
    stop();
    throw new Error('redis-server did not start');
  }
  process.on('exit', stop);
  return { port, client, stop };
}

/**
 * The whole SCANDUMP walk of `key`: [[iterator, Buffer], ...], header first (empty for a
 * cuckoo filter with no items). `command` is 'BF.SCANDUMP' (default) or 'CF.SCANDUMP'.
 */
export async function scandump(client, key, command = 'BF.SCANDUMP') {
  const out = [];
  let iter = 0;
  for (;;) {
    const [next, data] = await client.call(command, key, iter);
    if (next === 0) return out;
    out.push([next, data]);
    iter = next;
  }
}

/** xorshift32 PRNG: deterministic probes. `rng(seed)(n)` is a number in [0, n). */
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return (s >>> 0) % n;
  };
}

/**
 * `count` probes: every fourth a member (when there are members), the rest strangers (ASCII,
 * UTF-8, and raw bytes of 0-40 bytes), the same for the same seed.
 */
export function probes(members, seed, count) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < count; i++) {
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
