/**
 * `npm run state-machines`: writes local/conversation-state-machines.json, the conversation
 * lifecycle and poller fleet definitions exactly as the stack deploys them, for the local runtime
 * (aws-local-stepfunctions). Run it after changing lib/conversations.ts; the infra test fails
 * until you do.
 */
import { writeFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { IntegrationGatewayStack } from '../lib/gateway-stack';
import { DEFINITIONS_FILE, definitionsFromTemplate } from '../local/state-machine-definitions';

const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new IntegrationGatewayStack(app, 'IntegrationGateway');
const definitions = definitionsFromTemplate(app.synth().getStackByName(stack.stackName).template);
writeFileSync(DEFINITIONS_FILE, `${JSON.stringify(definitions, null, 2)}\n`);
process.stdout.write(`wrote ${DEFINITIONS_FILE.pathname}\n`);
