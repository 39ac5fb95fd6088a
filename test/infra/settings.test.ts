import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../lib/app';
import { GatewaySettings, readGatewaySettings } from '../../lib/settings';
import { GatewayEnvironment } from '../../shared/config';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { app: string; context: Record<string, unknown> };
const settingsFrom = (context: Record<string, unknown>) => readGatewaySettings(new App({ context }));

describe('deployment settings (CDK context)', () => {
  it('cdk.json lists every setting, with the same defaults as the code and shared/config.ts', () => {
    expect(cdkJson.app).toBe('npx tsx bin/app.ts');
    expect(Object.keys(cdkJson.context).sort()).toEqual(Object.keys(GatewaySettings.shape).sort());
    const defaults = settingsFrom({});
    expect(settingsFrom(cdkJson.context)).toEqual(defaults);

    const platformDefaults = GatewayEnvironment.parse({});
    expect(defaults).toMatchObject({
      logRetentionDays: 30,
      apiThrottleRate: 200,
      apiThrottleBurst: 400,
      paymentApiBaseUrl: platformDefaults.PAYMENT_API_BASE_URL,
      billingBaseUrlTemplate: platformDefaults.BILLING_BASE_URL_TEMPLATE,
      dataLoginUrl: platformDefaults.DATA_LOGIN_URL,
      dataSandboxLoginUrl: platformDefaults.DATA_SANDBOX_LOGIN_URL,
    });
    expect(defaults.alarmEmail).toBeUndefined();
    expect(defaults.baseUrl).toBeUndefined();
  });

  it('accepts command-line strings (-c key=value)', () => {
    expect(settingsFrom({ logRetentionDays: '14', apiThrottleRate: '50', apiThrottleBurst: '100' })).toMatchObject({
      logRetentionDays: 14,
      apiThrottleRate: 50,
      apiThrottleBurst: 100,
    });
  });

  it.each([
    ['logRetentionDays', 31],
    ['alarmEmail', 'not-an-address'],
    ['baseUrl', 'http://gateway.example.com'],
    ['paymentApiBaseUrl', 'http://127.0.0.1:4010'],
    ['billingBaseUrlTemplate', 'https://billing.example.com'],
    ['apiThrottleBurst', -1],
    ['tableWarmWriteUnits', 1000],
    ['tableWarmWriteUnits', 50_000],
    ['authDomainPrefix', 'Has-Capitals'],
    ['authDomainPrefix', 'my-cognito-login'],
    ['webAclArn', 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/x/y'],
  ])('stops the synth on a bad %s, naming it', (key, value) => {
    expect(() => settingsFrom({ [key]: value })).toThrow(key);
  });

  it('alarmEmail subscribes the address to the alarm topic; baseUrl becomes BASE_URL and the ApiUrl output; tableWarmWriteUnits pre-warms the table', () => {
    const { stack } = createGatewayApp({
      context: {
        ...cdkJson.context,
        'aws:cdk:bundling-stacks': [],
        alarmEmail: 'oncall@example.com',
        baseUrl: 'https://gateway.example.com',
        apiThrottleRate: 20,
        apiThrottleBurst: 40,
        logRetentionDays: 90,
        tableWarmWriteUnits: '20000',
      },
    });
    const template = Template.fromStack(stack);
    // Pre-warmed: the table and its index, which every record with an email writes too.
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      WarmThroughput: { WriteUnitsPerSecond: 20000 },
      GlobalSecondaryIndexes: [Match.objectLike({ WarmThroughput: { WriteUnitsPerSecond: 20000 } })],
    });
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 } });
    template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    expect(template.toJSON().Outputs.ApiUrl.Value).toBe('https://gateway.example.com');
    expect(template.toJSON().Outputs.DashboardUrl.Value).toBe('https://gateway.example.com/');
    const functions = template.findResources('AWS::Lambda::Function') as Record<string, { Properties: { Environment?: { Variables: Record<string, unknown> } } }>;
    const withBaseUrl = Object.values(functions).filter((fn) => fn.Properties.Environment?.Variables.BASE_URL === 'https://gateway.example.com');
    expect(withBaseUrl).toHaveLength(2);
    const withDashboardUrl = Object.values(functions).filter((fn) => fn.Properties.Environment?.Variables.DASHBOARD_URL === 'https://gateway.example.com/');
    expect(withDashboardUrl).toHaveLength(1);
  });

});
