import { readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../lib/app';
import { apiPathPatterns } from '../../lib/dashboard-hosting';
import { OPERATOR_GROUP } from '../../shared/api/caller';

/**
 * The deployed dashboard: files in a private bucket read by CloudFront through origin access control, the API
 * behind the same distribution, a runtime config written at deploy, and Cognito managed login with the
 * authorization code flow for a public client.
 */

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}
let resources: Record<string, Resource>;
let outputs: Record<string, { Value: unknown }>;
let template: Template;

beforeAll(() => {
  const { stack } = createGatewayApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  template = Template.fromStack(stack);
  ({ Resources: resources, Outputs: outputs } = template.toJSON() as { Resources: Record<string, Resource>; Outputs: Record<string, { Value: unknown }> });
});

function only(type: string): [string, Record<string, any>] {
  const found = Object.entries(resources).filter(([, r]) => r.Type === type);
  expect(found, type).toHaveLength(1);
  return [found[0]![0], found[0]![1].Properties];
}
const references = (value: unknown, logicalId: string) => JSON.stringify(value).includes(`"${logicalId}"`);

// CloudFront's managed policies, by their fixed ids.
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

describe('dashboard hosting', () => {
  it('keeps the files in a private, TLS-only bucket that only this distribution may read (origin access control)', () => {
    const [bucketId, bucket] = only('AWS::S3::Bucket');
    expect(bucket.PublicAccessBlockConfiguration).toEqual({ BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true });
    expect(bucket.BucketEncryption).toBeDefined();
    const [distributionId, distribution] = only('AWS::CloudFront::Distribution');
    const [oacId, oac] = only('AWS::CloudFront::OriginAccessControl');
    expect(oac.OriginAccessControlConfig).toMatchObject({ OriginAccessControlOriginType: 's3', SigningBehavior: 'always', SigningProtocol: 'sigv4' });

    const config = distribution.DistributionConfig;
    const s3Origin = config.Origins.find((o: { DomainName: unknown }) => references(o.DomainName, bucketId));
    expect(references(s3Origin.OriginAccessControlId, oacId)).toBe(true);
    expect(config.DefaultCacheBehavior).toMatchObject({ TargetOriginId: s3Origin.Id, ViewerProtocolPolicy: 'redirect-to-https', AllowedMethods: ['GET', 'HEAD'] });
    expect(config.DefaultRootObject).toBe('index.html');

    const [, policy] = only('AWS::S3::BucketPolicy');
    const statements = policy.PolicyDocument.Statement as Array<Record<string, any>>;
    const cloudFrontRead = statements.find((s) => s.Principal?.Service === 'cloudfront.amazonaws.com')!;
    expect(cloudFrontRead).toMatchObject({ Effect: 'Allow', Action: 's3:GetObject' });
    expect(references(cloudFrontRead.Condition.StringEquals['AWS:SourceArn'], distributionId)).toBe(true);
    expect(statements.some((s) => s.Effect === 'Deny' && JSON.stringify(s.Condition).includes('aws:SecureTransport'))).toBe(true);
  });

  it('sends /api/*, /auth/* and /webhooks/* to the HTTP API over HTTPS, uncached, with every header but Host', () => {
    const [, distribution] = only('AWS::CloudFront::Distribution');
    const [apiId] = only('AWS::ApiGatewayV2::Api');
    const config = distribution.DistributionConfig;
    const apiOrigin = config.Origins.find((o: { DomainName: unknown }) => references(o.DomainName, apiId));
    expect(apiOrigin.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] });
    const behaviors = config.CacheBehaviors as Array<Record<string, unknown>>;
    expect(behaviors.map((b) => b.PathPattern).sort()).toEqual([...apiPathPatterns].sort());
    for (const behavior of behaviors) {
      expect(behavior).toMatchObject({
        TargetOriginId: apiOrigin.Id,
        ViewerProtocolPolicy: 'https-only',
        CachePolicyId: CACHING_DISABLED,
        OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
      });
      expect(behavior.AllowedMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS']));
    }
  });

  it("serves the page with a CSP that allows only its own origin and the sign-in domain, HSTS, and no framing", () => {
    const [policyId, policy] = only('AWS::CloudFront::ResponseHeadersPolicy');
    const [, distribution] = only('AWS::CloudFront::Distribution');
    expect(distribution.DistributionConfig.DefaultCacheBehavior.ResponseHeadersPolicyId).toEqual({ Ref: policyId });
    const headers = policy.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    const csp = JSON.stringify(headers.ContentSecurityPolicy.ContentSecurityPolicy);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self' https://");
    expect(csp).toContain('.amazoncognito.com');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(headers.FrameOptions.FrameOption).toBe('DENY');
    expect(headers.StrictTransportSecurity.AccessControlMaxAgeSec).toBeGreaterThanOrEqual(31_536_000);
  });

  it('publishes dashboard/ with a config.json naming the sign-in domain and the app client, and clears the cache', () => {
    const [, deployment] = only('Custom::CDKBucketDeployment');
    const [bucketId] = only('AWS::S3::Bucket');
    const [distributionId] = only('AWS::CloudFront::Distribution');
    const [clientId] = only('AWS::Cognito::UserPoolClient');
    expect(deployment.DestinationBucketName).toEqual({ Ref: bucketId });
    expect(deployment.DistributionId).toEqual({ Ref: distributionId });
    expect(deployment.DistributionPaths).toEqual(['/*']);
    expect(deployment.SourceObjectKeys).toHaveLength(2); // dashboard/ and config.json
    // config.json's deploy-time values: the app client id and the managed login domain.
    const markers = JSON.stringify(deployment.SourceMarkers);
    expect(references(deployment.SourceMarkers, clientId)).toBe(true);
    expect(markers).toContain('integration-gateway'); // the domain prefix (…auth.<region>.amazoncognito.com)
    expect(markers).toContain('"Ref":"AWS::Region"');
    expect(JSON.stringify(deployment.SystemMetadata)).toContain('no-cache');
  });

  it('outputs the dashboard address (the distribution) and the command that invites the first operator', () => {
    const [distributionId] = only('AWS::CloudFront::Distribution');
    const [poolId] = only('AWS::Cognito::UserPool');
    expect(references(outputs.DashboardUrl!.Value, distributionId)).toBe(true);
    const invite = JSON.stringify(outputs.InviteFirstOperator!.Value);
    expect(invite).toContain('aws cognito-idp admin-create-user');
    expect(invite).toContain(`--group-name ${OPERATOR_GROUP}`);
    expect(references(outputs.InviteFirstOperator!.Value, poolId)).toBe(true);
  });
});

describe('dashboard sign-in (Cognito managed login)', () => {
  it('has a Cognito domain with the newer managed login, and a style for the app client', () => {
    const [poolId] = only('AWS::Cognito::UserPool');
    const [clientId] = only('AWS::Cognito::UserPoolClient');
    const [, domain] = only('AWS::Cognito::UserPoolDomain');
    expect(domain.ManagedLoginVersion).toBe(2);
    expect(domain.UserPoolId).toEqual({ Ref: poolId });
    expect(JSON.stringify(domain.Domain)).toContain('integration-gateway');
    const [, style] = only('AWS::Cognito::ManagedLoginBranding');
    expect(style).toMatchObject({ UserPoolId: { Ref: poolId }, ClientId: { Ref: clientId }, UseCognitoProvidedValues: true });
  });

  it('the app client uses the authorization code flow only, with no secret, and the dashboard as its only callback and sign-out address', () => {
    const [, client] = only('AWS::Cognito::UserPoolClient');
    const [distributionId] = only('AWS::CloudFront::Distribution');
    expect(client.GenerateSecret ?? false).toBe(false);
    expect(client.AllowedOAuthFlowsUserPoolClient).toBe(true);
    expect(client.AllowedOAuthFlows).toEqual(['code']);
    expect(client.AllowedOAuthScopes).toEqual(expect.arrayContaining(['openid']));
    expect(client.SupportedIdentityProviders).toEqual(['COGNITO']);
    expect(client.EnableTokenRevocation).toBe(true);
    const dashboardUrl = { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, '/']] };
    expect(client.CallbackURLs).toEqual([dashboardUrl]);
    expect(client.LogoutURLs).toEqual([dashboardUrl]);
    // No password grant from the browser: SRP and refresh only.
    expect(client.ExplicitAuthFlows.sort()).toEqual(['ALLOW_REFRESH_TOKEN_AUTH', 'ALLOW_USER_SRP_AUTH']);
  });

  it('invites users (no self sign-up) with an email that names the dashboard address', () => {
    const [, pool] = only('AWS::Cognito::UserPool');
    const [distributionId] = only('AWS::CloudFront::Distribution');
    expect(pool.AdminCreateUserConfig.AllowAdminCreateUserOnly).toBe(true);
    const invitation = pool.AdminCreateUserConfig.InviteMessageTemplate;
    expect(references(invitation.EmailMessage, distributionId)).toBe(true);
    expect(JSON.stringify(invitation.EmailMessage)).toContain('{####}');
  });

  it('the API authorizer accepts ID tokens of that app client only', () => {
    const [, authorizer] = only('AWS::ApiGatewayV2::Authorizer');
    const [clientId] = only('AWS::Cognito::UserPoolClient');
    expect(authorizer.JwtConfiguration.Audience).toEqual([{ Ref: clientId }]);
  });
});

describe('deployment settings for the dashboard', () => {
  it('authDomainPrefix names the sign-in domain; webAclArn attaches a web ACL', () => {
    const webAclArn = 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/gateway/abc';
    const { stack } = createGatewayApp({
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], authDomainPrefix: 'acme-gateway', webAclArn },
    });
    const custom = Template.fromStack(stack);
    custom.hasResourceProperties('AWS::Cognito::UserPoolDomain', { Domain: 'acme-gateway' });
    custom.hasResourceProperties('AWS::CloudFront::Distribution', { DistributionConfig: { WebACLId: webAclArn } });
    const csp = JSON.stringify(custom.findResources('AWS::CloudFront::ResponseHeadersPolicy'));
    expect(csp).toContain('https://acme-gateway.auth.');
  });
});
