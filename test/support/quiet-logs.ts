import { setLogSink } from '../../shared/log/logger';

// Handlers log as they would in Lambda; keep test output readable. TEST_LOGS=1 shows them.
if (!process.env.TEST_LOGS) setLogSink(() => {});
