import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { log } from '../../shared/log/logger';
import type { WebhookEventMessage } from '../../shared/queues/messages';
import { applyWebhookEvent } from '../../shared/webhooks/apply';
import { startWebhookWorld, type WebhookWorld } from './support';
import { recordsAt } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * Two payment events for one record in the same second, applied side by side (the worker runs a
 * batch concurrently): the second writer must not take the first's write for "older" and drop its
 * change; the platform is asked for the current record instead.
 */
describe('same-second events applied side by side', () => {
  let world: WebhookWorld;
  beforeAll(async () => {
    world = await startWebhookWorld();
    await world.connectPayment('acme', { method: 'webhooks' });
  });
  afterAll(() => world.stop());

  it('end with the platform’s latest state', async () => {
    const gateway = world.gateway.runtime.local.gateway;
    const { record: customer } = world.payment.createCustomer({ name: 'Tie 0' });
    world.payment.advance(5_000);
    world.payment.setNow(world.payment.now());
    const first = world.payment.update('customers', customer.id, { name: 'Tie 1' }).events[0]!;
    const second = world.payment.update('customers', customer.id, { name: 'Tie 2' }).events[0]!;
    world.payment.clock.resume();
    expect(first.created).toBe(second.created);
    const message = (event: typeof first): WebhookEventMessage => ({
      accountId: 'acme',
      connector: 'payment',
      eventId: event.id,
      eventType: event.type,
      receivedAt: new Date().toISOString(),
      payload: event as unknown as Record<string, unknown>,
    });
    await Promise.all([applyWebhookEvent(gateway, message(first), log), applyWebhookEvent(gateway, message(second), log)]);
    expect((await store.getRecord(gateway.table, recordsAt('acme', 'payment', 'customers'), customer.id))?.body.name).toBe('Tie 2');
  });
});
