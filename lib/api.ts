import { Duration, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as cognito from 'aws-cdk-lib/aws-cognito';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { connectors } from '../shared/connections/registry';
import { GatewayFunction } from './gateway-function';

/** The OAuth callback address of every connector that offers the authorization code, from the registry. */
export function oauthCallbackPaths(): string[] {
  return connectors.all().flatMap((connector) => (connector.authorization ? [connector.authorization.callbackPath] : []));
}

export interface GatewayApiProps {
  readonly logRetention: logs.RetentionDays;
  /** Default-stage throttling: bounds cost when someone floods the public routes. */
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
}

/**
 * The HTTP API: the spec's four addresses exactly as written, plus /api/v1 for the dashboard and playbooks.
 *
 * The OAuth callbacks and webhook receivers have no API Gateway authorizer: the platforms cannot present a
 * JWT. Each of those functions authenticates every request itself (single-use OAuth state with PKCE, the
 * payment platform's HMAC signature, the billing platform's Basic credentials). The rest of /api/v1 is added by
 * `protectDashboardApi` once the dashboard's sign-in exists (its app client knows the dashboard's address, which
 * fronts this API).
 */
export class GatewayApi extends Construct {
  readonly httpApi: apigw.HttpApi;
  readonly apiHandler: GatewayFunction;
  readonly oauthCallback: GatewayFunction;
  readonly paymentsWebhook: GatewayFunction;
  readonly billingWebhook: GatewayFunction;
  private readonly apiIntegration: HttpLambdaIntegration;

  constructor(scope: Construct, id: string, props: GatewayApiProps) {
    super(scope, id);

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Integration gateway: OAuth callbacks, platform webhooks and the /api/v1 API',
      createDefaultStage: false,
    });
    this.defaultStage(props);

    const fn = (fnId: string, handler: 'api' | 'oauth-callback' | 'webhook-payments' | 'webhook-billing', purpose: string, timeout: Duration) =>
      new GatewayFunction(this, fnId, { handler, purpose, timeout, logRetention: props.logRetention });
    // API Gateway gives up after 30 s; the API answers before that.
    this.apiHandler = fn('ApiHandler', 'api', 'the /api/v1 API for the dashboard and playbooks', Duration.seconds(25));
    this.oauthCallback = fn('OAuthCallback', 'oauth-callback', 'completes OAuth authorizations (state, PKCE, token exchange)', Duration.seconds(20));
    // Receivers verify and enqueue (the event worker dedupes): they answer in milliseconds, so a short timeout.
    this.paymentsWebhook = fn('PaymentsWebhook', 'webhook-payments', 'verifies and enqueues payment platform webhooks', Duration.seconds(10));
    this.billingWebhook = fn('BillingWebhook', 'webhook-billing', 'verifies and enqueues billing platform webhooks', Duration.seconds(10));

    const oauthCallback = integration('OAuthCallback', this.oauthCallback);
    const apiHandler = (this.apiIntegration = integration('ApiHandler', this.apiHandler));
    const oauthReason =
      'OAuth redirect back from the platform: a browser cannot present a JWT; the function accepts only a single-use, short-lived state with its PKCE verifier.';
    // One route per connector that connects through the browser (the spec's two callback addresses).
    for (const path of oauthCallbackPaths()) this.unauthorizedRoute(path, apigw.HttpMethod.GET, oauthCallback, oauthReason);
    this.unauthorizedRoute(
      '/webhooks/payments',
      apigw.HttpMethod.POST,
      integration('PaymentsWebhook', this.paymentsWebhook),
      'Payment platform webhooks cannot present a JWT; the function verifies the HMAC-SHA256 signature over the raw body in constant time.',
    );
    this.unauthorizedRoute(
      '/webhooks/billing',
      apigw.HttpMethod.POST,
      integration('BillingWebhook', this.billingWebhook),
      'Billing platform webhooks cannot present a JWT; the function checks the webhook Basic credentials in constant time.',
    );
    this.unauthorizedRoute(
      '/api/v1/openapi.json',
      apigw.HttpMethod.GET,
      apiHandler,
      'The public OpenAPI description of /api/v1: it holds no account data, and clients read it before they can sign in.',
    );

    this.unauthorizedRoute(
      '/api/v1/playbook/{proxy+}',
      apigw.HttpMethod.GET,
      apiHandler,
      'Playbook reads authenticate with an account API key, not a dashboard JWT: the function checks the key against its stored SHA-256 hash in constant time.',
    );

    this.unauthorizedRoute(
      '/api/v1/playbook/{proxy+}',
      apigw.HttpMethod.POST,
      apiHandler,
      'Playbooks submit engagement events and data queries with an account API key, not a dashboard JWT: the function checks the key against its stored SHA-256 hash in constant time.',
    );

  }

  /** Every other /api/v1 route: only with an ID token of the dashboard's user pool, issued to its app client. */
  protectDashboardApi(userPool: cognito.IUserPool, dashboardClient: cognito.IUserPoolClient): void {
    this.httpApi.addRoutes({
      path: '/api/v1/{proxy+}',
      methods: [apigw.HttpMethod.ANY],
      integration: this.apiIntegration,
      authorizer: new HttpUserPoolAuthorizer('DashboardUsers', userPool, { userPoolClients: [dashboardClient] }),
    });
  }

  /** A route without an API Gateway authorizer; `reason` says who authenticates its requests instead. */
  private unauthorizedRoute(path: string, method: apigw.HttpMethod, target: HttpLambdaIntegration, reason: string): void {
    for (const route of this.httpApi.addRoutes({ path, methods: [method], integration: target })) {
      Validations.of(route).acknowledge({ id: 'AwsSolutions-APIG4', reason });
    }
  }

  /** The `$default` stage: throttled, with JSON access logs. */
  private defaultStage(props: GatewayApiProps): apigw.HttpStage {
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: props.logRetention });
    return new apigw.HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // The route key, never the raw path or query: OAuth callbacks carry the authorization code in the query.
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            requestTime: '$context.requestTime',
            sourceIp: '$context.identity.sourceIp',
            userAgent: '$context.identity.userAgent',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            responseLatency: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
            authorizerError: '$context.authorizer.error',
          }),
        ),
      },
    });
  }
}

/** Lambda proxy integration with the 2.0 event format (raw body kept as sent, for webhook signatures). */
function integration(id: string, fn: GatewayFunction): HttpLambdaIntegration {
  return new HttpLambdaIntegration(id, fn, { payloadFormatVersion: apigw.PayloadFormatVersion.VERSION_2_0 });
}
