import { App, type Environment, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { IntegrationGatewayStack } from './gateway-stack';

export interface GatewayAppOptions {
  /** Context on top of cdk.json's (the CLI passes cdk.json itself); tests skip bundling with `aws:cdk:bundling-stacks: []`. */
  readonly context?: Record<string, unknown>;
  /** @default account and region from CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION when set, else environment-agnostic */
  readonly env?: Environment;
  /** @default 'IntegrationGateway' */
  readonly stackName?: string;
}

export interface GatewayApp {
  readonly app: App;
  readonly stack: IntegrationGatewayStack;
  /** The cdk-nag pack registered on the app (tests call `validateScope` on it). */
  readonly securityChecks: AwsSolutionsChecks;
}

/**
 * The CDK app with its one stack, checked by cdk-nag's AwsSolutions rules at every synth: an unacknowledged
 * error stops the synth. Used by bin/app.ts and by the tests.
 */
export function createGatewayApp(options: GatewayAppOptions = {}): GatewayApp {
  const app = new App(options.context ? { context: options.context } : {});
  const env = options.env ?? defaultEnvironment();
  const stack = new IntegrationGatewayStack(app, options.stackName ?? 'IntegrationGateway', {
    ...(env ? { env } : {}),
    description: 'Integration gateway: connectors for messaging, data, billing and payment platforms',
  });
  const securityChecks = new AwsSolutionsChecks(app);
  Validations.of(app).addPlugins(securityChecks);
  return { app, stack, securityChecks };
}

/** Offline synth must work without credentials: only pin the environment when the CLI knows it. */
function defaultEnvironment(): Environment | undefined {
  const account = process.env.CDK_DEFAULT_ACCOUNT;
  const region = process.env.CDK_DEFAULT_REGION;
  return account || region ? { account, region } : undefined;
}
