/**
 * `npm run iam-policies`: writes local/iam/role-policies.json, each function's IAM statements and
 * the KMS key policies exactly as the stack deploys them (ARNs made local), for the local runtime,
 * the tests and the benchmarks to enforce on every AWS call. Run it after changing a grant in
 * lib/; the infra test fails until you do.
 */
import { writeFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { IntegrationGatewayStack } from '../lib/gateway-stack';
import { constructPaths } from '../local/iam/construct-paths';
import { ROLE_POLICIES_FILE, policiesFromTemplate, type Template } from '../local/iam/role-policies';

const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new IntegrationGatewayStack(app, 'IntegrationGateway');
const policies = policiesFromTemplate(app.synth().getStackByName(stack.stackName).template as Template, constructPaths(stack));
writeFileSync(ROLE_POLICIES_FILE, `${JSON.stringify(policies, null, 2)}\n`);
process.stdout.write(`wrote ${ROLE_POLICIES_FILE.pathname}\n`);
