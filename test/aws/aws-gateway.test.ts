import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gateway, provideAwsServices, useGateway, type Gateway } from '../../shared/gateway';
import type { TableClient } from '../../shared/store/table-client';
import type { StateMachines } from '../../shared/workflows/state-machines';

/**
 * The gateway as Lambda builds it from the services a handler provides (shared/gateway.ts): a
 * service is made on its first use, once, and made again after its making failed (a setting missing).
 */
describe('the AWS gateway’s services made on first use', () => {
  const saved = { ...process.env };
  let previous: Gateway | undefined;
  beforeEach(() => {
    Object.assign(process.env, { TABLE_NAME: 'gateway-test', AWS_REGION: 'us-east-1' });
    previous = useGateway(undefined);
  });
  afterEach(() => {
    useGateway(previous);
    process.env = { ...saved };
  });

  const unusedTable: TableClient = { send: () => Promise.reject(new Error('the table is not used here')) };

  it('a service is made on the first call and kept', async () => {
    const started: string[] = [];
    let made = 0;
    const machines: StateMachines = {
      startLifecycle: async (name) => void started.push(`lifecycle ${name}`),
      startFleet: async () => void started.push('fleet'),
      sendTaskSuccess: async () => void started.push('task'),
    };
    provideAwsServices({
      table: () => unusedTable,
      stateMachines: () => {
        made += 1;
        return machines;
      },
    });
    const aws = gateway();
    expect(made).toBe(0);
    await aws.stateMachines.startLifecycle('conv-1', { conversationId: 'conv-1' } as never);
    await aws.stateMachines.startFleet({} as never);
    await aws.stateMachines.sendTaskSuccess('token', {});
    expect(made).toBe(1);
    expect(started).toEqual(['lifecycle conv-1', 'fleet', 'task']);
  });

  it('a service that failed to be made is made again on the next call, not kept failed', async () => {
    let attempts = 0;
    const told: unknown[] = [];
    provideAwsServices({
      table: () => unusedTable,
      pollerNotices: () => {
        attempts += 1;
        if (attempts === 1) throw new Error('POLLER_NOTICE_QUEUE_URL is not set for this function');
        return { tell: async (notice) => void told.push(notice), receive: async () => [] };
      },
    });
    const aws = gateway();
    await expect(aws.pollerNotices.tell({ conversationId: 'c' } as never)).rejects.toThrow('POLLER_NOTICE_QUEUE_URL is not set');
    await aws.pollerNotices.tell({ conversationId: 'c' } as never);
    await aws.pollerNotices.tell({ conversationId: 'd' } as never);
    expect(attempts).toBe(2);
    expect(told).toHaveLength(2);
  });

  it('a function that did not provide a service says so when it is used', async () => {
    provideAwsServices({ table: () => unusedTable, events: undefined });
    await expect(gateway().events.publish([{ type: 'x' } as never])).rejects.toThrow(/EventBridge is not provided to this function/);
  });
});
