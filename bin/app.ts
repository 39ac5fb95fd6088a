// The CDK app (`npx cdk synth`, `npx cdk deploy`): cdk.json runs this file.
import { createGatewayApp } from '../lib/app';

createGatewayApp();
