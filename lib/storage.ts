import { RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { tableDefinition } from '../shared/store/table';

/** The partition keys of the webhook delivery counters (shared/history/history-store.ts, historyKey.deliveryHour). */
export const DELIVERY_COUNTER_KEYS = 'ACCOUNT#*#HISTORY#WEBHOOKS#*';

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

  /** `warmWriteUnits`: the table and its index pre-warmed to take that many write units a second from the start. */
  constructor(scope: Construct, id: string, options: { warmWriteUnits?: number } = {}) {
    super(scope, id);
    const warmThroughput = options.warmWriteUnits === undefined ? {} : { warmThroughput: { writeUnitsPerSecond: options.warmWriteUnits } };

    this.dataKey = new kms.Key(this, 'DataKey', {
      description: 'Integration gateway: encrypts the table and the alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // An explicit policy replaces CDK's default (kms:* for the account, which lets any IAM policy in the
    // account use the key): the account administers the key, and only the roles named by
    // allowCredentialsUse may use it.
    this.credentialsKey = new kms.Key(this, 'CredentialsKey', {
      description: 'Integration gateway: wraps connection credentials (encryption context {account, connector})',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({
            sid: 'AccountAdministersButCannotUse',
            principals: [new iam.AccountRootPrincipal()],
            actions: [...KEY_ADMIN_ACTIONS],
            resources: ['*'],
          }),
        ],
      }),
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
      ...warmThroughput,
    });
    for (const index of tableDefinition.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: stringKey(index.partitionKey),
        sortKey: stringKey(index.sortKey),
        projectionType: dynamodb.ProjectionType.ALL,
        // Every record with an email writes the index too: it needs the same pace as the table.
        ...warmThroughput,
      });
    }
  }

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

  /**
   * Exactly these table actions for one function's role (no Scan, no stream reads: no code uses them) on the
   * table, and with `queriesIndex` dynamodb:Query on its indexes: the one read of an index the gateway makes
   * (the Service Authorization Reference gives the index resource type to Query and Scan only), granted only
   * to the functions whose code queries gsi1. DynamoDB decrypts the table's key with the caller's permission,
   * so the role may also kms:Decrypt the data key; the table key is made once when the table is created, so
   * no caller needs Encrypt, ReEncrypt or GenerateDataKey on it.
   */
  grantTable(role: iam.Role, actions: readonly TableAction[], queriesIndex = false): void {
    if (actions.length > 0) role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: actions.map((action) => `dynamodb:${action}`), resources: [this.table.tableArn] }));
    if (queriesIndex) {
      const indexes = tableDefinition.indexes.map((index) => `${this.table.tableArn}/index/${index.name}`);
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources: indexes }));
    }
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['kms:Decrypt'], resources: [this.dataKey.keyArn] }));
  }

  /**
   * Lets one role use the credentials key under conditions, in the key's own policy: the key policy names each
   * role that may use the key, so no identity policy elsewhere in the account (an admin's, a CI role's
   * `kms:*`) can reach the credentials.
   */
  allowCredentialsUse(role: iam.IRole, sid: string, actions: readonly string[], conditions: Record<string, Record<string, unknown>>): void {
    this.credentialsKey.addToResourcePolicy(new iam.PolicyStatement({ sid, principals: [role], actions: [...actions], resources: ['*'], conditions }));
  }
}

/** The DynamoDB actions a function may be granted (the data-plane calls shared/store makes). */
export type TableAction = 'GetItem' | 'Query' | 'BatchGetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'BatchWriteItem';

/**
 * Key administration without key use: these principals may describe, tag, rotate, change the policy of,
 * disable and schedule deletion of the key, and never Encrypt, Decrypt, ReEncrypt, GenerateDataKey or CreateGrant
 * (a grant would hand them its use).
 * Break glass (docs/permissions.md): an administrator adds a statement for a named role with PutKeyPolicy,
 * an audited change CloudTrail records.
 */
export const KEY_ADMIN_ACTIONS = [
  'kms:CreateAlias',
  'kms:Describe*',
  'kms:Enable*',
  'kms:List*',
  'kms:Put*',
  'kms:Update*',
  'kms:Revoke*',
  'kms:Disable*',
  'kms:Get*',
  'kms:Delete*',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
  'kms:RotateKeyOnDemand',
] as const;
