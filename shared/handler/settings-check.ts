import { checkedEnvironment } from '../config';
import { log } from '../log/logger';
import { functionSettings, type HandlerName } from './function-settings';

/**
 * In Lambda (AWS_LAMBDA_FUNCTION_NAME is set), checks the function's settings as it loads and
 * stops it with every problem named. Under `npm start` and in tests the local runtime checks its
 * own settings when it starts (local/local-gateway.ts).
 */
export function checkSettingsAtLoad(name: HandlerName, env: NodeJS.ProcessEnv = process.env): void {
  if (!env.AWS_LAMBDA_FUNCTION_NAME || functionSettings[name].length === 0) return;
  try {
    checkedEnvironment(env, functionSettings[name]);
  } catch (error) {
    log.error('function settings are not valid; fix the stack or the function configuration', { handler: name, error });
    throw error;
  }
}
