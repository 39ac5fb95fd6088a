import { afterAll, afterEach, beforeAll } from 'vitest';
import { startAwsStandIn, useStandInEnvironment, type AwsStandIn } from './aws-stand-in';

/**
 * The AWS stand-in for a test file (or a describe block): started before its tests, with this
 * process's signed calls pointed at it, reset after each test, stopped after all. Answers a getter:
 * the stand-in exists once the hooks have run.
 */
export function useAwsStandIn(): () => AwsStandIn {
  let standIn: AwsStandIn | undefined;
  let restoreEnvironment = () => {};
  beforeAll(async () => {
    standIn = await startAwsStandIn();
    restoreEnvironment = useStandInEnvironment(standIn);
  });
  afterEach(() => standIn?.reset());
  afterAll(async () => {
    restoreEnvironment();
    await standIn?.stop();
  });
  return () => {
    if (!standIn) throw new Error('the AWS stand-in starts before the tests: call this getter inside a test');
    return standIn;
  };
}
