import { readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../lib/app';
import { ALARM_THRESHOLDS } from '../../lib/monitoring';
import { connectors } from '../../shared/connections/registry';
import { functionSettings, handlerNames } from '../../shared/handler/function-settings';
import { gatewayMetrics } from '../../shared/metrics/catalogue';

/** The dashboard of the gateway's health, the alarms beyond the dead-letter ones, and tracing. */
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}
interface MetricStat {
  Metric: { Namespace: string; MetricName: string; Dimensions: Array<{ Name: string; Value: string }> };
  Period: number;
  Stat: string;
}
interface MathAlarm {
  AlarmDescription: string;
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  TreatMissingData: string;
  AlarmActions: unknown[];
  Metrics?: Array<{ Id: string; Expression?: string; MetricStat?: MetricStat; ReturnData?: boolean }>;
}

let resources: Record<string, Resource>;
beforeAll(() => {
  const { stack } = createGatewayApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
});
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const mathAlarms = () => ofType('AWS::CloudWatch::Alarm').map(([id, r]) => ({ id, ...(r.Properties as unknown as MathAlarm) })).filter((a) => a.Metrics);
const expressionOf = (alarm: MathAlarm) => alarm.Metrics!.find((m) => m.Expression)!.Expression!;
const statsOf = (alarm: MathAlarm) => alarm.Metrics!.flatMap((m) => (m.MetricStat ? [m.MetricStat] : []));
const dimensionsOf = (stat: MetricStat) => Object.fromEntries(stat.Metric.Dimensions.map((d) => [d.Name, d.Value]));

describe('the health dashboard', () => {
  it('is one dashboard that graphs every metric of the catalogue, alarms included, with a guide to read it', () => {
    const dashboards = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]![1].Properties.DashboardBody);
    for (const name of Object.keys(gatewayMetrics)) expect(body, name).toContain(name);
    expect(body).toContain('IntegrationGateway');
    // Per-connector series come from searches over the catalogue's dimensions, never an account.
    expect(body).toContain('{IntegrationGateway,service,connector,reason} MetricName=\\\\\\"WebhooksRefused\\\\\\"');
    expect(body).not.toMatch(/accountId|account_id/);
    const schemas = [...body.matchAll(/SEARCH\('\{([^}]*)\}/g)].map((match) => match[1]!);
    expect(schemas.length).toBeGreaterThan(5);
    // QuotaRefusals is by reason (the quota kind) alone.
    for (const schema of schemas) expect(schema).toMatch(/^IntegrationGateway,service(,connector(,object|,reason)?|,reason)?$/);
    expect(body).toContain('alarm');
    expect(body).toContain('Integration gateway health');
    for (const handler of handlerNames) expect(body, handler).toContain(`\\"label\\":\\"${handler}\\"`);
  });
});

describe('alarms beyond the dead-letter queues', () => {
  it('a sync failure rate per connector that syncs, from SyncRuns and SyncFailures', () => {
    const syncing = Object.keys(connectors.syncing()).sort();
    const rates = mathAlarms().filter((a) => expressionOf(a).includes('runs'));
    expect(rates.map((a) => dimensionsOf(statsOf(a)[0]!).connector).sort()).toEqual(syncing);
    for (const alarm of rates) {
      expect(expressionOf(alarm)).toBe(`IF(FILL(runs, 0) >= ${ALARM_THRESHOLDS.syncRunsAtLeast}, 100 * FILL(failures, 0) / runs, 0)`);
      expect(statsOf(alarm).map((s) => s.Metric.MetricName).sort()).toEqual(['SyncFailures', 'SyncRuns']);
      expect(statsOf(alarm).every((s) => s.Period === 3600 && s.Stat === 'Sum')).toBe(true);
      expect(alarm).toMatchObject({ Threshold: ALARM_THRESHOLDS.syncFailurePercent, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' });
    }
  });

  it('webhook signature refusals spiking, per connector that receives webhooks', () => {
    const receiving = connectors.withWebhooks().map((c) => c.name).sort();
    const refusals = ofType('AWS::CloudWatch::Alarm')
      .map(([, r]) => r.Properties as unknown as { MetricName?: string; Namespace?: string; Dimensions?: Array<{ Name: string; Value: string }>; Threshold: number; Period: number; AlarmDescription: string })
      .filter((a) => a.MetricName === 'WebhooksRefused');
    expect(refusals.map((a) => a.Dimensions!.find((d) => d.Name === 'connector')!.Value).sort()).toEqual(receiving);
    for (const alarm of refusals) {
      expect(alarm.Namespace).toBe('IntegrationGateway');
      expect(Object.fromEntries(alarm.Dimensions!.map((d) => [d.Name, d.Value]))).toMatchObject({ reason: 'signature', service: 'integration-gateway' });
      expect(alarm).toMatchObject({ Threshold: ALARM_THRESHOLDS.signatureRefusals, Period: 900 });
      expect(alarm.AlarmDescription).toMatch(/signing secret or webhook password/);
    }
  });

  it('ingestion failures, as a share of the engagement events sent', () => {
    const [alarm] = mathAlarms().filter((a) => a.id.includes('IngestionFailures'));
    expect(statsOf(alarm!).map((s) => s.Metric.MetricName).sort()).toEqual(['IngestionRecordsAccepted', 'IngestionRecordsFailed']);
    expect(alarm!.Threshold).toBe(ALARM_THRESHOLDS.ingestionFailurePercent);
  });

  it('live conversations with no poller running, for half an hour', () => {
    const [alarm] = mathAlarms().filter((a) => a.id.includes('ConversationsWithoutPoller'));
    expect(expressionOf(alarm!)).toBe('IF(FILL(live, 0) > 0 AND FILL(polls, 0) == 0, 1, 0)');
    expect(statsOf(alarm!).map((s) => `${s.Metric.MetricName}:${s.Stat}`).sort()).toEqual(['LiveConversations:Maximum', 'PollsOpen:Sum']);
    expect(alarm).toMatchObject({ EvaluationPeriods: 2, Threshold: 1 });
  });

  it('every alarm notifies the alarm topic; no metric anywhere has an account dimension', () => {
    const [topicId] = ofType('AWS::SNS::Topic')[0]!;
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties as unknown as MathAlarm);
    expect(alarms.length).toBe(4 + 1 + Object.keys(connectors.syncing()).length + connectors.withWebhooks().length + 2);
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([{ Ref: topicId }]);
    expect(JSON.stringify(alarms)).not.toMatch(/"Name":"account/i);
  });
});

describe('tracing', () => {
  it('is active on every function and both state machines', () => {
    // The gateway's functions; CDK's deploy-time helpers of the dashboard's bucket run only during deploys.
    const functions = ofType('AWS::Lambda::Function').filter(([, r]) => String(r.Properties.Description).startsWith('functions/'));
    expect(functions).toHaveLength(handlerNames.length);
    for (const [, fn] of functions) expect((fn.Properties.TracingConfig as { Mode: string }).Mode).toBe('Active');
    const machines = ofType('AWS::StepFunctions::StateMachine');
    expect(machines).toHaveLength(2);
    for (const [, machine] of machines) expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: true });
  });
});

describe('function settings', () => {
  it('the stack sets every setting each function checks at load', () => {
    for (const handler of handlerNames) {
      const [, fn] = ofType('AWS::Lambda::Function').find(([, r]) => String(r.Properties.Description).startsWith(`functions/${handler}.ts:`))!;
      const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      for (const setting of functionSettings[handler]) expect(variables, `${handler} needs ${setting}`).toHaveProperty(setting);
    }
  });
});
