import { fileURLToPath } from 'node:url';
import { Validations, type Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { GatewayEnvironment } from '../shared/config';
import type { HandlerName } from '../shared/handler/function-settings';
import { lambdaBundling, leanRuntime } from './bundling';

// Every Lambda handler of the gateway (one file each in functions/), and the settings each one needs.
export { handlerNames, type HandlerName } from '../shared/handler/function-settings';

/** A variable a handler reads through shared/config.ts. */
export type GatewayVariable = keyof GatewayEnvironment;

const projectRoot = fileURLToPath(new URL('..', import.meta.url));

export interface GatewayFunctionProps {
  /** The file in functions/ (without `.ts`) whose `handler` export the function runs. */
  readonly handler: HandlerName;
  /** What the function is for, shown in the console after the file name. */
  readonly purpose: string;
  readonly timeout: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** Runs lean (lib/bundling.ts `leanRuntime`): no source maps, a small young generation. */
  readonly lean?: boolean;
  readonly logRetention: logs.RetentionDays;
}

/**
 * One gateway handler: Node.js 24 on arm64, bundled locally by esbuild (no Docker) as minified ESM with source
 * maps, traced by X-Ray, logging to its own log group.
 *
 * It has its own role with no AWS managed policy: the role may write to this log group only, and every other
 * permission is granted by the stack.
 */
export class GatewayFunction extends NodejsFunction {
  readonly handlerName: HandlerName;
  /** The function's own role; the stack adds each permission the handler needs. */
  readonly executionRole: iam.Role;

  constructor(scope: Construct, id: string, props: GatewayFunctionProps) {
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs functions/${props.handler}.ts`,
    });
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: props.logRetention });

    super(scope, id, {
      description: `functions/${props.handler}.ts: ${props.purpose}`,
      entry: `${projectRoot}functions/${props.handler}.ts`,
      handler: 'handler',
      projectRoot,
      depsLockFilePath: `${projectRoot}package-lock.json`,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role,
      logGroup,
      tracing: Tracing.ACTIVE,
      environment: {
        NODE_OPTIONS: props.lean ? leanRuntime.nodeOptions : '--enable-source-maps',
        GATEWAY_MODE: 'aws' satisfies GatewayEnvironment['GATEWAY_MODE'],
      },
      // The same esbuild settings as the bundle benchmark (lib/bundling.ts), plus ESM output and source maps.
      bundling: {
        format: OutputFormat.ESM,
        target: lambdaBundling.target,
        minify: lambdaBundling.minify,
        mainFields: [...lambdaBundling.mainFields],
        banner: lambdaBundling.banner,
        esbuildArgs: Object.fromEntries(Object.entries(lambdaBundling.alias).map(([from, to]) => [`--alias:${from}`, to])),
        sourceMap: props.lean ? leanRuntime.sourceMap : true,
        // Stack traces need the mappings, not a copy of the sources: keeps the upload small.
        sourcesContent: false,
        // Bundle the AWS SDK clients too: a bundled client loaded 2-3x faster than the runtime's copy here.
        externalModules: [],
      },
    });
    this.handlerName = props.handler;
    this.executionRole = role;

    logGroup.grantWrite(role);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing: CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions (resource must be *).',
    });
  }

  /** Sets a variable the handler reads through shared/config.ts (the name is checked against that schema). */
  setVariable(name: GatewayVariable, value: string): void {
    this.addEnvironment(name, value);
  }
}

