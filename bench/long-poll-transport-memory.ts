/**
 * What one held TLS long-poll costs a process through fetch (undici, what the poller uses) and
 * through node:https, side by side: a TLS server in a child process holds every request open; this
 * process opens 250, 500, 750 and 1,000 of them and, after each step, reads RSS and heap after a
 * full GC (the median of 3). The figure is the least-squares slope per connection. Not part of
 * `npm run bench`; run it to check whether another HTTP stack would let a 128 MB poller hold more:
 *
 *   node --expose-gc --max-semi-space-size=1 --import tsx bench/long-poll-transport-memory.ts fetch
 *   node --expose-gc --max-semi-space-size=1 --import tsx bench/long-poll-transport-memory.ts https
 */
import { execFileSync, spawn } from 'node:child_process';
import https from 'node:https';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { median, slope } from './statistics';

const MB = 1024 * 1024;
const mode = process.argv[2] === 'https' ? 'https' : 'fetch';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// A throwaway certificate for 127.0.0.1, made at run time.
const dir = mkdtempSync(join(tmpdir(), 'long-poll-memory-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
const serverSource = `
  const https = require('node:https'); const fs = require('node:fs');
  const server = https.createServer({ key: fs.readFileSync(${JSON.stringify(join(dir, 'key.pem'))}), cert: fs.readFileSync(${JSON.stringify(join(dir, 'cert.pem'))}) }, (req, res) => setTimeout(() => { res.writeHead(204); res.end(); }, 300000));
  server.keepAliveTimeout = 600000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));`;
const server = spawn(process.execPath, ['-e', serverSource], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise<number>((resolve) => server.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))));
const ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
setDefaultCACertificates([...getCACertificates('default'), ca]);

const agent = new https.Agent({ keepAlive: true, maxSockets: Infinity });
const open = () => {
  if (mode === 'fetch') {
    fetch(`https://127.0.0.1:${port}/poll`).then((response) => response.text(), () => undefined);
    return;
  }
  const request = https.request({ host: '127.0.0.1', port, path: '/poll', agent, ca }, (response) => response.resume());
  request.on('error', () => undefined);
  request.end();
};
const settled = async () => {
  const samples: Array<{ rss: number; heap: number }> = [];
  for (let sample = 0; sample < 3; sample++) {
    for (let i = 0; i < 3; i++) {
      gc();
      await sleep(150);
    }
    const { rss, heapUsed } = process.memoryUsage();
    samples.push({ rss, heap: heapUsed });
  }
  return { rss: median(samples.map((s) => s.rss)), heap: median(samples.map((s) => s.heap)) };
};

open(); // the HTTP stack loads with the first request: paid once
await sleep(500);
const floor = await settled();
const points: Array<{ held: number; rss: number; heap: number }> = [];
let held = 1;
for (const target of [251, 501, 751, 1001]) {
  while (held < target) {
    open();
    held++;
    if (held % 50 === 0) await sleep(100);
  }
  await sleep(2000);
  points.push({ held, ...(await settled()) });
}
const perConnectionKb = (of: 'rss' | 'heap') => (slope(points.map((p) => ({ x: p.held, y: p[of] }))) / 1024).toFixed(1);
process.stdout.write(`${mode}: floor ${(floor.rss / MB).toFixed(1)} MB; per held connection RSS ${perConnectionKb('rss')} KB, heap ${perConnectionKb('heap')} KB\n`);
server.kill();
process.exit(0);
