import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { tableDefinition } from '../shared/store/table';
import { nagArnOf } from './nag-findings';

/**
 * Where the gateway keeps its state: the one table, the key that wraps each connection's credentials, and the
 * secret holding the gateway's own keys. Everything here outlives the stack (RETAIN): losing a key loses data.
 */
export class Storage extends Construct {
  /** Encrypts the table and the gateway secret at rest. */
  readonly dataKey: kms.Key;
  /** The vault's key: wraps each connection's data key, always under the context {account, connector}. */
  readonly credentialsKey: kms.Key;
  readonly table: dynamodb.Table;
  /** The gateway's own keys (webhook address tokens, API key pepper): JSON `{"rootKey": "<64 characters>"}`. */
  readonly gatewaySecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    this.dataKey = new kms.Key(this, 'DataKey', {
      description: 'Integration gateway: encrypts the table and the gateway secret',
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

    this.gatewaySecret = new secretsmanager.Secret(this, 'GatewaySecret', {
      description: 'Integration gateway: its own keys (webhook address tokens, API key pepper)',
      encryptionKey: this.dataKey,
      generateSecretString: {
        secretStringTemplate: '{}',
        generateStringKey: 'rootKey',
        passwordLength: 64,
        excludePunctuation: true,
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.gatewaySecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The root key derives webhook address tokens and the API key pepper: rotating it would invalidate every webhook address configured on the platforms and every issued API key. Rotation needs a versioned key ring first.',
    });
  }

  /**
   * Table access for one function's role, through CDK's table grants (which also grant the use of the data key
   * that DynamoDB needs on the caller's behalf). Their wildcards are acknowledged here, on this role only.
   */
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
