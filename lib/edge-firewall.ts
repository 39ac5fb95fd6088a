import { Aws, CfnCondition, Fn } from 'aws-cdk-lib';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';

export interface EdgeFirewallProps {
  /** Requests one client address may make in five minutes before it is refused (WAF's least is 10). */
  readonly ratePerFiveMinutes: number;
  /** Paths the rule does not count: server-to-server callers whose addresses every account shares. */
  readonly exemptPathPrefixes: readonly string[];
}

/** The problem document WAF answers with (its custom responses cannot say application/problem+json, so application/json). */
const RATE_LIMITED_BODY = JSON.stringify({
  type: 'urn:integration-gateway:problem:rate-limited',
  title: 'Too many requests',
  status: 429,
  detail: 'Too many requests from this address.',
  remedy: 'Wait a few minutes and send again, spreading requests out.',
});

/**
 * A WAF web ACL for the distribution with one rate-based rule per client address. A CLOUDFRONT-scope web
 * ACL can only be created in us-east-1: the ACL is created under a condition on the deploying region, so the
 * one template works everywhere and only a us-east-1 deployment gets it (elsewhere: docs/tenants.md).
 * `webAclArn` is the distribution's `WebACLId`: the ACL's ARN in us-east-1, nothing elsewhere.
 */
export class EdgeFirewall extends Construct {
  readonly webAclArn: string;

  constructor(scope: Construct, id: string, props: EdgeFirewallProps) {
    super(scope, id);
    const inUsEast1 = new CfnCondition(this, 'InUsEast1', { expression: Fn.conditionEquals(Aws.REGION, 'us-east-1') });
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({ cloudWatchMetricsEnabled: true, metricName, sampledRequestsEnabled: true });
    const exempt: wafv2.CfnWebACL.StatementProperty[] = props.exemptPathPrefixes.map((prefix) => ({
      byteMatchStatement: { fieldToMatch: { uriPath: {} }, positionalConstraint: 'STARTS_WITH', searchString: prefix, textTransformations: [{ priority: 0, type: 'NONE' }] },
    }));
    const counted: wafv2.CfnWebACL.StatementProperty | undefined =
      exempt.length === 0 ? undefined : { notStatement: { statement: exempt.length === 1 ? exempt[0]! : { orStatement: { statements: exempt } } } };
    const acl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      description: 'Integration gateway: requests per client address',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('IntegrationGatewayEdge'),
      customResponseBodies: { RateLimited: { contentType: 'APPLICATION_JSON', content: RATE_LIMITED_BODY } },
      rules: [
        {
          name: 'PerClientAddress',
          priority: 0,
          action: { block: { customResponse: { responseCode: 429, customResponseBodyKey: 'RateLimited' } } },
          statement: {
            rateBasedStatement: {
              aggregateKeyType: 'IP',
              limit: props.ratePerFiveMinutes,
              evaluationWindowSec: 300,
              ...(counted ? { scopeDownStatement: counted } : {}),
            },
          },
          visibilityConfig: visibility('IntegrationGatewayPerClientAddress'),
        },
      ],
    });
    acl.cfnOptions.condition = inUsEast1;
    this.webAclArn = Fn.conditionIf(inUsEast1.logicalId, acl.attrArn, Aws.NO_VALUE).toString();
  }
}
