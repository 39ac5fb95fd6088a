import { readFileSync } from 'node:fs';
import { type PolicyViolation, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../lib/app';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
const testContext = { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] };

/** One line per finding, so a failing test shows what to fix or acknowledge. */
function describeFindings(violations: PolicyViolation[]): string {
  return violations
    .flatMap((v) => v.violatingResources.map((r) => `${v.severity} ${v.ruleName} at ${r.constructPath}: ${v.description}`))
    .join('\n');
}

function acknowledgementsUnder(root: IConstruct): Array<{ path: string; id: string; reason: string }> {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({ path: construct.node.path, id, reason })),
      ),
  );
}

describe('cdk-nag AwsSolutions checks', () => {
  it('the app synthesizes with zero unacknowledged findings, errors or warnings', () => {
    const { app, securityChecks } = createGatewayApp({ context: testContext });
    // In a test, a failing validation plugin makes synth throw with the full report.
    expect(() => app.synth()).not.toThrow();
    const report = securityChecks.validateScope(app);
    expect(report.violations, describeFindings(report.violations)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('also with a concrete account and region, as `cdk deploy` synthesizes it', () => {
    const { app, securityChecks } = createGatewayApp({ context: testContext, env: { account: '123456789012', region: 'eu-west-1' } });
    expect(() => app.synth()).not.toThrow();
    expect(describeFindings(securityChecks.validateScope(app).violations)).toBe('');
  });

  it('does flag what it should (a plain queue added to the stack)', () => {
    const { app, stack, securityChecks } = createGatewayApp({ context: testContext });
    new sqs.Queue(stack, 'UncheckedQueue', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    const found = securityChecks.validateScope(app).violations.map((v) => v.ruleName);
    expect(found).toEqual(expect.arrayContaining(['AwsSolutions-SQS2', 'AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
  });

  it('every acknowledgement sits on a specific construct, with a specific reason', () => {
    const { app, stack } = createGatewayApp({ context: testContext });
    const acknowledgements = acknowledgementsUnder(app);
    expect(acknowledgements.length).toBeGreaterThan(0);
    for (const { path, id, reason } of acknowledgements) {
      expect(path, `${id} is acknowledged for a whole stack or app`).not.toBe(stack.node.path);
      expect(path).not.toBe('');
      expect(id).toMatch(/^(Annotation::)?AwsSolutions-[A-Z]+\d+(\[.+\])?$/);
      expect(reason.length, `${path} ${id}: reason too short`).toBeGreaterThanOrEqual(40);
    }
    // Broad acknowledgements (a whole rule with no finding id) are limited to rules whose findings have no id.
    const wholeRules = new Set(acknowledgements.filter(({ id }) => !id.includes('[')).map(({ id }) => id.replace(/^Annotation::/, '')));
    expect([...wholeRules].sort()).toEqual([
      'AwsSolutions-APIG4',
      // The dashboard's distribution (geo restriction, web ACL, access logs, default certificate) and bucket (access logs).
      'AwsSolutions-CFR1',
      'AwsSolutions-CFR2',
      'AwsSolutions-CFR3',
      'AwsSolutions-CFR4',
      'AwsSolutions-COG8',
      // CDK's own BucketDeployment function, whose runtime aws-cdk-lib picks.
      'AwsSolutions-L1',
      'AwsSolutions-S1',
      // The origin header's secret: the distribution holds the value resolved at deploy, so no scheduled rotation.
      'AwsSolutions-SMG4',
      'AwsSolutions-SQS3',
    ]);
  });
});
