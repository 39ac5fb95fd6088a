import { setLogSink } from '../../shared/log/logger';
import { setMetricSink } from '../../shared/metrics/gateway-metrics';

// Handlers log as they would in Lambda; keep test output readable. TEST_LOGS=1 shows them.
if (!process.env.TEST_LOGS) setLogSink(() => {});
// Handlers flush their metrics (EMF) after each invocation; tests that read them install their own sink.
if (!process.env.TEST_LOGS) setMetricSink(() => {});
