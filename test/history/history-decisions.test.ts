import { describe, expect, it } from 'vitest';
import {
  FIRST_AGENT_BUCKETS,
  bucketOf,
  dayOf,
  daySeries,
  deliveryOfClaim,
  firstAgentMessageSeconds,
  hourOf,
  hourSeries,
  lastRefusals,
  medianOfHistogram,
  refusalReasonOf,
  tallyConversationEvents,
} from '../../shared/history/history-decisions';

const problem = (slug: string, status = 400) => ({ type: `urn:integration-gateway:problem:${slug}`, status });
const none = { signature: 0, timestamp: 0, unknown_account: 0, credentials: 0, other: 0 };

describe('history decisions', () => {
  it('buckets moments by UTC hour and day', () => {
    const at = Date.parse('2026-11-27T23:59:59.999Z');
    expect(hourOf(at)).toBe('2026-11-27T23:00:00.000Z');
    expect(dayOf(at)).toBe('2026-11-27');
    expect(dayOf(at + 1)).toBe('2026-11-28');
  });

  it('names each refusal’s reason; a 503 (not queued, retried by the platform) is no refusal', () => {
    expect(refusalReasonOf(problem('webhook-signature'))).toBe('signature');
    expect(refusalReasonOf(problem('webhook-signature-expired'))).toBe('timestamp');
    expect(refusalReasonOf(problem('webhook-unknown-account', 404))).toBe('unknown_account');
    expect(refusalReasonOf(problem('webhook-address'))).toBe('unknown_account');
    expect(refusalReasonOf(problem('webhook-unauthorized', 401))).toBe('credentials');
    expect(refusalReasonOf(problem('unsupported-media-type', 415))).toBe('other');
    expect(refusalReasonOf(problem('webhook-unavailable', 503))).toBeUndefined();
    expect(refusalReasonOf(undefined)).toBeUndefined();
  });

  it('a first claim is a delivery, a finished event a duplicate, a retried attempt nothing', () => {
    expect(deliveryOfClaim({ outcome: 'claimed', attempts: 1 })).toEqual({ verified: 1, duplicates: 0 });
    expect(deliveryOfClaim({ outcome: 'finished' })).toEqual({ verified: 1, duplicates: 1 });
    expect(deliveryOfClaim({ outcome: 'claimed', attempts: 2 })).toBeUndefined();
    expect(deliveryOfClaim({ outcome: 'busy' })).toBeUndefined();
  });

  it('the median of a histogram lies in the middle bucket, interpolated', () => {
    expect(medianOfHistogram([])).toBeUndefined();
    expect(medianOfHistogram(new Array(FIRST_AGENT_BUCKETS.length + 1).fill(0))).toBeUndefined();
    const counts = new Array(FIRST_AGENT_BUCKETS.length + 1).fill(0);
    for (const seconds of [3, 12, 50, 55, 58, 400, 5000]) counts[bucketOf(seconds)] += 1;
    const median = medianOfHistogram(counts)!;
    expect(median).toBeGreaterThanOrEqual(45);
    expect(median).toBeLessThanOrEqual(60);
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(1_000_000)).toBe(FIRST_AGENT_BUCKETS.length);
  });

  it('series have every hour and day, zeros where nothing was stored', () => {
    const now = Date.parse('2026-11-27T22:30:00Z');
    const since = now - 3 * 3_600_000;
    const series = hourSeries(since, now, [{ hour: '2026-11-27T20:00:00.000Z', verified: 4, duplicates: 1, refused: none }]);
    expect(series.map((hour) => [hour.hour.slice(11, 13), hour.verified])).toEqual([['19', 0], ['20', 4], ['21', 0], ['22', 0]]);
    const days = daySeries('2026-11-25', '2026-11-27', [{ day: '2026-11-26', started: 2, handedOff: 1, ended: 1, expired: 0, firstAgentMessages: 1 }]);
    expect(days.map((day) => [day.day, day.started])).toEqual([['2026-11-25', 0], ['2026-11-26', 2], ['2026-11-27', 0]]);
  });

  it('the last refusals come newest first, one per hour and reason, with the hour’s count', () => {
    const refusals = lastRefusals([
      { hour: '2026-11-27T20:00:00.000Z', verified: 0, duplicates: 0, refused: { ...none, signature: 3 }, lastRefusedAt: { signature: '2026-11-27T20:40:00.000Z' } },
      { hour: '2026-11-27T21:00:00.000Z', verified: 0, duplicates: 0, refused: { ...none, timestamp: 1, credentials: 2 }, lastRefusedAt: { timestamp: '2026-11-27T21:05:00.000Z', credentials: '2026-11-27T21:30:00.000Z' } },
    ]);
    expect(refusals).toEqual([
      { at: '2026-11-27T21:30:00.000Z', reason: 'credentials', count: 2 },
      { at: '2026-11-27T21:05:00.000Z', reason: 'timestamp', count: 1 },
      { at: '2026-11-27T20:40:00.000Z', reason: 'signature', count: 3 },
    ]);
  });

  it('tallies lifecycle events per account and day; ended for an expired session counts as expired', () => {
    const event = (type: string, accountId: string, occurredAt: string, data: Record<string, unknown> = {}) => ({ type, accountId, occurredAt, data });
    expect(
      tallyConversationEvents([
        event('conversation.started', 'a', '2026-11-27T10:00:00Z'),
        event('message.received', 'a', '2026-11-27T10:00:01Z'),
        event('conversation.handed_off', 'a', '2026-11-27T10:01:00Z'),
        event('conversation.ended', 'a', '2026-11-27T10:02:00Z', { reason: 'agent' }),
        event('conversation.ended', 'a', '2026-11-28T00:02:00Z', { reason: 'session_expired' }),
        event('conversation.started', 'b', '2026-11-27T10:00:00Z'),
      ]),
    ).toEqual([
      { accountId: 'a', day: '2026-11-27', started: 1, handedOff: 1, ended: 1, expired: 0 },
      { accountId: 'a', day: '2026-11-28', started: 0, handedOff: 0, ended: 0, expired: 1 },
      { accountId: 'b', day: '2026-11-27', started: 1, handedOff: 0, ended: 0, expired: 0 },
    ]);
  });

  it('the first agent message is the first one an agent wrote, not a system event', () => {
    const messages = [
      { sender: 'system', type: 'system', sentAt: '2026-11-27T10:00:05Z' },
      { sender: 'agent', type: 'system', sentAt: '2026-11-27T10:00:06Z' },
      { sender: 'customer', type: 'text', sentAt: '2026-11-27T10:00:07Z' },
      { sender: 'agent', type: 'text', sentAt: '2026-11-27T10:00:30Z' },
    ];
    expect(firstAgentMessageSeconds('2026-11-27T10:00:00Z', messages)).toBe(30);
    expect(firstAgentMessageSeconds('2026-11-27T10:00:00Z', messages.slice(0, 3))).toBeUndefined();
  });
});
