// Where a new conversation's first poll spends its time: bench/conversations-profile-run.ts, which wraps store calls, so the store's seam comes first (bench/store-seam.ts).
import './store-seam';

await import('./conversations-profile-run');
