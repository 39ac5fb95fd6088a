// Where a payment sync's time goes: bench/sync-profile-run.ts, which wraps store calls, so the store's seam comes first (bench/store-seam.ts).
import './store-seam';

await import('./sync-profile-run');
