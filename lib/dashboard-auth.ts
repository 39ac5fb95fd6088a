import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';

/** The Cognito group whose members may switch an account's Integrations section on or off. */
export const operatorGroupName = 'operators';

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
