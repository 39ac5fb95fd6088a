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
  /** The gateway's public address if it has a custom domain; otherwise the API's own address is used. */
  readonly baseUrl?: string;
  readonly userPool: cognito.IUserPool;
  readonly dashboardClient: cognito.IUserPoolClient;
}

/**
 * The HTTP API: the spec's four addresses exactly as written, plus /api/v1 for the dashboard and playbooks.
 *
 * The OAuth callbacks and webhook receivers have no API Gateway authorizer: the platforms cannot present a
 * JWT. Each of those functions authenticates every request itself (single-use OAuth state with PKCE, the
 * payment platform's HMAC signature, the billing platform's Basic credentials).
 */
export class GatewayApi extends Construct {
  readonly httpApi: apigw.HttpApi;
  /** `{base_url}` in the spec. */
  readonly baseUrl: string;
  readonly apiHandler: GatewayFunction;
  readonly oauthCallback: GatewayFunction;
  readonly paymentsWebhook: GatewayFunction;
  readonly billingWebhook: GatewayFunction;

  constructor(scope: Construct, id: string, props: GatewayApiProps) {
    super(scope, id);

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Integration gateway: OAuth callbacks, platform webhooks and the /api/v1 API',
      createDefaultStage: false,
    });
    // Not circular: the functions refer to the API, the API does not refer to them (its routes do).
    this.baseUrl = props.baseUrl ?? this.httpApi.apiEndpoint;
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
    const apiHandler = integration('ApiHandler', this.apiHandler);
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
      '/api/v1/playbook/engagement-events',
      apigw.HttpMethod.POST,
      apiHandler,
      'Playbooks submit engagement events with an account API key, not a dashboard JWT: the function checks the key against its stored SHA-256 hash in constant time.',
    );

    this.httpApi.addRoutes({
      path: '/api/v1/{proxy+}',
      methods: [apigw.HttpMethod.ANY],
      integration: apiHandler,
      authorizer: new HttpUserPoolAuthorizer('DashboardUsers', props.userPool, { userPoolClients: [props.dashboardClient] }),
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
