import { availableParallelism, loadavg } from 'node:os';
import { setLogSink } from '../shared/log/logger';
import { liveConversationCeiling } from '../shared/tenants/quotas';
import { startTestGateway, type TestGateway } from '../test/support/local-runtime';
import type { Figures } from './results-file';
import { percentile } from './statistics';
import * as store from '../shared/store/store';

/** The noisy account's quota, and how much faster it sends (ten times). */
const NOISY_RATE = 5;
const NOISE_FACTOR = 10;
const QUIET_RATE = 10;
const SECONDS = 6;
/** A small fleet for the share run: what every poller together holds. */
const FLEET_CAPACITY = 40;

/**
 * Two tenants side by side on one local gateway (real router, guard and quota buckets in dynalite):
 * a noisy account reading at ten times its quota beside a quiet one. Then the poller fleet's share:
 * the noisy account asks for ten times the fleet's live conversations through the same admission
 * the start route uses (the ceiling, then the conditional slot write), and the quiet one for its share.
 */
export async function benchTenants(): Promise<{ figures: Figures; notes: string[] }> {
  const restore = setLogSink(() => {});
  const gateway = await startTestGateway();
  try {
    const operator = await gateway.operatorToken();
    for (const [accountId, quotas] of [['quiet', {}], ['noisy', { reads: { ratePerSecond: NOISY_RATE, burst: NOISY_RATE } }]] as const) {
      const saved = await gateway.call('PUT', `/api/v1/accounts/${accountId}`, { token: operator, body: { name: accountId, integrationsEnabled: true, quotas } });
      if (saved.status !== 200) throw new Error(`could not create ${accountId}: ${saved.status}`);
    }
    const quietKey = await apiKey(gateway, 'quiet');
    const noisyKey = await apiKey(gateway, 'noisy');

    const alone = await paced(gateway, quietKey, QUIET_RATE, SECONDS);
    const [beside, noise] = await Promise.all([paced(gateway, quietKey, QUIET_RATE, SECONDS), paced(gateway, noisyKey, NOISY_RATE * NOISE_FACTOR, SECONDS)]);
    // What the quota allows over the run: a burst, then the rate (a little slack for the run's edges).
    const allowed = NOISY_RATE + NOISY_RATE * SECONDS;
    const excess = Math.max(1, noise.sent - allowed);

    const share = await fleetShare(gateway);
    const figures: Figures = {
      'tenants.quiet_refused': alone.refused + beside.refused,
      'tenants.quiet_p99_ratio': round(percentile(beside.latencies, 99) / percentile(alone.latencies, 99)),
      'tenants.quiet_p99_alone_ms': round(percentile(alone.latencies, 99)),
      'tenants.quiet_p99_beside_noise_ms': round(percentile(beside.latencies, 99)),
      'tenants.noisy_sent': noise.sent,
      'tenants.noisy_refused': noise.refused,
      'tenants.noisy_excess_refused_fraction': round(Math.min(noise.refused, excess) / excess),
      'tenants.poller_share_max': round(share),
    };
    return {
      figures,
      notes: [
        `Noisy account: quota ${NOISY_RATE} reads/s (burst ${NOISY_RATE}), sending ${NOISY_RATE * NOISE_FACTOR}/s for ${SECONDS} s; quiet account: ${QUIET_RATE} reads/s on the default quota, alone and then beside the noise.`,
        'The read is GET /api/v1/playbook/payments/failed through the local API front (key check, Integrations switch, quota bucket, handler); neither account has a payment connection, so it answers from the store without a platform call.',
        `Fleet share: a fleet holding ${FLEET_CAPACITY} conversations; the noisy account asks for ${FLEET_CAPACITY * NOISE_FACTOR} through the start route's admission (ceiling, then the conditional live-slot write in dynalite), then the quiet one for ${FLEET_CAPACITY / 2}. This measures admission, not the pollers.`,
        `Load average when the run ended: ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores (latencies move with it; the counts do not).`,
      ],
    };
  } finally {
    await gateway.stop();
    setLogSink(restore);
  }
}

async function apiKey(gateway: TestGateway, accountId: string): Promise<string> {
  const created = await gateway.call('POST', `/api/v1/accounts/${accountId}/api-keys`, { token: await gateway.userToken(accountId), body: { name: 'bench' } });
  return ((await created.json()) as { key: string }).key;
}

/** Sends reads at `rate` a second for `seconds`, each on its own schedule (an open loop), and records each answer. */
async function paced(gateway: TestGateway, key: string, rate: number, seconds: number): Promise<{ sent: number; refused: number; latencies: number[] }> {
  const latencies: number[] = [];
  let refused = 0;
  const count = rate * seconds;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const due = started + (i * 1000) / rate;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
      const at = performance.now();
      const response = await gateway.call('GET', '/api/v1/playbook/payments/failed?connector=payment', { token: key });
      await response.arrayBuffer();
      if (response.status === 429) refused += 1;
      else latencies.push(performance.now() - at);
    }),
  );
  return { sent: count, refused, latencies };
}

/** The largest fraction of the fleet the noisy account holds once the quiet one has asked for its share. */
async function fleetShare(gateway: TestGateway): Promise<number> {
  const table = gateway.runtime.local.gateway.table;
  const ceiling = (accountId: string) => store.getAccount(table, accountId).then((account) => liveConversationCeiling(100_000, account?.quotas, FLEET_CAPACITY));
  let noisy = 0;
  // The noisy account asks for ten times the fleet; the first refusal ends its run (every later ask finds the same ceiling).
  for (let i = 0; i < FLEET_CAPACITY * NOISE_FACTOR; i += 1) {
    if (!(await store.reserveLiveSlot(table, 'noisy', await ceiling('noisy')))) break;
    noisy += 1;
  }
  let quiet = 0;
  for (let i = 0; i < FLEET_CAPACITY / 2; i += 1) if (await store.reserveLiveSlot(table, 'quiet', await ceiling('quiet'))) quiet += 1;
  if (quiet < FLEET_CAPACITY / 2) return 1;
  return noisy / FLEET_CAPACITY;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
