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

export interface DashboardAuthProps {
  /** The managed login domain's prefix (`<prefix>.auth.<region>.amazoncognito.com`), unique in the region. */
  readonly domainPrefix: string;
  /** Where invitation emails send new users: the dashboard's address. */
  readonly dashboardUrl: string;
}

/**
 * Sign-in for the dashboard's users: Cognito managed login on a Cognito domain. Users are invited by an
 * administrator (no self sign-up) and must use an authenticator app as a second factor. The dashboard signs in
 * with the authorization code flow and PKCE as a public client (no secret: a browser cannot keep one).
 */
export class DashboardAuth extends Construct {
  readonly userPool: cognito.UserPool;
  /** `https://<prefix>.auth.<region>.amazoncognito.com`: the managed login pages and the OAuth endpoints. */
  readonly domain: cognito.UserPoolDomain;

  constructor(scope: Construct, id: string, props: DashboardAuthProps) {
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
      // The invitation says where to sign in; the temporary password is changed at the first sign-in.
      userInvitation: {
        emailSubject: 'Your integration gateway dashboard',
        emailBody: `You are invited to the integration gateway dashboard. Sign in at ${props.dashboardUrl} with the username {username} and the temporary password {####}. You will choose a new password and set up an authenticator app.`,
      },
      featurePlan: cognito.FeaturePlan.ESSENTIALS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.userPool).acknowledge({
      id: 'AwsSolutions-COG8',
      reason:
        'The Plus plan (threat protection) is billed per monthly active user. Sign-up is closed (users are invited) and TOTP MFA is required for everyone, which covers credential stuffing for an internal dashboard; move to Plus when the dashboard opens to many external users.',
    });

    this.domain = this.userPool.addDomain('ManagedLogin', {
      cognitoDomain: { domainPrefix: props.domainPrefix },
      managedLoginVersion: cognito.ManagedLoginVersion.NEWER_MANAGED_LOGIN,
    });

    new cognito.CfnUserPoolGroup(this, 'Operators', {
      userPoolId: this.userPool.userPoolId,
      groupName: operatorGroupName,
      description: 'May switch the Integrations section of any account on or off',
    });
  }

  /**
   * The dashboard's app client: authorization code with PKCE, no secret, the openid scope (the ID token carries
   * the account and the groups the API reads), callback and sign-out addresses exactly the dashboard's.
   * Managed login pages are activated for it with Cognito's default style.
   */
  addDashboardClient(dashboardUrls: string[]): cognito.UserPoolClient {
    const client = this.userPool.addClient('DashboardClient', {
      generateSecret: false,
      // SRP (and refresh) only: passwords never cross the wire in clear, even from a script.
      authFlows: { userSrp: true },
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE],
        callbackUrls: dashboardUrls,
        logoutUrls: dashboardUrls,
      },
      supportedIdentityProviders: [cognito.UserPoolClientIdentityProvider.COGNITO],
      readAttributes: new cognito.ClientAttributes().withStandardAttributes({ email: true, fullname: true }).withCustomAttributes(accountAttribute),
      // Users may edit their name; never their account (set by the administrator who invites them).
      writeAttributes: new cognito.ClientAttributes().withStandardAttributes({ fullname: true }),
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      // A working day: the page refreshes its tokens in the background until then.
      refreshTokenValidity: Duration.hours(12),
    });
    new cognito.CfnManagedLoginBranding(this, 'ManagedLoginStyle', {
      userPoolId: this.userPool.userPoolId,
      clientId: client.userPoolClientId,
      useCognitoProvidedValues: true,
    });
    return client;
  }
}
