import * as z from 'zod/mini';
import { ConnectionView } from '../../connections/connection-view';
import { connectors } from '../../connections/registry';
import { saveSyncSettings } from '../../connections/sync-settings';
import { testConnection, TestConnectionResult } from '../../connections/test-connection';
import { jobsFor } from '../../sync/dispatch-syncs';
import { SyncStatus, syncStatusOf } from '../../sync/sync-status';
import { assertAccountAccess } from '../caller';
import { json } from '../http';
import { problems } from '../problem';
import { route } from '../route';
import { anyOf } from './connections';
import { ConnectionParams } from './connection-params';
import * as store from '../../store/store';

const SyncRequest = z
  .strictObject({
    objects: z
      .optional(z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.minLength(1)))
      .check(z.describe('Only these data objects (default: all selected in the settings)')),
    full: z.optional(z.boolean()).check(z.describe('Sync everything again instead of what changed')),
  })
  .register(z.globalRegistry, { id: 'SyncRequest' });

export const syncRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/test',
    operationId: 'testConnection',
    summary: 'Test Connection: one cheap authenticated read; sets the connection’s health',
    params: ConnectionParams,
    response: { status: 200, description: 'The outcome, with the remedy when it failed', schema: TestConnectionResult },
    async handle({ params, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      return testConnection(gateway, params.accountId, connectors.get(params.connector), log);
    },
  }),
  route({
    method: 'PUT',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/sync-settings',
    operationId: 'putSyncSettings',
    summary: 'Choose data objects, frequency, sync method and filters',
    params: ConnectionParams,
    body: z.record(z.string(), z.unknown()),
    get documentedBody() {
      return anyOf(connectors.all().map((connector) => connector.settings));
    },
    response: { status: 200, description: 'The connection with its settings', schema: ConnectionView },
    async handle({ params, body, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      return saveSyncSettings(gateway, params.accountId, params.connector, body, log);
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/syncs',
    operationId: 'listSyncs',
    summary: 'Where each data object’s sync stands: last run, counts, last error',
    params: ConnectionParams,
    response: { status: 200, description: 'One entry per data object that has synced', schema: z.object({ syncs: z.array(SyncStatus) }) },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const checkpoints = await store.listSyncCheckpoints(gateway.table, params.accountId);
      const nowSeconds = Math.floor(gateway.now() / 1000);
      return { syncs: checkpoints.filter((c) => c.connector === params.connector).map((c) => syncStatusOf(c, nowSeconds)) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/syncs',
    operationId: 'startSync',
    summary: 'Sync now, without waiting for the schedule',
    params: ConnectionParams,
    quota: { kind: 'syncs' },
    body: SyncRequest,
    response: { status: 202, description: 'Jobs enqueued', schema: z.object({ enqueued: z.number().check(z.int()) }) },
    async handle({ params, body, caller, gateway, log }) {
      assertAccountAccess(caller, params.accountId);
      const platform = connectors.syncing()[params.connector];
      const connection = await store.getConnection(gateway.table, params.accountId, params.connector);
      if (!platform || !connection) throw problems.notFound(`The ${params.connector} connector is not connected for account ${params.accountId}.`);
      const unknown = (body.objects ?? []).filter((object) => !platform.sync.objects.includes(object));
      if (unknown.length) {
        throw problems.invalidBody([
          { path: 'objects', message: `Unknown data object(s): ${unknown.join(', ')}. Choose from ${platform.sync.objects.join(', ')}.` },
        ]);
      }
      const jobs = jobsFor(connection, platform.settings, 'manual', new Date(gateway.now()).toISOString(), {
        ...(body.full ? { full: true } : {}),
        ...(body.objects ? { objects: body.objects } : {}),
      });
      await gateway.queues.syncJobs.send(jobs);
      log.info('manual sync requested', { jobs: jobs.length, full: body.full ?? false });
      return json(202, { enqueued: jobs.length });
    },
  }),
];
