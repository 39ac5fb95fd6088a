import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { tableDefinition } from '../shared/store/table';

/** The partition keys of the webhook delivery counters (shared/history/history-store.ts, historyKey.deliveryHour). */
export const DELIVERY_COUNTER_KEYS = 'ACCOUNT#*#HISTORY#WEBHOOKS#*';
import { nagArnOf } from './nag-findings';

/**
 * Where the gateway keeps its state: the one table and the key that wraps each connection's credentials.
 * Everything here outlives the stack (RETAIN): losing a key loses data.
 *
 * Two customer-managed keys (DESIGN: one for the table, one for credentials), $1 a month each. The gateway keeps
 * no secret of its own: API keys are stored as hashes of 256-bit secrets, OAuth states are random and single-use,
 * webhook addresses name the account, so a Secrets Manager secret ($0.40 a month) would hold nothing any code reads.
 */
export class Storage extends Construct {
  /** Encrypts the table, and the alarm topic (lib/monitoring.ts) at rest. */
  readonly dataKey: kms.Key;
  /** The vault's key: wraps each connection's data key, always under the context {account, connector}. */
  readonly credentialsKey: kms.Key;
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    this.dataKey = new kms.Key(this, 'DataKey', {
      description: 'Integration gateway: encrypts the table and the alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.credentialsKey = new kms.Key(this, 'CredentialsKey', {
      description: 'Integration gateway: wraps connection credentials (encryption context {account, connector})',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const stringKey = (name: string) => ({ name, type: dynamodb.AttributeType.STRING });
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: stringKey(tableDefinition.partitionKey),
      sortKey: stringKey(tableDefinition.sortKey),
      timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.dataKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of tableDefinition.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: stringKey(index.partitionKey),
        sortKey: stringKey(index.sortKey),
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
  }

  /**
   * Table access for one function's role, through CDK's table grants (which also grant the use of the data key
   * that DynamoDB needs on the caller's behalf). Their wildcards are acknowledged here, on this role only.
   */
  /**
   * UpdateItem on the webhook delivery counters only (the `ACCOUNT#<id>#HISTORY#WEBHOOKS#<connector>`
   * partitions of shared/history): what a receiver writes when it refuses a delivery. Its read grant
   * already has kms:Decrypt on the table's key, all DynamoDB asks of the caller for a write.
   */
  grantDeliveryCounting(role: iam.Role): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:UpdateItem'],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [DELIVERY_COUNTER_KEYS] } },
      }),
    );
  }

  grantTable(role: iam.Role, access: 'read' | 'readWrite'): void {
    const acknowledge = Validations.of(role);
    acknowledge.acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagArnOf(this.table)}/index/*]`,
      reason: "The table's own secondary indexes (ARN/index/*), as CDK's table grant writes them; the only index is gsi1.",
    });
    if (access === 'read') {
      this.table.grantReadData(role);
      return;
    }
    this.table.grantReadWriteData(role);
    for (const action of ['kms:ReEncrypt*', 'kms:GenerateDataKey*']) {
      acknowledge.acknowledge({
        id: `AwsSolutions-IAM5[Action::${action}]`,
        reason: `${action} on the table's data key only (one key ARN): CDK's table grant gives the variants DynamoDB uses to encrypt items with the customer-managed key.`,
      });
    }
  }
}
