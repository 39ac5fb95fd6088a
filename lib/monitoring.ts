import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ConnectorName } from '../shared/connectors';
import { METRICS_NAMESPACE, METRICS_SERVICE, type GatewayMetricName, type MetricDimension } from '../shared/metrics/catalogue';

export interface MonitoringProps {
  /** Every dead-letter queue of the stack, by a name for the alarm. */
  readonly deadLetterQueues: Record<string, sqs.IQueue>;
  /** The queues work waits in, by a name for the dashboard. */
  readonly workQueues: Record<string, sqs.IQueue>;
  readonly syncJob: lambda.IFunction;
  /** Every function, by handler name, for the dashboard's errors and durations. */
  readonly functions: Record<string, lambda.IFunction>;
  /** Connectors whose data objects sync on schedules: one sync failure rate alarm each. */
  readonly syncedConnectors: readonly ConnectorName[];
  /** Connectors with a webhook receiver: one signature-refusal alarm each. */
  readonly webhookConnectors: readonly ConnectorName[];
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
  /**
   * Encrypts the alarm topic: the table's key (lib/storage.ts), which CloudWatch may use for this topic only.
   * A key of its own would add $1 a month for a topic that carries alarm names and states.
   */
  readonly topicKey: kms.IKey;
}

/** Alarm thresholds, in one place (docs/monitoring.md). */
export const ALARM_THRESHOLDS = {
  /** Percent of a connector's sync runs failing in an hour, once at least `syncRunsAtLeast` ran. */
  syncFailurePercent: 50,
  syncRunsAtLeast: 2,
  /** Signature refusals in 15 minutes: a wrong or rolled secret refuses every delivery a platform retries. */
  signatureRefusals: 10,
  /** Percent of engagement events not taken in 15 minutes, once at least `ingestionRecordsAtLeast` were sent. */
  ingestionFailurePercent: 20,
  ingestionRecordsAtLeast: 10,
} as const;

/** A gateway metric (shared/metrics/catalogue.ts) with the given dimension values. */
export function gatewayMetric(name: GatewayMetricName, dimensions: Partial<Record<MetricDimension, string>>, statistic: string, period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: METRICS_SERVICE, ...dimensions },
    statistic,
    period,
  });
}

/** Every series of a metric, whatever its dimension values (a dashboard search; alarms need explicit metrics). */
function searchOf(name: GatewayMetricName, dimensions: readonly MetricDimension[], statistic: string, period: Duration, label: string): cloudwatch.MathExpression {
  const schema = ['service', ...dimensions].join(',');
  return new cloudwatch.MathExpression({
    expression: `SEARCH('{${METRICS_NAMESPACE},${schema}} MetricName="${name}"', '${statistic}', ${period.toSeconds()})`,
    label,
    usingMetrics: {},
    period,
  });
}

/**
 * What needs a person (alarms, to the alarm topic) and what shows the gateway's health (one
 * dashboard). Alarms: anything in a dead-letter queue; failing sync jobs; a connector's sync
 * failure rate; webhook signature refusals outnumbering verified deliveries (a wrong signing
 * secret or webhook password); engagement events failing; live conversations with no poller.
 */
export class Monitoring extends Construct {
  readonly alarmTopic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm, by construct id (tests and the cost model count them). */
  readonly alarms: cloudwatch.IAlarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);

    // CloudWatch cannot publish to a topic under the AWS managed SNS key, so the topic is under a customer-managed
    // one: the table's. CloudWatch may use it only for this topic, from this account: SNS passes the topic's ARN as
    // the encryption context, which DynamoDB never does, so no grant here reaches the table's data. The topic is
    // named, so its ARN is known without a reference (the key's policy naming the topic by reference would be a cycle).
    const stack = Stack.of(this);
    const topicName = `${stack.stackName}-alarms`;
    const topicArn = stack.formatArn({ service: 'sns', resource: topicName });
    const grant = props.topicKey.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsToTheAlarmTopic',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: {
          StringEquals: { 'kms:EncryptionContext:aws:sns:topicArn': topicArn, 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
        },
      }),
      false,
    );
    if (!grant.statementAdded) throw new Error('the alarm topic key must accept a key policy statement');
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      topicName,
      displayName: 'Integration gateway alarms',
      masterKey: props.topicKey,
      enforceSSL: true,
    });
    if (props.alarmEmail) {
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }
    const notify = new actions.SnsAction(this.alarmTopic);
    const alarm = (created: cloudwatch.Alarm) => {
      created.addAlarmAction(notify);
      this.alarms.push(created);
      return created;
    };
    const once = { evaluationPeriods: 1, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING };
    const atLeast = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD;
    const fiveMinutes = Duration.minutes(5);
    const quarter = Duration.minutes(15);
    const hour = Duration.hours(1);

    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      alarm(
        queue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: cloudwatch.Stats.MAXIMUM }).createAlarm(this, `${name}DeadLetters`, {
          alarmDescription: `Messages are waiting in the ${name} dead-letter queue: find why they failed, fix, then replay them (npm run replay-dlq).`,
          threshold: 1,
          comparisonOperator: atLeast,
          ...once,
        }),
      );
    }

    alarm(
      props.syncJob.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }).createAlarm(this, 'SyncJobErrors', {
        alarmDescription: 'Sync jobs are failing: see the sync-job logs and the connections\u2019 health in the dashboard.',
        threshold: 1,
        comparisonOperator: atLeast,
        ...once,
      }),
    );

    for (const connector of props.syncedConnectors) {
      const runs = gatewayMetric('SyncRuns', { connector }, cloudwatch.Stats.SUM, hour);
      const failures = gatewayMetric('SyncFailures', { connector }, cloudwatch.Stats.SUM, hour);
      alarm(
        new cloudwatch.MathExpression({
          expression: `IF(FILL(runs, 0) >= ${ALARM_THRESHOLDS.syncRunsAtLeast}, 100 * FILL(failures, 0) / runs, 0)`,
          usingMetrics: { runs, failures },
          label: `${connector} sync failure rate (%)`,
          period: hour,
        }).createAlarm(this, `SyncFailureRate-${connector}`, {
          alarmDescription: `Half or more of the ${connector} connector's sync runs failed in the last hour: see the connections' health in the dashboard (a revoked key, a platform outage, rate limits) and the sync-job logs.`,
          threshold: ALARM_THRESHOLDS.syncFailurePercent,
          comparisonOperator: atLeast,
          ...once,
        }),
      );
    }

    for (const connector of props.webhookConnectors) {
      // One metric, not a ratio against verified deliveries: each metric in an alarm costs $0.10 a month.
      alarm(
        gatewayMetric('WebhooksRefused', { connector, reason: 'signature' }, cloudwatch.Stats.SUM, quarter).createAlarm(this, `WebhookSignatureRefusals-${connector}`, {
          alarmDescription: `The ${connector} webhook receiver refused ${ALARM_THRESHOLDS.signatureRefusals} or more deliveries in 15 minutes for their signature or credentials: the signing secret or webhook password on the platform and on the connection probably differ (or someone is sending forged deliveries). Check the connection's webhook settings.`,
          threshold: ALARM_THRESHOLDS.signatureRefusals,
          comparisonOperator: atLeast,
          ...once,
        }),
      );
    }

    const accepted = gatewayMetric('IngestionRecordsAccepted', {}, cloudwatch.Stats.SUM, quarter);
    const failed = gatewayMetric('IngestionRecordsFailed', {}, cloudwatch.Stats.SUM, quarter);
    alarm(
      new cloudwatch.MathExpression({
        expression: `IF(FILL(accepted, 0) + FILL(failed, 0) >= ${ALARM_THRESHOLDS.ingestionRecordsAtLeast}, 100 * FILL(failed, 0) / (FILL(accepted, 0) + FILL(failed, 0)), 0)`,
        usingMetrics: { accepted, failed },
        label: 'engagement events failing (%)',
        period: quarter,
      }).createAlarm(this, 'IngestionFailures', {
        alarmDescription:
          'Engagement events are not reaching the data platform: see the ingest logs (a data connection needing reconnect, a schema mismatch) before they end in the dead-letter queue.',
        threshold: ALARM_THRESHOLDS.ingestionFailurePercent,
        comparisonOperator: atLeast,
        ...once,
      }),
    );

    const live = gatewayMetric('LiveConversations', {}, cloudwatch.Stats.MAXIMUM, quarter);
    const polls = gatewayMetric('PollsOpen', {}, cloudwatch.Stats.SUM, quarter);
    alarm(
      new cloudwatch.MathExpression({
        expression: 'IF(FILL(live, 0) > 0 AND FILL(polls, 0) == 0, 1, 0)',
        usingMetrics: { live, polls },
        label: 'live conversations without a poller',
        period: quarter,
      }).createAlarm(this, 'ConversationsWithoutPoller', {
        alarmDescription:
          'Conversations are live but no poller holds their polls (for half an hour): messages are not being received. See the poller fleet state machine\u2019s executions and the poller logs.',
        threshold: 1,
        comparisonOperator: atLeast,
        evaluationPeriods: 2,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );

    this.dashboard = this.buildDashboard(props);
  }

  private buildDashboard(props: MonitoringProps): cloudwatch.Dashboard {
    const period = Duration.minutes(5);
    const sum = cloudwatch.Stats.SUM;
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${cdkSafe(Stack.of(this).stackName)}-health`,
      defaultInterval: Duration.hours(24),
    });
    const graph = (title: string, metrics: cloudwatch.IMetric[], width = 8, options: Partial<cloudwatch.GraphWidgetProps> = {}) =>
      new cloudwatch.GraphWidget({ title, left: metrics, width, height: 6, ...options });
    const fns = Object.entries(props.functions);

    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: [
          '## Integration gateway health',
          'Every graph is per 5 minutes. **Syncs**: records written per connector and object, runs and failures (a failure sets the connection\u2019s health, shown in the Integrations section). ' +
            '**Platforms**: 429s and retries: a steady rise means a connection syncs more than its plan allows. **Webhooks**: verified against refused by reason (`signature`: wrong secret or password; `stale`: clock or replay; `account`: wrong address). ' +
            '**Ingestion**: engagement events taken and not taken (retried, then dead-lettered). **Conversations**: live conversations against polls open: polls should follow the live line. ' +
            '**Queues**: waiting work and dead letters (any dead letter alarms; replay with `npm run replay-dlq`). See docs/monitoring.md in the repository.',
        ].join('\n\n'),
        width: 24,
        height: 3,
      }),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 3 }),
    );
    dashboard.addWidgets(
      graph('Records synced (by connector, object)', [searchOf('RecordsSynced', ['connector', 'object'], 'Sum', period, '')]),
      graph('Sync runs and failures (by connector)', [searchOf('SyncRuns', ['connector'], 'Sum', period, ''), searchOf('SyncFailures', ['connector'], 'Sum', period, '')]),
      graph('Platform 429s and retries (by connector)', [searchOf('PlatformThrottles', ['connector'], 'Sum', period, ''), searchOf('PlatformRetries', ['connector'], 'Sum', period, '')]),
    );
    dashboard.addWidgets(
      graph('Webhooks verified (by connector)', [searchOf('WebhooksVerified', ['connector'], 'Sum', period, '')]),
      graph('Webhooks refused (by connector, reason)', [searchOf('WebhooksRefused', ['connector', 'reason'], 'Sum', period, '')]),
      graph('Events published for playbooks (by connector)', [searchOf('EventsPublished', ['connector'], 'Sum', period, '')]),
    );
    dashboard.addWidgets(
      graph('Quota refusals (by quota)', [searchOf('QuotaRefusals', ['reason'], 'Sum', period, '')]),
      graph('Webhook events confirmed with the platform, and dropped unconfirmed (by connector)', [
        searchOf('WebhookEventsConfirmed', ['connector'], 'Sum', period, ''),
        searchOf('WebhookEventsUnconfirmed', ['connector'], 'Sum', period, ''),
      ]),
    );
    dashboard.addWidgets(
      graph('Engagement events to the data platform', [
        gatewayMetric('IngestionRecordsAccepted', {}, sum, period).with({ label: 'accepted' }),
        gatewayMetric('IngestionRecordsFailed', {}, sum, period).with({ label: 'not taken (retried)' }),
      ]),
      graph('Conversations', [
        gatewayMetric('LiveConversations', {}, cloudwatch.Stats.MAXIMUM, period).with({ label: 'live conversations' }),
        gatewayMetric('PollsOpen', {}, sum, Duration.minutes(1)).with({ label: 'polls open' }),
        gatewayMetric('MessagesDelivered', {}, sum, period).with({ label: 'messages delivered' }),
      ]),
      graph(
        'Queues: waiting and dead letters',
        [
          ...Object.entries(props.workQueues).map(([name, queue]) => queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: `${name} waiting` })),
          ...Object.entries(props.deadLetterQueues).map(([name, queue]) =>
            queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: `${name} dead letters` }),
          ),
        ],
      ),
    );
    dashboard.addWidgets(
      graph('Function errors', fns.map(([name, fn]) => fn.metricErrors({ period, statistic: sum, label: name })), 12),
      graph('Function duration p99 (ms)', fns.map(([name, fn]) => fn.metricDuration({ period, statistic: 'p99', label: name })), 12),
    );
    return dashboard;
  }
}

/** Dashboard names allow letters, digits, `-` and `_`. */
function cdkSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '-');
}
