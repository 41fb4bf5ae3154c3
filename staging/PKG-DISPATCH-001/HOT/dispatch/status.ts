import { isCpError } from '#kernel/errors.js';
import { progressLedgerFor, readStoredProgress } from './progress-facts.js';
import type { ProgressLedger } from './progress-ledger.js';
import { readTasksSource } from './progress-ledger.js';
import type { RunRecord, Snapshot } from './snapshot-store.js';
import { buildTaskLedger, type TaskLedger } from './task-ledger.js';

export type SourceState = 'current' | 'changed' | 'unreadable';

export interface StatusResult {
  run_id: string;
  spec_name: string;
  tasks_path: string;
  snapshot_revision: number;
  plan_version: number;
  totals: ProgressLedger['totals'] | null;
  active_task_id: string | null;
  source_fingerprint: ProgressLedger['source_fingerprint'] | null;
  /** Whether tasks.md still matches the snapshot; the next compile rebuilds when it is `changed`. */
  source_state: SourceState;
  /** Task ledgers of every task with recorded outcomes, in tasks.md order. */
  task_ledgers: TaskLedger[];
  stalled_task_ids: string[];
}

export function buildStatus(run: RunRecord, head: Snapshot, threshold: number): StatusResult {
  const stored = readStoredProgress(head.facts);
  const progress = 'progress' in stored ? stored.progress : undefined;
  const ledger = progress ? progressLedgerFor(progress, null) : undefined;
  const withFacts = new Set(head.facts.filter((fact) => fact.task_id !== null).map((fact) => fact.task_id as string));
  const order = progress ? progress.tasks.map((task) => task.id) : [...withFacts].sort();
  const taskLedgers = order
    .filter((id) => withFacts.has(id))
    .map((id) => buildTaskLedger(run.run_id, id, head.facts, threshold));
  return {
    run_id: run.run_id,
    spec_name: run.spec_name,
    tasks_path: run.tasks_path,
    snapshot_revision: head.revision,
    plan_version: progress?.plan_version ?? 1,
    totals: ledger ? { ...ledger.totals } : null,
    active_task_id: ledger?.active_task_id ?? null,
    source_fingerprint: ledger ? { ...ledger.source_fingerprint } : null,
    source_state: sourceState(run.tasks_path, ledger?.source_fingerprint.hash),
    task_ledgers: taskLedgers,
    stalled_task_ids: taskLedgers.filter((task) => task.stalled.flagged).map((task) => task.task_id),
  };
}

function sourceState(path: string, storedHash: string | undefined): SourceState {
  try {
    return readTasksSource(path).fingerprint.hash === storedHash ? 'current' : 'changed';
  } catch (error) {
    if (isCpError(error)) return 'unreadable';
    throw error;
  }
}
