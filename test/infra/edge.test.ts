import { readFileSync } from 'node:fs';
import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeThrottle, routeThrottles } from '../../lib/api';
import { createGatewayApp } from '../../lib/app';
import { handlerNames } from '../../lib/gateway-function';
import { ORIGIN_HEADER } from '../../shared/origin/origin-check';

/**
 * The API only through the distribution (docs/tenants.md): the origin header the distribution
 * sends (a Secrets Manager value, by reference only), the functions that check it and may read it,
 * each route's own throttle, and the WAF rate rule per client address, on by default and switched
 * off by `-c wafRateRule=false`.
 */
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
const synth = (context: Record<string, unknown> = {}) => {
  const built = createGatewayApp({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context } });
  return { ...built, template: Template.fromStack(built.stack) };
};
type Json = Record<string, unknown>;
const ofType = (template: Template, type: string) => Object.entries(template.toJSON().Resources as Record<string, Json>).filter(([, r]) => r.Type === type);
const distributionConfig = (template: Template) => (ofType(template, 'AWS::CloudFront::Distribution')[0]![1].Properties as { DistributionConfig: Json }).DistributionConfig;
const apiOrigin = (template: Template) =>
  (distributionConfig(template).Origins as Array<{ CustomOriginConfig?: unknown; OriginCustomHeaders?: Array<{ HeaderName: string; HeaderValue: unknown }> }>).find((origin) => origin.CustomOriginConfig)!;

let template: Template;
let stack: Stack;
beforeAll(() => {
  ({ template, stack } = synth());
});

describe('the origin header', () => {
  it('the distribution sends it to the API, its value a dynamic reference to a generated secret: no value in the template', () => {
    const [secretId, secret] = ofType(template, 'AWS::SecretsManager::Secret')[0]!;
    expect((secret.Properties as Json).GenerateSecretString).toMatchObject({ PasswordLength: 48, ExcludePunctuation: true });
    expect((secret.Properties as Json).SecretString).toBeUndefined();
    const headers = apiOrigin(template).OriginCustomHeaders!;
    expect(headers).toHaveLength(1);
    expect(headers[0]!.HeaderName).toBe(ORIGIN_HEADER);
    expect(headers[0]!.HeaderValue).toEqual({ 'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}']] });
    // The bucket's origin gets no such header.
    for (const origin of distributionConfig(template).Origins as Json[]) if (!origin.CustomOriginConfig) expect(origin.OriginCustomHeaders).toBeUndefined();
  });

  it('every function behind a route is told where the secret is, and may read it (GetSecretValue on it alone); no other function may', () => {
    const [secretId] = ofType(template, 'AWS::SecretsManager::Secret')[0]!;
    const functions = ofType(template, 'AWS::Lambda::Function').filter(([, fn]) => String((fn.Properties as Json).Description).startsWith('functions/'));
    expect(functions).toHaveLength(handlerNames.length);
    const readers = new Set<string>();
    for (const [, policy] of ofType(template, 'AWS::IAM::Policy')) {
      const properties = policy.Properties as { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } };
      for (const statement of properties.PolicyDocument.Statement) {
        if (!JSON.stringify(statement.Action).includes('secretsmanager:')) continue;
        expect(statement.Action).toBe('secretsmanager:GetSecretValue');
        expect(statement.Resource).toEqual({ Ref: secretId });
        for (const role of properties.Roles) readers.add(role.Ref);
      }
    }
    const routeHandlers = ['api', 'oauth-callback', 'webhook-receiver'];
    for (const [, fn] of functions) {
      const properties = fn.Properties as { Description: string; Role: { 'Fn::GetAtt': [string, string] }; Environment: { Variables: Json } };
      const handler = /^functions\/([\w-]+)\.ts:/.exec(properties.Description)![1]!;
      const serves = routeHandlers.includes(handler);
      expect(properties.Environment.Variables.ORIGIN_SECRET_ARN, handler).toEqual(serves ? { Ref: secretId } : undefined);
      expect(readers.has(properties.Role['Fn::GetAtt'][0]), handler).toBe(serves);
    }
  });
});

describe('route throttles', () => {
  const stage = () => ofType(template, 'AWS::ApiGatewayV2::Stage')[0]![1] as { Properties: { RouteSettings: Record<string, Json>; DefaultRouteSettings: Json }; DependsOn: string[] };
  const routeKeys = () => ofType(template, 'AWS::ApiGatewayV2::Route').map(([id, route]) => [id, (route.Properties as { RouteKey: string }).RouteKey] as const);

  it('every route has its own throttle: /webhooks/*, /auth/*, the playbook API, the rest of /api/v1', () => {
    const settings = stage().Properties.RouteSettings;
    expect(Object.keys(settings).sort()).toEqual(routeKeys().map(([, key]) => key).sort());
    expect(settings['POST /webhooks/payments']).toEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    expect(settings['POST /webhooks/billing']).toEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    expect(settings['GET /auth/crmmessaging/callback']).toEqual({ ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 });
    expect(settings['GET /auth/crmdata/callback']).toEqual({ ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 });
    expect(settings['GET /api/v1/playbook/{proxy+}']).toEqual({ ThrottlingRateLimit: 300, ThrottlingBurstLimit: 600 });
    expect(settings['POST /api/v1/playbook/{proxy+}']).toEqual({ ThrottlingRateLimit: 300, ThrottlingBurstLimit: 600 });
    expect(settings['ANY /api/v1/{proxy+}']).toEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    expect(settings['GET /api/v1/openapi.json']).toEqual({ ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 });
    // The stage's default stays for any route added without one.
    expect(stage().Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 });
  });

  it('the stage is made after its routes (API Gateway refuses settings naming a route that does not exist)', () => {
    for (const [id] of routeKeys()) expect(stage().DependsOn).toContain(id);
  });

  it('routeThrottle takes the first prefix that matches', () => {
    expect(routeThrottle('/api/v1/playbook/{proxy+}')).toBe(routeThrottles.find((entry) => entry.prefix === '/api/v1/playbook/')!.throttle);
    expect(routeThrottle('/api/v1/{proxy+}')).toBe(routeThrottles.find((entry) => entry.prefix === '/api/v1/')!.throttle);
    expect(routeThrottle('/elsewhere')).toBeUndefined();
  });
});

describe('the WAF rate rule per client address', () => {
  it('is on by default: a CLOUDFRONT web ACL made only in us-east-1, attached to the distribution there', () => {
    const [aclId, acl] = ofType(template, 'AWS::WAFv2::WebACL')[0]!;
    const properties = acl.Properties as { Scope: string; DefaultAction: Json; Rules: Array<{ Name: string; Action: Json; Statement: { RateBasedStatement: Json } }> };
    expect(properties.Scope).toBe('CLOUDFRONT');
    expect(properties.DefaultAction).toEqual({ Allow: {} });
    expect(properties.Rules).toHaveLength(1);
    expect(properties.Rules[0]!.Action).toEqual({ Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'RateLimited' } } });
    const rate = properties.Rules[0]!.Statement.RateBasedStatement;
    expect(rate).toMatchObject({ AggregateKeyType: 'IP', Limit: 2000, EvaluationWindowSec: 300 });
    // The platforms' server-to-server routes are not counted per address.
    expect(JSON.stringify(rate.ScopeDownStatement)).toContain('"NotStatement"');
    for (const exempt of ['/webhooks/', '/api/v1/playbook/']) expect(JSON.stringify(rate.ScopeDownStatement)).toContain(`"SearchString":"${exempt}"`);
    const condition = acl.Condition as string;
    expect(template.toJSON().Conditions[condition]).toEqual({ 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'us-east-1'] });
    expect(distributionConfig(template).WebACLId).toEqual({ 'Fn::If': [condition, { 'Fn::GetAtt': [aclId, 'Arn'] }, { Ref: 'AWS::NoValue' }] });
    expect(stack.node.tryGetContext('wafRateRule')).toBe(true);
  });

  it('takes its limit from -c wafRateLimit', () => {
    const { template: limited } = synth({ wafRateLimit: '600' });
    const acl = ofType(limited, 'AWS::WAFv2::WebACL')[0]![1].Properties as { Rules: Array<{ Statement: { RateBasedStatement: Json } }> };
    expect(acl.Rules[0]!.Statement.RateBasedStatement.Limit).toBe(600);
    expect(() => synth({ wafRateLimit: '5' })).toThrow(/wafRateLimit/);
  });

  it('-c wafRateRule=false: no web ACL, none attached, and still nothing for cdk-nag to report', () => {
    const { app, template: off, securityChecks } = synth({ wafRateRule: 'false' });
    expect(ofType(off, 'AWS::WAFv2::WebACL')).toHaveLength(0);
    expect(distributionConfig(off).WebACLId).toBeUndefined();
    expect(apiOrigin(off).OriginCustomHeaders).toHaveLength(1);
    expect(securityChecks.validateScope(app).violations).toEqual([]);
  });

  it('-c webAclArn: that web ACL is attached instead, and the gateway makes none', () => {
    const arn = 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/own/11111111-2222-3333-4444-555555555555';
    const { template: own } = synth({ webAclArn: arn });
    expect(ofType(own, 'AWS::WAFv2::WebACL')).toHaveLength(0);
    expect(distributionConfig(own).WebACLId).toBe(arn);
  });
});
