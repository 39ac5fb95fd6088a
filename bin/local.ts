/**
 * `npm start`: the gateway on this machine, with the sandbox platforms, on http://localhost:3000.
 *   PORT             the gateway's port (3000); the sandbox simulators take the next three
 *   LOCAL_DATA_DIR   where the table and the vault's key file live (.local)
 *   PAYMENT_API_BASE_URL, BILLING_BASE_URL_TEMPLATE, DATA_LOGIN_URL ...  real platform addresses;
 *                    a platform whose address is set is not simulated
 */
import { LocalKeyFileError } from '../shared/vault/local-data-key-source';
import { startLocalRuntime } from '../local/local-runtime';
import { startSandbox } from '../local/sandbox';

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 3000);
  const dataDir = process.env.LOCAL_DATA_DIR ?? '.local';
  const sandbox = await startSandbox(process.env, dataDir, port);
  let runtime;
  try {
    const tableWriteUnits = process.env.LOCAL_TABLE_WRITE_UNITS ? Number(process.env.LOCAL_TABLE_WRITE_UNITS) : undefined;
    if (tableWriteUnits !== undefined && !(Number.isInteger(tableWriteUnits) && tableWriteUnits > 0)) throw new Error('LOCAL_TABLE_WRITE_UNITS must be a whole number of write units a second (a new on-demand table: 4000)');
    runtime = await startLocalRuntime({ dataDir, port, env: { ...process.env, ...sandbox.env }, ...(tableWriteUnits === undefined ? {} : { tableWriteUnits }) });
  } catch (error) {
    await sandbox.stop();
    throw error;
  }
  const base = runtime.url;
  const lines = [
    `Integration gateway running at ${base}  (data in ${dataDir}/)`,
    '',
    'Spec addresses:',
    `  GET  ${base}/auth/crmmessaging/callback   OAuth callback, messaging connector`,
    `  GET  ${base}/auth/crmdata/callback        OAuth callback, data connector`,
    `  POST ${base}/webhooks/billing?account=<id>    billing-platform webhooks`,
    `  POST ${base}/webhooks/payments?account=<id>   payment-platform webhooks`,
    '',
    `Dashboard:       ${base}/`,
    `API (OpenAPI):   ${base}/api/v1/openapi.json`,
    `Local sign-in:   curl -X POST ${base}/local/sign-in -d '{"operator":true}'`,
    '',
    ...sandbox.summary,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const stop = async () => {
    await runtime.stop();
    await sandbox.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((error: unknown) => {
  if (error instanceof LocalKeyFileError) {
    process.stderr.write(`Cannot start: ${error.message}\n`);
  } else if ((error as NodeJS.ErrnoException)?.code === 'EADDRINUSE') {
    process.stderr.write(`Cannot start: port ${process.env.PORT ?? 3000} is in use. Set PORT to another port.\n`);
  } else {
    process.stderr.write(`Cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exit(1);
});
