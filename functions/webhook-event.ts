import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { withReactions } from '../shared/events/reactions';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { reactionsTo } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { queueFunction } from '../shared/handler/queue-function';
import { traces } from '../shared/handler/traces';
import { WebhookEventMessage } from '../shared/queues/messages';
import type { Connection } from '../shared/store/items';
import { applyWebhookEvent } from '../shared/webhooks/apply';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

// Applied events are published on the gateway's bus for the playbooks. Reactions run as on every
// publishing path (shared/events/reactions.ts), though no connector reacts to payment or billing
// events today: the role holds no queue, and one that did react would be refused (local/iam/).
provideAwsServices({ table: signedTable, vault: signedKmsVault, events: withReactions(eventBridgeEvents, reactionsTo), queues: signedSqsQueues });
checkSettingsAtLoad('webhook-event');

/**
 * Applies verified webhook events (batch of 10, partial batch failures). A failed event is retried
 * by SQS, then dead-lettered (alarmed) for an operator to replay after a fix (`npm run replay-dlq`).
 * Events of one batch run side by side: each is claimed on its own, and record writes are
 * conditional, so their order does not matter. A batch reads each connection once.
 */
export const handler = queueFunction(
  WebhookEventMessage,
  async (message, log, { batch: connections }) => {
    await applyWebhookEvent(gateway(), message, log, { connections });
  },
  { accountOf: (message) => message.accountId, perBatch: () => new Map<string, Promise<Connection | undefined>>(), use: traces() },
);
