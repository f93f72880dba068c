// Checks per second of BloomFilter.has for 16-byte items on a 1e6-item filter
// (BF.RESERVE bench 0.01 1000000, 1 000 000 items added on a real server, then downloaded with
// BF.SCANDUMP): half the probes members, half strangers. Prints the median of 7 rounds, both per
// wall-clock second and per CPU second of this process (the figure that does not depend on how
// loaded a shared machine is).
//   node clients/js/test/bench.mjs            (needs target/release/libredis_bf.so)
import { gzipSync } from 'node:zlib';
import { loadavg } from 'node:os';
import { BloomFilter } from '../src/index.js';
import { startServer, scandump } from './redis.mjs';

const N = 1_000_000;
const server = await startServer();
try {
  const c = server.client;
  await c.call('BF.RESERVE', 'bench', '0.01', N);
  const item = (i) => `user:${String(i).padStart(11, '0')}`; // 16 bytes
  for (let i = 0; i < N; i += 10_000) {
    await c.call('BF.MADD', 'bench', ...Array.from({ length: 10_000 }, (_, j) => item(i + j)));
  }
  const chunks = await scandump(c, 'bench');
  const wire = chunks.reduce((s, [, d]) => s + d.length, 0);
  const gz = gzipSync(Buffer.concat(chunks.map(([, d]) => d))).length;
  const t0 = performance.now();
  const f = BloomFilter.fromScandump(chunks);
  const load = performance.now() - t0;
  const probes = Array.from({ length: 1_000_000 }, (_, i) => (i % 2 ? item(i) : `nope:${String(i).padStart(11, '0')}`));
  const rates = [];
  const cpuRates = [];
  let hits = 0;
  for (let round = 0; round < 7; round++) {
    hits = 0;
    const t = performance.now();
    const cpu = process.cpuUsage();
    for (const p of probes) if (f.has(p)) hits++;
    const used = process.cpuUsage(cpu);
    rates.push(probes.length / ((performance.now() - t) / 1000));
    cpuRates.push(probes.length / ((used.user + used.system) / 1e6));
  }
  rates.sort((a, b) => a - b);
  cpuRates.sort((a, b) => a - b);
  console.log(`filter: ${f.layerCount} layer(s), ${f.byteLength} bytes of bits; SCANDUMP ${chunks.length} chunks, ${wire} bytes (gzip ${gz})`);
  console.log(`fromScandump: ${load.toFixed(1)} ms; hits ${hits} of ${probes.length}`);
  console.log(`has(): median ${(rates[3] / 1e6).toFixed(2)} M checks/s (min ${(rates[0] / 1e6).toFixed(2)}, max ${(rates[6] / 1e6).toFixed(2)}); per CPU second: median ${(cpuRates[3] / 1e6).toFixed(2)} M checks/s`);
  console.log(`load average: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
} finally {
  server.stop();
}
