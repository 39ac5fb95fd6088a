import { describe, expect, it } from 'vitest';
import { billingWebhooks } from '../../shared/billing/webhook-endpoint';
import { PUBLISHED as billingPublished } from '../../shared/billing/webhook';
import { paymentWebhooks } from '../../shared/payment/webhook-endpoint';
import { PUBLISHED as paymentPublished } from '../../shared/payment/webhook';

/**
 * The events a connector asks the user to select on the platform (`subscribeTo`: docs/webhooks.md,
 * the connector's page, GET .../webhooks) must include every platform event that publishes a
 * playbook event: an event the platform is never asked for publishes nothing, whatever the mapping says.
 */
describe('the webhook events a user is asked to select', () => {
  it.each([
    ['payment', paymentWebhooks.subscribeTo, paymentPublished],
    ['billing', billingWebhooks.subscribeTo, billingPublished],
  ] as const)('%s: every platform event that publishes a playbook event is among them', (_name, subscribeTo, published) => {
    expect(Object.keys(published).filter((type) => !subscribeTo.includes(type))).toEqual([]);
  });
});
