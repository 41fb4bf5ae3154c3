import type { FallbackReason, LedgerMode } from './delta-packet.js';
import type { ProgressLedger } from './progress-ledger.js';
import type { ProgressSource, RebuildCause } from './refresh-progress.js';
import type { TaskLedger } from './task-ledger.js';
import type { DispatchRole } from './compiler-port.js';

/** Wire shapes of the runtime's operations (schemas in HOT/schemas/dispatch-*.schema.json). */
export interface InitResult {
  run_id: string;
  snapshot_revision: number;
  progress_ledger: ProgressLedger;
  telemetry_entry_id: string | null;
}

export interface CompileResult {
  run_id: string;
  task_id: string;
  role: DispatchRole;
  ledger_mode: LedgerMode;
  fallback_reason: FallbackReason | null;
  progress_source: ProgressSource;
  rebuild_cause: RebuildCause | null;
  snapshot_revision: number;
  progress_ledger: ProgressLedger;
  task_ledger: TaskLedger;
  delta_context: string;
  stable_prefix_hash: string;
  dynamic_tail_hash: string;
  full_prompt_hash: string;
  cache_key: string;
  telemetry_entry_id: string | null;
  prompt: unknown;
}

export interface IngestResult {
  run_id: string;
  task_id: string;
  snapshot_revision: number;
  task_ledger: TaskLedger;
  newly_flagged: boolean;
  telemetry_entry_ids: string[];
}
