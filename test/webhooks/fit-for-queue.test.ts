import { describe, expect, it } from 'vitest';
import { paymentWebhookReceiver } from '../../shared/payment/webhook-receiver';
import type { WebhookEventMessage } from '../../shared/queues/messages';
import { fitForQueue } from '../../shared/webhooks/receiver';

describe('what a verified event puts on the queue', () => {
  it("drops a payment intent's client_secret, and keeps everything else", () => {
    const clientSecret = `pi_1_secret_${'x'.repeat(24)}`;
    const message: WebhookEventMessage = {
      accountId: 'acme',
      connector: 'payment',
      eventId: 'evt_1',
      eventType: 'payment_intent.succeeded',
      receivedAt: new Date().toISOString(),
      payload: { id: 'evt_1', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1', object: 'payment_intent', amount: 500, client_secret: clientSecret } } },
    };
    const queued = fitForQueue(message, paymentWebhookReceiver);
    expect(JSON.stringify(queued)).not.toContain(clientSecret);
    expect(queued.payload).toEqual({ id: 'evt_1', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1', object: 'payment_intent', amount: 500 } } });
  });
});
