import type { GatewayVariable } from '../config';

/** Every Lambda handler of the gateway: one file each in functions/. */
export const handlerNames = [
  'api',
  'oauth-callback',
  'webhook-receiver',
  'webhook-event',
  'sync-dispatcher',
  'sync-job',
  'ingest',
  'conversation-task',
  'poller-fleet-plan',
  'poller',
] as const;
export type HandlerName = (typeof handlerNames)[number];

const PLATFORM_ADDRESSES = ['PAYMENT_API_BASE_URL', 'BILLING_BASE_URL_TEMPLATE', 'DATA_LOGIN_URL', 'DATA_SANDBOX_LOGIN_URL'] as const;

/**
 * The settings each function's code reads and cannot work without. A function checks them when it
 * loads (a missing queue URL fails the deployment's first invocation with its name, not a sync an
 * hour later), and the stack test checks that the stack sets each of them.
 */
export const functionSettings: Record<HandlerName, readonly GatewayVariable[]> = {
  // Conversations: lifecycles started, the fleet told and started, events published.
  api: [
    'TABLE_NAME',
    'CREDENTIALS_KEY_ID',
    'SYNC_QUEUE_URL',
    'INGESTION_QUEUE_URL',
    'EVENT_BUS_NAME',
    'CONVERSATION_STATE_MACHINE_ARN',
    'POLLER_FLEET_STATE_MACHINE_ARN',
    'POLLER_NOTICE_QUEUE_URL',
    'ORIGIN_SECRET_ARN',
    ...PLATFORM_ADDRESSES,
  ],
  // The HTTP functions check every request's origin header against the secret (shared/origin/).
  'oauth-callback': ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'ORIGIN_SECRET_ARN', ...PLATFORM_ADDRESSES],
  'webhook-receiver': ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'WEBHOOK_QUEUE_URL', 'ORIGIN_SECRET_ARN'],
  // No queue: no connector reacts to the payment and billing events it publishes.
  'webhook-event': ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'EVENT_BUS_NAME', ...PLATFORM_ADDRESSES],
  'sync-dispatcher': ['TABLE_NAME', 'SYNC_QUEUE_URL'],
  // Continuations, retries and purges go back on the sync queue; refused held engagement events to the ingestion queue.
  'sync-job': ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'SYNC_QUEUE_URL', 'INGESTION_QUEUE_URL', ...PLATFORM_ADDRESSES],
  ingest: ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'DATA_LOGIN_URL', 'DATA_SANDBOX_LOGIN_URL'],
  // Conversation steps publish (and reactions may queue engagement events), answer task tokens and start the fleet.
  'conversation-task': ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'EVENT_BUS_NAME', 'INGESTION_QUEUE_URL', 'POLLER_FLEET_STATE_MACHINE_ARN', ...PLATFORM_ADDRESSES],
  'poller-fleet-plan': ['TABLE_NAME'],
  poller: ['TABLE_NAME', 'CREDENTIALS_KEY_ID', 'EVENT_BUS_NAME', 'INGESTION_QUEUE_URL', 'POLLER_FLEET_STATE_MACHINE_ARN', 'POLLER_NOTICE_QUEUE_URL', ...PLATFORM_ADDRESSES],
};
