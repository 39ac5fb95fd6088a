import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface MonitoringProps {
  /** Every dead-letter queue of the stack, by a name for the alarm. */
  readonly deadLetterQueues: Record<string, sqs.IQueue>;
  readonly syncJob: lambda.IFunction;
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
}

/** Alarms for what needs a person: anything in a dead-letter queue, and failing sync jobs. */
export class Monitoring extends Construct {
  readonly alarmTopic: sns.Topic;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);

    // CloudWatch cannot publish to a topic under the AWS managed SNS key, so the topic has its own key.
    const topicKey = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Integration gateway: encrypts the alarm topic',
      enableKeyRotation: true,
    });
    topicKey.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'Integration gateway alarms',
      masterKey: topicKey,
      enforceSSL: true,
    });
    if (props.alarmEmail) {
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }
    const notify = new actions.SnsAction(this.alarmTopic);

    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      queue
        .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM })
        .createAlarm(this, `${name}DeadLetters`, {
          alarmDescription: `Messages are waiting in the ${name} dead-letter queue: find why they failed, fix, then replay them (npm run replay-dlq).`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        })
        .addAlarmAction(notify);
    }

    props.syncJob
      .metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM })
      .createAlarm(this, 'SyncJobErrors', {
        alarmDescription: 'Sync jobs are failing: see the sync-job logs and the connections\u2019 health in the dashboard.',
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
      .addAlarmAction(notify);
  }
}
