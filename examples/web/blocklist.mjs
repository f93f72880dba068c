// The password blocklist of the sign-up page, built offline: 1 000 000 weak passwords (100 common
// stems, each alone and followed by 1 … 9999), written one a line, then built by the Rust core
// (core/examples/ribbon_vectors.rs --list) into the Ribbon filter the page downloads
// (`ribbon.walk`: the RF.SCANDUMP walk, framed as /api/filter is) and, for comparison, the
// non-scaling Bloom filter of the same list and error rate (`bloom.walk`). The same files are
// what a list pipeline would upload with RF.LOADCHUNK.
//   node examples/web/blocklist.mjs [folder]      (default examples/web/blocklist)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
/** Entries of the list. */
export const ENTRIES = 1_000_000;
/** Error rate of both filters. */
export const ERROR_RATE = 0.01;

const STEMS = `password qwerty letmein dragon monkey sunshine princess football baseball shadow master
  welcome trustno1 iloveyou superman batman starwars whatever freedom hello charlie donald michael
  jennifer jordan hunter ranger buster soccer hockey killer george pepper ginger summer winter
  secret cookie banana orange flower purple maggie thomas robert daniel andrew joshua matthew
  harley zxcvbn asdfgh qazwsx abc123 admin login passw0rd computer internet cheese chocolate
  butterfly tigger mustang corvette yankees lakers dolphin eagles falcon phoenix silver golden
  diamond matrix hannah jessica ashley amanda nicole sophie samsung nintendo pokemon minecraft
  liverpool chelsea arsenal barcelona madrid london paris berlin tokyo sydney toronto dallas
  boston chicago denver`.split(/\s+/).filter(Boolean);
if (STEMS.length !== 100) throw new Error(`${STEMS.length} stems, 100 expected`);

/** Entry i of the list: stem i mod 100, alone or followed by ⌊i / 100⌋. */
export function entry(i) {
  const n = Math.floor(i / STEMS.length);
  return STEMS[i % STEMS.length] + (n === 0 ? '' : String(n));
}

/** Writes the list and both filters into `folder` (unless they are there); returns their paths. */
export function buildBlocklist(folder) {
  const files = { list: join(folder, 'blocklist.txt'), ribbon: join(folder, 'ribbon.walk'), bloom: join(folder, 'bloom.walk') };
  if (existsSync(files.ribbon) && existsSync(files.bloom)) return files;
  mkdirSync(folder, { recursive: true });
  writeFileSync(files.list, Array.from({ length: ENTRIES }, (_, i) => entry(i)).join('\n') + '\n');
  execFileSync('cargo', ['run', '--release', '-q', '-p', 'redis-bf-core', '--example', 'ribbon_vectors', '--',
    '--list', files.list, String(ERROR_RATE), folder], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  return files;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildBlocklist(resolve(process.argv[2] ?? join(HERE, 'blocklist')));
}
