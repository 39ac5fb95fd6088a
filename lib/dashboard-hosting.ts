import { fileURLToPath } from 'node:url';
import { Aws, DefaultStackSynthesizer, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { nagArnOf } from './nag-findings';

/** The dashboard's files: plain HTML, CSS and ES modules, served as they are (no build step). */
export const dashboardDirectory = fileURLToPath(new URL('../dashboard', import.meta.url));

/** The paths the distribution sends to the HTTP API instead of the dashboard's bucket. */
export const apiPathPatterns = ['/api/*', '/auth/*', '/webhooks/*'] as const;

/**
 * What the page reads from `/config.json` at start: where to sign in and where the API is. Written at deploy
 * (the values are only known then); locally the runtime serves its own.
 */
export interface DashboardRuntimeConfig {
  /** The OAuth authorization server: `<authority>/oauth2/authorize`, `/oauth2/token`, `/oauth2/revoke`, `/logout`. */
  readonly authority: string;
  readonly clientId: string;
  readonly scopes: string;
  /** Where the API is: '' means this same origin. */
  readonly apiBase: string;
  /** Shown on the sign-in screen: 'cognito' or 'local'. */
  readonly signIn: 'cognito';
}

export interface DashboardHostingProps {
  readonly httpApi: apigw.HttpApi;
  /** The managed login domain (`https://<prefix>.auth.<region>.amazoncognito.com`): the page calls its token endpoint. */
  readonly authDomainUrl: string;
  /** A WAF web ACL (CLOUDFRONT scope) to attach, if the deployment has one. */
  readonly webAclArn?: string | undefined;
  /** Whether `webAclArn` holds the gateway's own rate rule, which exists only where the stack is deployed in us-east-1. */
  readonly webAclOnlyInUsEast1?: boolean;
  /** The header the distribution adds to every API request: the API refuses requests without it (lib/origin-verification.ts). */
  readonly originHeader: { readonly name: string; readonly value: string };
}

/**
 * The dashboard, deployed: a private S3 bucket read by CloudFront through origin access control, and the HTTP
 * API behind the same distribution for `/api/*`, `/auth/*` and `/webhooks/*`. One address for everything: the
 * page calls its own origin (no CORS to configure or get wrong), and the webhook and OAuth callback addresses
 * users copy into the platforms are that same address.
 */
export class DashboardHosting extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  /** `https://<id>.cloudfront.net`, no trailing slash. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: DashboardHostingProps) {
    super(scope, id);

    this.bucket = new s3.Bucket(this, 'Files', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // Only copies of dashboard/ live here: a new deploy writes them again.
      removalPolicy: RemovalPolicy.DESTROY,
      autoDeleteObjects: true,
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'The bucket holds only the public dashboard files (HTML, CSS, scripts, config with no secret), read by CloudFront alone through origin access control; the API calls, where account data moves, are logged by the HTTP API access logs.',
    });

    const apiOrigin = new origins.HttpOrigin(`${props.httpApi.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
      // API Gateway answers within 30 s; so does the API handler.
      readTimeout: Duration.seconds(30),
      // Overwrites a viewer's header of the same name; the value is a dynamic reference, resolved at deploy.
      customHeaders: { [props.originHeader.name]: props.originHeader.value },
    });
    const apiBehavior: cloudfront.BehaviorOptions = {
      origin: apiOrigin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      // Never cached; every header but Host (API Gateway routes on its own host name), including Authorization,
      // and every query string (the OAuth callbacks' code and state) reach the API as sent.
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    };

    const securityHeaders = new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Dashboard: CSP (own origin and the sign-in domain only), HSTS, no framing, no sniffing, no referrer',
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: [
            "default-src 'self'",
            `connect-src 'self' ${props.authDomainUrl}`,
            "img-src 'self' data:",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            "form-action 'self'",
          ].join('; '),
          override: true,
        },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        contentTypeOptions: { override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Integration gateway: the dashboard, its API, OAuth callbacks and webhooks on one address',
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: securityHeaders,
        compress: true,
      },
      additionalBehaviors: Object.fromEntries(apiPathPatterns.map((pattern) => [pattern, apiBehavior])),
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      ...(props.webAclArn ? { webAclId: props.webAclArn } : {}),
    });
    this.url = `https://${this.distribution.distributionDomainName}`;

    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR1',
      reason: "Customers' users sign in from anywhere and the platforms' webhooks come from their own regions: a country allow-list would refuse them.",
    });
    if (!props.webAclArn || props.webAclOnlyInUsEast1) Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR2',
      reason:
        'The gateway\'s own web ACL (a rate rule per client address) exists only where the stack is deployed in us-east-1, or is switched off with -c wafRateRule=false; without it every API route is throttled on its own, only reachable through this distribution, and authenticates (JWT, API key, HMAC, Basic, single-use OAuth state) but the public OpenAPI document, and the bucket serves static files only. Attach a web ACL made in us-east-1 with -c webAclArn.',
    });
    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR3',
      reason:
        'API requests are logged by the HTTP API access logs (route, status, latency, never the query string that carries OAuth codes); the rest is reads of public static files, not worth a logging bucket per deployment.',
    });
    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR4',
      reason:
        "The distribution uses CloudFront's default *.cloudfront.net certificate, whose viewer policy CloudFront fixes; browsers and the platforms negotiate TLS 1.2 or 1.3 with it. A custom domain brings its own certificate and TLSv1.2_2021.",
    });
  }

  /** Uploads dashboard/ and the runtime config, and clears CloudFront's copies so the new files are served at once. */
  publish(config: DashboardRuntimeConfig): s3deploy.BucketDeployment {
    const deployment = new s3deploy.BucketDeployment(this, 'Publish', {
      sources: [s3deploy.Source.asset(dashboardDirectory), s3deploy.Source.jsonData('config.json', config)],
      destinationBucket: this.bucket,
      distribution: this.distribution,
      distributionPaths: ['/*'],
      // Unhashed file names: browsers revalidate (ETag) on every load, so a deploy is seen at once.
      cacheControl: [s3deploy.CacheControl.noCache()],
      memoryLimit: 256,
    });
    // CDK's own deployment function (one per stack), which copies the files at deploy time and never runs after.
    const copier = deployment.handlerRole.node.scope!;
    // cdk-nag names the bootstrap assets bucket with the stack's account and region when they are known.
    const stack = Stack.of(this);
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
    const assetsBucket = `cdk-${DefaultStackSynthesizer.DEFAULT_QUALIFIER}-assets-${account}-${region}`;
    const reasons: Record<string, string> = {
      'AwsSolutions-L1': "CDK's BucketDeployment function: its runtime is chosen by aws-cdk-lib (no property to set it) and moves with CDK upgrades; it runs only during deploys.",
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]':
        "CDK's BucketDeployment function writes its own logs with the basic execution policy, which aws-cdk-lib attaches; it runs only during deploys.",
      'AwsSolutions-IAM5[Action::s3:GetObject*]': 'Reads the dashboard asset from the CDK assets bucket and writes it to the dashboard bucket (CDK grant variants).',
      'AwsSolutions-IAM5[Action::s3:GetBucket*]': 'Reads the location of the CDK assets bucket and the dashboard bucket (CDK grant variants).',
      'AwsSolutions-IAM5[Action::s3:List*]': 'Lists the dashboard bucket to remove files no longer in dashboard/ (CDK grant variants).',
      'AwsSolutions-IAM5[Action::s3:DeleteObject*]': 'Removes files of the dashboard bucket that are no longer in dashboard/ (prune), and nothing else.',
      'AwsSolutions-IAM5[Action::s3:Abort*]': 'Aborts its own failed multipart uploads to the dashboard bucket (CDK grant variants).',
      [`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::${assetsBucket}/*]`]:
        "The CDK bootstrap assets bucket, where `cdk deploy` uploads the zipped dashboard files; the function reads its one object.",
      [`AwsSolutions-IAM5[Resource::${nagArnOf(this.bucket)}/*]`]: "The dashboard bucket's objects: the function replaces them with the new files.",
      'AwsSolutions-IAM5[Resource::*]':
        'cloudfront:CreateInvalidation and GetInvalidation, which CDK grants on every distribution; they only clear cached copies so the new files are served.',
    };
    for (const [id, reason] of Object.entries(reasons)) Validations.of(copier).acknowledge({ id, reason });
    return deployment;
  }
}
