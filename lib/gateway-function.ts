import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage, Validations, type Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Architecture, Code, Function as LambdaFunction, RecursiveLoop, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { GatewayEnvironment } from '../shared/config';
import type { HandlerName } from '../shared/handler/function-settings';
import { handlerBuildOptions, leanRuntime } from './bundling';

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
  /** @default Lambda's: a chain of more than 16 invocations through its own queue is stopped as a loop. */
  readonly recursiveLoop?: RecursiveLoop;
  readonly logRetention: logs.RetentionDays;
}

/**
 * One gateway handler: Node.js 24 on arm64, bundled locally by esbuild (no Docker) as minified ESM with source
 * maps, code split so what a handler imports on first use stays out of its cold start (lib/bundling.ts), traced
 * by X-Ray, logging to its own log group.
 *
 * It has its own role with no AWS managed policy: the role may write to this log group only, and every other
 * permission is granted by the stack.
 *
 * Not a `NodejsFunction`: that construct gives esbuild one `--outfile`, and code splitting needs an output
 * folder. The asset is built the same way (esbuild from this project's node_modules, hashed by its output).
 */
export class GatewayFunction extends LambdaFunction {
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
      code: handlerCode(props.handler, { sourceMap: props.lean ? leanRuntime.sourceMap : true }),
      handler: 'index.handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role,
      logGroup,
      tracing: Tracing.ACTIVE,
      ...(props.recursiveLoop ? { recursiveLoop: props.recursiveLoop } : {}),
      environment: {
        NODE_OPTIONS: props.lean ? leanRuntime.nodeOptions : '--enable-source-maps',
        GATEWAY_MODE: 'aws' satisfies GatewayEnvironment['GATEWAY_MODE'],
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


/**
 * The handler's code: bundled on this machine when the stack is synthesized (`tryBundle`), into the folder CDK
 * zips and uploads. The Docker image is never pulled: local bundling does not fail, it throws.
 */
function handlerCode(handler: HandlerName, options: { sourceMap: boolean }): Code {
  return Code.fromAsset(projectRoot, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim'),
      // What is built, in the options CDK hashes to tell assets apart: without it every function's asset
      // would be taken for the first one's (the local bundler, a function, is not hashed).
      environment: { GATEWAY_HANDLER: handler, SOURCE_MAP: String(options.sourceMap) },
      local: {
        tryBundle(outputDir: string): boolean {
          // CDK asks for the asset synchronously; esbuild is loaded only when a stack is bundled.
          const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
          buildSync({ ...handlerBuildOptions(handler, outputDir, { sourceMap: options.sourceMap }), metafile: false });
          return true;
        },
      },
    },
  });
}
