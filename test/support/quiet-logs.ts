import { setLogSink } from '../../shared/log/logger';
import { setMetricSink } from '../../shared/metrics/gateway-metrics';

// Handlers log as they would in Lambda; keep test output readable. TEST_LOGS=1 shows them.
if (!process.env.TEST_LOGS) setLogSink(() => {});
// Handlers flush their metrics (EMF) after each invocation; tests that read them install their own sink.
if (!process.env.TEST_LOGS) setMetricSink(() => {});

// vitest puts Vite's BASE_URL=/ into process.env; the gateway reads BASE_URL as its public address
// and refuses "/" at start (settings are checked), so neither tests nor the npm start they spawn see it.
if (process.env.BASE_URL === '/') delete process.env.BASE_URL;
