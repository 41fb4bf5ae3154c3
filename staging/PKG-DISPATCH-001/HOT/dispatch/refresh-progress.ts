import { isCpError } from '#kernel/errors.js';
import { DISPATCH_ERRORS } from './errors.js';
import { FACT_KEYS, runFact, type FactUpdate, type StateSnapshotFact } from './facts.js';
import type { FallbackReason, LedgerMode } from './delta-packet.js';
import { progressFacts, readStoredProgress, type StoredProgress } from './progress-facts.js';
import { readTasksSource } from './progress-ledger.js';
import { parseTasksMarkdown } from './tasks-parser.js';

export type ProgressSource = 'snapshot' | 'rebuilt';
export type RebuildCause = 'fingerprint_changed' | 'fields_missing';

export interface ProgressRefresh {
  progress: StoredProgress;
  mode: LedgerMode;
  fallback_reason: FallbackReason | null;
  progress_source: ProgressSource;
  rebuild_cause: RebuildCause | null;
  /** Facts to write: empty when the snapshot was already current. */
  updates: FactUpdate[];
}

/**
 * Validate the stored progress against tasks.md and rebuild it only when the file's content changed
 * (or the stored facts are incomplete). An unreadable file degrades to the stored facts
 * (`ledger_plus_fallback` / `rebuild_failed`); a readable but malformed file is an error, never a guess.
 */
export function refreshProgress(
  facts: readonly StateSnapshotFact[],
  tasksPath: string,
  specName: string,
): ProgressRefresh {
  const stored = readStoredProgress(facts);
  const storedProgress = 'progress' in stored ? stored.progress : undefined;
  let source: ReturnType<typeof readTasksSource>;
  try {
    source = readTasksSource(tasksPath);
  } catch (error) {
    if (storedProgress && isCpError(error) && error.code === DISPATCH_ERRORS.progress_ledger_missing_tasks) {
      return {
        progress: storedProgress,
        mode: 'ledger_plus_fallback',
        fallback_reason: 'rebuild_failed',
        progress_source: 'snapshot',
        rebuild_cause: null,
        updates: [],
      };
    }
    throw error;
  }
  if (storedProgress && storedProgress.source_fingerprint.hash === source.fingerprint.hash) {
    const touched = storedProgress.source_fingerprint.mtime_ms !== source.fingerprint.mtime_ms;
    const progress = { ...storedProgress, source_fingerprint: source.fingerprint };
    const updates = touched ? [runFact(FACT_KEYS.progressSourceFingerprint, { ...source.fingerprint })] : [];
    return {
      progress,
      mode: 'ledger',
      fallback_reason: null,
      progress_source: 'snapshot',
      rebuild_cause: null,
      updates,
    };
  }
  const progress: StoredProgress = {
    spec_name: storedProgress?.spec_name ?? specName,
    source_path: tasksPath,
    source_fingerprint: source.fingerprint,
    plan_version: storedProgress ? storedProgress.plan_version + 1 : 1,
    tasks: parseTasksMarkdown(source.text, tasksPath),
  };
  return {
    progress,
    mode: 'ledger',
    fallback_reason: null,
    progress_source: 'rebuilt',
    rebuild_cause: storedProgress ? 'fingerprint_changed' : 'fields_missing',
    updates: progressFacts(progress),
  };
}
