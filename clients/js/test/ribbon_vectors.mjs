// The Ribbon filter vectors of the Rust core (core/examples/ribbon_vectors.rs), written once per
// process into a temporary folder (or read from RIBBON_VECTORS when it names one), for
// ribbon.test.mjs and the web example's test.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Runs the core's example (built by cargo if needed) with `args`; returns its output. */
export function runCoreExample(args) {
  return execFileSync('cargo', ['run', '--release', '-q', '-p', 'redis-bf-core', '--example', 'ribbon_vectors', '--', ...args],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** `[iterator, bytes]` pairs from frames of an f64 LE iterator, a u32 LE length and the bytes. */
export function readFrames(file) {
  const buf = readFileSync(file);
  const pairs = [];
  let p = 0;
  while (p < buf.length) {
    const len = buf.readUInt32LE(p + 8);
    pairs.push([buf.readDoubleLE(p), buf.subarray(p + 12, p + 12 + len)]);
    p += 12 + len;
  }
  return pairs;
}

let made = null;

/**
 * The vectors: `{ shapes }`, each shape its manifest entry with `pairs` (the RF.SCANDUMP
 * walk), `asked` (the items asked, strings, members first) and `answers` (the core's, one bit an item).
 */
export function ribbonVectors() {
  if (made) return made;
  let dir = process.env.RIBBON_VECTORS;
  if (!dir || !existsSync(join(dir, 'manifest.json'))) {
    dir = mkdtempSync(join(tmpdir(), 'ribbon-vectors-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    runCoreExample([dir]);
  }
  const { shapes } = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  for (const s of shapes) {
    s.pairs = readFrames(join(dir, `${s.name}.walk`));
    s.asked = readFileSync(join(dir, `${s.name}.items`), 'latin1').split('\n').slice(0, -1);
    s.answers = readFileSync(join(dir, `${s.name}.answers`));
  }
  made = { shapes };
  return made;
}
