import { Duration, Lazy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as cognito from 'aws-cdk-lib/aws-cognito';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { authorizers, webhookReceivers } from '../shared/connections/registry';
import { GatewayFunction } from './gateway-function';

export interface Throttle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

export interface GatewayApiProps {
  readonly logRetention: logs.RetentionDays;
  /** Default-stage throttling: what a route with no throttle of its own (routeThrottles) gets. */
  readonly throttle: Throttle;
}

/**
 * Each route's own throttle (requests per second, burst), by the first path prefix that matches: a route's
 * throttle replaces the stage's default for it, so junk sent to one route is refused (429) there and never
 * spends another route's share. Every figure is per route key (GET and POST of the playbook API are two).
 * Why these figures: docs/tenants.md, "Route throttles".
 */
export const routeThrottles: ReadonlyArray<{ readonly prefix: string; readonly throttle: Throttle }> = [
  // Signed deliveries from the platforms, answered in milliseconds; a 429 is retried by the platform, so a
  // flood here delays deliveries and loses none.
  { prefix: '/webhooks/', throttle: { rateLimit: 100, burstLimit: 200 } },
  // People coming back from a platform's sign-in: a few a minute.
  { prefix: '/auth/', throttle: { rateLimit: 10, burstLimit: 20 } },
  // A public document that does not change between deploys.
  { prefix: '/api/v1/openapi.json', throttle: { rateLimit: 10, burstLimit: 20 } },
  // Playbooks of every account, each account held to its own quotas (docs/tenants.md) well below this.
  { prefix: '/api/v1/playbook/', throttle: { rateLimit: 300, burstLimit: 600 } },
  // The dashboard: signed-in people.
  { prefix: '/api/v1/', throttle: { rateLimit: 100, burstLimit: 200 } },
];

/** Pure: the throttle of a route at `path`, or undefined (the stage's default applies). */
export function routeThrottle(path: string): Throttle | undefined {
  return routeThrottles.find((entry) => path.startsWith(entry.prefix))?.throttle;
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
  readonly webhookReceiver: GatewayFunction;
  private readonly apiIntegration: HttpLambdaIntegration;
  private readonly stage: apigw.HttpStage;
  /** Route key to its throttle, for the stage's route settings. */
  private readonly throttledRoutes = new Map<string, Throttle>();

  constructor(scope: Construct, id: string, props: GatewayApiProps) {
    super(scope, id);

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Integration gateway: OAuth callbacks, platform webhooks and the /api/v1 API',
      createDefaultStage: false,
    });
    this.stage = this.defaultStage(props);
    (this.stage.node.defaultChild as apigw.CfnStage).routeSettings = Lazy.any({ produce: () => this.routeSettings() });

    const fn = (fnId: string, handler: 'api' | 'oauth-callback' | 'webhook-receiver', purpose: string, timeout: Duration) =>
      new GatewayFunction(this, fnId, { handler, purpose, timeout, logRetention: props.logRetention });
    // API Gateway gives up after 30 s; the API answers before that.
    this.apiHandler = fn('ApiHandler', 'api', 'the /api/v1 API for the dashboard and playbooks', Duration.seconds(25));
    this.oauthCallback = fn('OAuthCallback', 'oauth-callback', 'completes OAuth authorizations (state, PKCE, token exchange)', Duration.seconds(20));
    // The receiver verifies and enqueues (the event worker dedupes): it answers in milliseconds, so a short timeout.
    this.webhookReceiver = fn('WebhookReceiver', 'webhook-receiver', "verifies and enqueues the platforms' webhooks", Duration.seconds(10));

    const oauthCallback = integration('OAuthCallback', this.oauthCallback);
    const apiHandler = (this.apiIntegration = integration('ApiHandler', this.apiHandler));
    const oauthReason =
      'OAuth redirect back from the platform: a browser cannot present a JWT; the function accepts only a single-use, short-lived state with its PKCE verifier.';
    // One route per connector that connects through the browser (the spec's two callback addresses), as local/http-routes.ts adds them.
    for (const { authorization } of authorizers) this.unauthorizedRoute(authorization.callbackPath, apigw.HttpMethod.GET, oauthCallback, oauthReason);
    // One route per connector whose platform sends webhooks (the spec's two receiver addresses), all to one function.
    const webhookReceiver = integration('WebhookReceiver', this.webhookReceiver);
    for (const { platform, webhooks } of webhookReceivers) {
      this.unauthorizedRoute(webhooks.path, apigw.HttpMethod.POST, webhookReceiver, `The ${platform}'s webhooks cannot present a JWT; the function checks ${webhooks.proof}.`);
    }
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

  /** The functions behind the routes: each checks that a request came through the distribution (shared/origin/). */
  get routeFunctions(): GatewayFunction[] {
    return [this.apiHandler, this.oauthCallback, this.webhookReceiver];
  }

  /** Every other /api/v1 route: only with an ID token of the dashboard's user pool, issued to its app client. */
  protectDashboardApi(userPool: cognito.IUserPool, dashboardClient: cognito.IUserPoolClient): void {
    const routes = this.httpApi.addRoutes({
      path: '/api/v1/{proxy+}',
      methods: [apigw.HttpMethod.ANY],
      integration: this.apiIntegration,
      authorizer: new HttpUserPoolAuthorizer('DashboardUsers', userPool, { userPoolClients: [dashboardClient] }),
    });
    for (const route of routes) this.throttleRoute(route);
  }

  /** A route without an API Gateway authorizer; `reason` says who authenticates its requests instead. */
  private unauthorizedRoute(path: string, method: apigw.HttpMethod, target: HttpLambdaIntegration, reason: string): void {
    for (const route of this.httpApi.addRoutes({ path, methods: [method], integration: target })) {
      Validations.of(route).acknowledge({ id: 'AwsSolutions-APIG4', reason });
      this.throttleRoute(route);
    }
  }

  /**
   * Gives the route its throttle in the stage's route settings. The stage is made after the route: API
   * Gateway refuses route settings naming a route that does not exist yet.
   */
  private throttleRoute(route: apigw.HttpRoute): void {
    const routeKey = (route.node.defaultChild as apigw.CfnRoute).routeKey;
    const throttle = routeThrottle(routeKey.slice(routeKey.indexOf(' ') + 1));
    if (!throttle) return;
    this.throttledRoutes.set(routeKey, throttle);
    this.stage.node.addDependency(route);
  }

  private routeSettings(): Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> | undefined {
    if (this.throttledRoutes.size === 0) return undefined;
    return Object.fromEntries([...this.throttledRoutes].map(([key, throttle]) => [key, { ThrottlingRateLimit: throttle.rateLimit, ThrottlingBurstLimit: throttle.burstLimit }]));
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
