import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import { OPERATOR_GROUP } from '../shared/api/caller';

/** The Cognito group whose members may switch an account's Integrations section on or off (the API checks the same name). */
export const operatorGroupName = OPERATOR_GROUP;

/**
 * The account a dashboard user belongs to: `custom:account_id` in the ID token, which the API reads.
 * Immutable, and not writable by the app client, so no user can move themselves into another account.
 */
export const accountAttribute = 'account_id';

/**
 * Sign-in for the dashboard's users. Users are invited by an administrator (no self sign-up) and must use an
 * authenticator app as a second factor.
 */
export class DashboardAuth extends Construct {
  readonly userPool: cognito.UserPool;
  readonly dashboardClient: cognito.UserPoolClient;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    this.userPool = new cognito.UserPool(this, 'UserPool', {
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      mfa: cognito.Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
      },
      accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
      customAttributes: { [accountAttribute]: new cognito.StringAttribute({ minLen: 2, maxLen: 63, mutable: false }) },
      featurePlan: cognito.FeaturePlan.ESSENTIALS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.userPool).acknowledge({
      id: 'AwsSolutions-COG8',
      reason:
        'The Plus plan (threat protection) is billed per monthly active user. Sign-up is closed (users are invited) and TOTP MFA is required for everyone, which covers credential stuffing for an internal dashboard; move to Plus when the dashboard opens to many external users.',
    });

    // A browser app cannot keep a client secret; SRP keeps the password off the wire.
    this.dashboardClient = this.userPool.addClient('DashboardClient', {
      generateSecret: false,
      authFlows: { userSrp: true },
      readAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true, fullname: true }).withCustomAttributes(accountAttribute),
      // Users may edit their name; never their account (set by the administrator who invites them).
      writeAttributes: new cognito.ClientAttributes().withStandardAttributes({ fullname: true }),
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.days(1),
    });

    new cognito.CfnUserPoolGroup(this, 'Operators', {
      userPoolId: this.userPool.userPoolId,
      groupName: operatorGroupName,
      description: 'May switch the Integrations section of any account on or off',
    });
  }
}
