/**
 * Where a payment sync's time goes, outside `npm run bench`: the bench's own scenario (bench/sync.ts),
 * one connection's payment objects synced in full at 0 ms, then reconciled at 0 ms and (with
 * `latency`) at 300 ms ± 100 ms. Prints per run the seconds, platform calls, the CPU this process
 * the simulators' process and dynalite used, the records written per second per object, and at 300 ms the
 * requests started / in flight per quarter second. Run it under the CPU profiler to see functions:
 *
 *   NO_PAGE_RECORDS=1 node_modules/.bin/node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/sync-profile.ts latency
 *
 * Each run prints a `mark <name> <µs>` line on the profile's clock, to cut the profile by run.
 * NO_PAGE_RECORDS=1 leaves out reading a copy of every answer (for the part-filled pages' count),
 * which would otherwise take its own share of this process's CPU.
 *
 * `npx tsx bench/sync-profile.ts faulty 5` runs only the bench's faulty scenario (sync.faulty.*), 5 times.
 * `npx tsx bench/sync-profile.ts four [N]` runs the four-object payment connection (sync.latency300.payment4.*):
 * its full sync at 300 ms, then its reconcile 1 + N times (N = 1 by default), with the rate fractions' median.
 * `npx tsx bench/sync-profile.ts first 3` runs the payment first sync at 300 ms three times, on fresh accounts.
 * `npx tsx bench/sync-profile.ts first5` runs the bench's five-object first sync (sync.latency300.first5.*)
 * once and prints the cores this process, the simulators and dynalite kept busy in each second of it.
 * Environment: PER_OBJECT=1 prints each endpoint's first 40 request times; RESERVATIONS=1 how long
 * each rate reservation (an UpdateItem on the table) took in a run's first second (four only);
 * MEMORY_BUCKETS=1 keeps the rate buckets in this process instead of the table (every job runs in
 * this one process, so they are still shared), to tell the budget's waits on the local store apart.
 * `npx tsx bench/sync-profile.ts bench-order` runs the bench's order at 300 ms: both full syncs, then the
 * payment reconcile twice, with each payment run's requests per quarter second and its requests
 * beyond one per 100 records by cause (`wasteByCause`).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { forgetRateBudgets, MemoryRateBuckets } from '../shared/http/rate-budget';
import { setLogSink } from '../shared/log/logger';
import { setMetricSink } from '../shared/metrics/gateway-metrics';
import * as store from '../shared/store/store';
import { writeUnits } from '../shared/sync/page-slices';
import { replaceOn, type StoreReplacements } from '../test/support/store-seam';
import type { Figures } from './results-file';
import { firstFiveRun } from './sync-first5';
import { faultyRun, measured, PAYMENT_FOUR_OBJECTS, PAYMENT_FOUR_PER_SECOND, scenario, syncObjects } from './sync';

setLogSink(() => {});
// Metric documents would fill the profile's output; the figures it prints are its own.
setMetricSink(() => {});
/** CPU milliseconds a process used so far (utime + stime, in clock ticks of 10 ms). */
const cpuMs = (pid: string | number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
/** This process's children now, by pid, named by what they run. */
const childProcesses = () =>
  readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map((pid) => {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return { pid, name: command.includes('dynalite') ? 'dynalite' : command.includes('sync-simulators') ? 'simulators' : 'other' };
  });
if (process.argv[2] === 'first5') {
  // `first5`: the bench's first sync (sync.latency300.first5.*) once, with the cores each process kept
  // busy in every second of it: this one (the gateway and its local queue), the simulators, dynalite.
  const busy: Array<{ at: number; byName: Record<string, number> }> = [];
  const started = performance.now();
  const timer = setInterval(() => {
    const byName: Record<string, number> = { gateway: cpuMs(process.pid) };
    for (const child of childProcesses()) byName[child.name] = (byName[child.name] ?? 0) + cpuMs(child.pid);
    busy.push({ at: performance.now(), byName });
  }, 1000);
  const figures: Figures = {};
  await firstFiveRun(figures, { sdk: false });
  clearInterval(timer);
  process.stdout.write(`first5: ${figures['sync.latency300.first5.seconds']} s, rate_fraction ${figures['sync.latency300.first5.rate_fraction']}; cores busy each second (a process that started or ended within it shows less):\n`);
  for (let i = 1; i < busy.length; i += 1) {
    const [before, after] = [busy[i - 1]!, busy[i]!];
    const cores = Object.keys(after.byName).filter((name) => name in before.byName).map((name) => [name, (after.byName[name]! - before.byName[name]!) / (after.at - before.at)] as const);
    const total = cores.reduce((sum, [, n]) => sum + n, 0);
    process.stdout.write(`  ${((after.at - started) / 1000).toFixed(0)} s: ${total.toFixed(2)} (${cores.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(', ')})\n`);
  }
  process.exit(0);
}
if (process.argv[2] === 'faulty') {
  // `faulty N`: only the bench's faulty run (sync.faulty.*), N times in one scenario, each on a fresh account.
  const s = await scenario();
  forgetRateBudgets();
  for (let run = 1; run <= Number(process.argv[3] ?? 1); run += 1) {
    const figures: Figures = {};
    await faultyRun(s, figures, `faulty${run}`);
    process.stdout.write(`faulty run ${run}: ${JSON.stringify(figures)}; load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
  }
  await s.stop();
  process.exit(0);
}
const withLatency = process.argv[2] === 'latency';
/** `full-latency`: the first full sync at 300 ms too (what bench/sync.ts counts as sync.latency300.full.calls). */
const fullAtLatency = process.argv[2] === 'full-latency';
const s = await scenario();
forgetRateBudgets();
await s.connect('profiled');

const children = childProcesses().map((child) => child.pid);
const simulators = String(s.platforms.pid);
const cpuNow = () => ({ own: cpuMs(process.pid), simulators: cpuMs(simulators), children: children.filter((pid) => pid !== simulators).map(cpuMs).reduce((a, b) => a + b, 0) });
let cpuBefore = cpuNow();
/** Monotonic microseconds, the clock --cpu-prof stamps samples with: to cut a profile by run. */
const mark = (name: string) => process.stdout.write(`mark ${name} ${process.hrtime.bigint() / 1000n}\n`);
const report = (name: string, run: { seconds: number; calls: number; http429: number; maxInFlight: number }) => {
  const after = cpuNow();
  process.stdout.write(`${name}: ${run.seconds.toFixed(2)} s, ${run.calls} calls, ${run.http429} answered 429, ${run.maxInFlight} most in flight; CPU ms here ${after.own - cpuBefore.own}, simulators ${after.simulators - cpuBefore.simulators}, dynalite ${after.children - cpuBefore.children}; pages compared through the store (BatchGetItem) ${storeComparisons}\n`);
  cpuBefore = after;
  storeComparisons = 0;
};

// Every platform call's start and end (the client takes the global fetch when it is made).
const calls: Array<{ start: number; end: number; url: string; records?: number; hasMore?: boolean; ids?: string[] }> = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const start = performance.now();
  let records: number | undefined;
  let hasMore: boolean | undefined;
  let ids: string[] | undefined;
  try {
    const response = await realFetch(input, init);
    // Records a list answer carried: part-filled pages are the requests slices waste. Reading a
    // clone of every answer costs this process about half a millisecond a page: NO_PAGE_RECORDS=1
    // leaves it out, for a CPU profile of the gateway's own work.
    if (process.env.NO_PAGE_RECORDS) return response;
    const body = (await response
      .clone()
      .json()
      .catch(() => undefined)) as { data?: Array<{ id?: unknown }>; has_more?: unknown } | undefined;
    records = body?.data?.length;
    if (typeof body?.has_more === 'boolean') hasMore = body.has_more;
    ids = body?.data?.flatMap((item) => (typeof item.id === 'string' ? [item.id] : []));
    return response;
  } finally {
    calls.push({ start, end: performance.now(), url: String(input), ...(records === undefined ? {} : { records }), ...(hasMore === undefined ? {} : { hasMore }), ...(ids ? { ids } : {}) });
  }
}) as typeof fetch;
const timeline = (from: number, ended: number) => {
  const own = calls.filter((call) => call.start >= from && call.url.includes('/v1/'));
  const first = Math.min(...own.map((call) => call.start));
  const last = Math.max(...own.map((call) => call.end));
  const quarters: string[] = [];
  for (let t = first; t < last; t += 250) {
    const started = own.filter((call) => call.start >= t && call.start < t + 250).length;
    const flying = own.filter((call) => call.start <= t + 125 && call.end > t + 125).length;
    quarters.push(`${((t - first) / 1000).toFixed(2)}:${started}/${flying}`);
  }
  process.stdout.write(`started/in flight per 250 ms: ${quarters.join(' ')}\n`);
  if (process.env.PER_OBJECT) {
    for (const object of new Set(own.map((call) => new URL(call.url).pathname))) {
      const mine = own.filter((call) => new URL(call.url).pathname === object).sort((a, b) => a.start - b.start);
      const starts = mine.slice(0, 40).map((call) => (call.start - first).toFixed(0)).join(' ');
      process.stdout.write(`  ${object}: first starts (ms) ${starts}\n`);
    }
  }
  const part = own.filter((call) => call.records !== undefined && call.records < 100);
  process.stdout.write(`part-filled pages: ${part.length} (${part.map((call) => call.records).join(' ')})\n`);
  // SHOW_EMPTY=1 lists the empty pages' requests; SHOW_EMPTY=part lists every part-filled one.
  const shown = process.env.SHOW_EMPTY === 'part' ? part : part.filter((c) => c.records === 0);
  if (process.env.SHOW_EMPTY) for (const call of shown) process.stdout.write(`  ${call.records} at ${(call.start - from).toFixed(0)} ms: ${decodeURIComponent(call.url.replace(/^https?:\/\/[^/]+/, ''))}\n`);
  process.stdout.write(`first call ${(first - from).toFixed(0)} ms after the run began; last answer at ${(last - from).toFixed(0)} ms; run ended at ${(ended - from).toFixed(0)} ms\n`);
  wasteByCause(own);
};

/**
 * The requests a listing made beyond one per 100 distinct records, by cause (in requests: records
 * short of full pages / 100). A slice's answers are full until its last (has_more false), so every
 * part-filled answer ends a slice: the open-ended bottom slice (where records end, unavoidable:
 * a single listing ends there too), empty answers (a piece past the far end, or a slice whose
 * records are gone), other slice ends; and records listed twice (a boundary second two slices list).
 */
const wasteByCause = (own: typeof calls) => {
  const lists = own.filter((call) => call.records !== undefined && !call.url.includes('/v1/events'));
  if (lists.length === 0 || lists.some((call) => call.ids === undefined)) return;
  const short = (call: (typeof lists)[number]) => (100 - call.records!) / 100;
  const ends = lists.filter((call) => call.hasMore === false);
  const openBottom = ends.filter((call) => call.records! > 0 && !decodeURIComponent(call.url).includes('created[gte]'));
  const empty = ends.filter((call) => call.records === 0);
  const otherEnds = ends.filter((call) => call.records! > 0 && !openBottom.includes(call));
  const midPart = lists.filter((call) => call.hasMore !== false && call.records! < 100);
  const seen = new Map<string, number>();
  for (const call of lists) for (const id of call.ids!) seen.set(id, (seen.get(id) ?? 0) + 1);
  const twice = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
  const sum = (part: typeof lists) => part.reduce((total, call) => total + short(call), 0);
  const perObject = new Map<string, number>();
  for (const call of lists) {
    const object = new URL(call.url).pathname;
    perObject.set(object, (perObject.get(object) ?? 0) + 1);
  }
  const endsOf = (object: string) => ends.filter((call) => new URL(call.url).pathname === object).map((call) => call.records).join(' ');
  const objects = [...perObject].map(([object, n]) => `${object} ${n} (slice ends ${endsOf(object)})`).join(', ');
  process.stdout.write(
    `waste by cause (requests beyond one per 100 of ${seen.size} records; ${lists.length} list requests: ${objects}): ` +
      `total ${(lists.length - seen.size / 100).toFixed(2)} = open bottom slices' last pages ${sum(openBottom).toFixed(2)} (${openBottom.length}) + ` +
      `empty answers ${empty.length} + other slices' last pages ${sum(otherEnds).toFixed(2)} (${otherEnds.length} slices, records in them ${otherEnds.map((call) => call.records).join(' ')}) + ` +
      `part-filled answers mid-slice ${sum(midPart).toFixed(2)} (${midPart.length}) + records listed twice ${twice} (${(twice / 100).toFixed(2)})\n`,
  );
};

// Record writes as they leave for the store, per data object (the store's calls through its seam, bench/store-seam.ts).
const batches: Array<{ at: number; object: string; records: number; units: number }> = [];
const replaced: StoreReplacements = {};
replaceOn(s.local.gateway.table, replaced);
// Pages compared with one BatchGetItem each.
let storeComparisons = 0;
replaced.getStoredVersions = (beneath, ...args) => {
  storeComparisons += 1;
  return store.getStoredVersions(beneath, ...args);
};
replaced.putRecordsBatch = (async (beneath, ...args) => {
  batches.push({ at: performance.now(), object: args[0].object, records: args[1].length, units: args[1].reduce((sum, record) => sum + writeUnits(record), 0) });
  return store.putRecordsBatch(beneath, ...args);
}) as typeof store.putRecordsBatch;

// MEMORY_BUCKETS=1: rate budgets kept in this process instead of the table (one process runs every
// job here, so they are still shared): what the runs do when reservations never wait on the local store.
if (process.env.MEMORY_BUCKETS) {
  const memory = new MemoryRateBuckets();
  replaced.reserveRate = (_table, ...args) => memory.reserveRate(...args);
  replaced.slowRate = (_table, ...args) => memory.slowRate(...args);
}
// RESERVATIONS=1: how long each rate reservation (one UpdateItem) took, by when it was made.
const reservations: Array<{ at: number; ms: number; key: string; span: number }> = [];
if (process.env.RESERVATIONS) {
  replaced.reserveRate = async (beneath, ...args) => {
    const at = performance.now();
    try {
      return await store.reserveRate(beneath, ...args);
    } finally {
      reservations.push({ at, ms: performance.now() - at, key: args[0], span: args[1] });
    }
  };
}
const showReservations = (from: number) => {
  const early = reservations.filter((r) => r.at >= from && r.at < from + 1000);
  if (process.env.RESERVATIONS) process.stdout.write(`reservations in the first second: ${early.map((r) => `${(r.at - from).toFixed(0)}+${r.ms.toFixed(0)}ms ${r.key.split('|')[1] ?? 'conn'} ${r.span.toFixed(0)}`).join(', ')}\n`);
};
if (process.argv[2] === 'four') {
  // The bench's four-object payment connection (sync.latency300.payment4.*): its full sync at 300 ms, then the reconcile twice.
  await s.connectPaymentFour('four');
  await s.platforms.setLatency({ ms: 300, jitterMs: 100 });
  report('full sync of four objects at 300 ms', await measured(s, 'payment', () => syncObjects(s, 'four', 'payment', {}, false, PAYMENT_FOUR_OBJECTS), PAYMENT_FOUR_PER_SECOND));
  const repeats = Number(process.argv[3] ?? 1);
  const names = ['first reconcile at 300 ms', ...Array.from({ length: repeats }, (_, n) => `repeat ${n + 1}`)];
  const fractions: number[] = [];
  for (const name of names) {
    const from = performance.now();
    const run = await measured(s, 'payment', () => syncObjects(s, 'four', 'payment', {}, true, PAYMENT_FOUR_OBJECTS), PAYMENT_FOUR_PER_SECOND);
    fractions.push(run.rateFraction);
    report(`${name} (rate fraction ${run.rateFraction.toFixed(2)}, sustained ${run.sustainedFraction.toFixed(2)})`, run);
    timeline(from, performance.now());
    showReservations(from);
  }
  const sorted = [...fractions].sort((a, b) => a - b);
  process.stdout.write(`rate fractions ${fractions.map((f) => f.toFixed(2)).join(' ')}; median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)}\n`);
  await s.stop();
  process.exit(0);
}
if (process.argv[2] === 'first') {
  // `first N`: the payment first sync at 300 ms, N times, each on a fresh account (its waste by cause each time).
  await s.platforms.setLatency({ ms: 300, jitterMs: 100 });
  for (let run = 1; run <= Number(process.argv[3] ?? 3); run += 1) {
    const account = `first${run}`;
    await s.connect(account);
    const from = performance.now();
    // FIRST_MAX_SLICES=1: each object listed as one slice (no part-filled pages but its last).
    const options = process.env.FIRST_MAX_SLICES ? { maxSlices: Number(process.env.FIRST_MAX_SLICES) } : {};
    report(`first sync ${run} of payment at 300 ms`, await measured(s, 'payment', () => syncObjects(s, account, 'payment', options)));
    timeline(from, performance.now());
  }
  await s.stop();
  process.exit(0);
}
if (process.argv[2] === 'bench-order') {
  // The bench's order at 300 ms (bench/sync.ts runAt): both connectors' full syncs, then the payment
  // reconcile it reports as sync.latency300.payment.*, then the same reconcile again (its repeats).
  await s.platforms.setLatency({ ms: 300, jitterMs: 100 });
  for (const connector of ['payment', 'billing'] as const) {
    const from = performance.now();
    report(`full sync of ${connector} at 300 ms`, await measured(s, connector, () => syncObjects(s, 'profiled', connector)));
    if (connector === 'payment') timeline(from, performance.now());
  }
  for (const name of ['first reconcile at 300 ms', 'its repeat']) {
    const from = performance.now();
    const run = await measured(s, 'payment', () => syncObjects(s, 'profiled', 'payment', {}, true));
    report(`${name} (rate fraction ${run.rateFraction.toFixed(2)}, sustained ${run.sustainedFraction.toFixed(2)})`, run);
    timeline(from, performance.now());
    showReservations(from);
  }
  await s.stop();
  process.exit(0);
}
if (fullAtLatency) await s.platforms.setLatency({ ms: 300, jitterMs: 100 });
const fullFrom = performance.now();
mark('full');
report(`full sync at ${fullAtLatency ? 300 : 0} ms`, await measured(s, 'payment', () => syncObjects(s, 'profiled', 'payment')));
if (fullAtLatency) timeline(fullFrom, performance.now());
for (const object of ['customers', 'subscriptions']) {
  const own = batches.filter((batch) => batch.object === object);
  const perSecond: number[] = [];
  for (const batch of own) {
    const second = Math.floor((batch.at - fullFrom) / 1000);
    perSecond[second] = (perSecond[second] ?? 0) + batch.records;
  }
  const units = own.reduce((sum, batch) => sum + batch.units, 0) / own.reduce((sum, batch) => sum + batch.records, 0);
  process.stdout.write(`  ${object}: ${own.length} batches, ${units.toFixed(2)} write units a record, records written per second ${perSecond.join(' ')}; last sent at ${((own.at(-1)!.at - fullFrom) / 1000).toFixed(2)} s\n`);
}
mark('reconcile');
report('reconcile at 0 ms', await measured(s, 'payment', () => syncObjects(s, 'profiled', 'payment', {}, true)));
if (withLatency) {
  await s.platforms.setLatency({ ms: 300, jitterMs: 100 });
  // The first at 300 ms discovers its slices (the profile kept at 0 ms says the platform answers
  // at once: one slice); the second cuts them at the start from the first one's profile.
  for (const name of ['reconcile300', 'reconcile300planned']) {
    mark(name);
    const from = performance.now();
    const lag = monitorEventLoopDelay({ resolution: 5 });
    lag.enable();
    const run = await measured(s, 'payment', () => syncObjects(s, 'profiled', 'payment', {}, true));
    const ended = performance.now();
    report(name === 'reconcile300' ? 'reconcile at 300 ms' : 'reconcile at 300 ms, slices planned', run);
    lag.disable();
    const ms = (ns: number) => (ns / 1e6).toFixed(0);
    process.stdout.write(`event loop delay: p50 ${ms(lag.percentile(50))} ms, p99 ${ms(lag.percentile(99))} ms, max ${ms(lag.max)} ms\n`);
    timeline(from, ended);
  }
}
mark('end');
await s.stop();
process.exit(0);
