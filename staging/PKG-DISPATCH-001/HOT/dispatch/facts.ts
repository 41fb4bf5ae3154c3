/**
 * The namespaced snapshot fact keys. `ledger.progress.*` facts belong to the run (task_id null);
 * `ledger.task.*` facts belong to one task of the run. Anything else in a snapshot is ignored.
 */
export const FACT_KEYS = {
  taskSummary: 'ledger.task.summary',
  taskReviewerAssessment: 'ledger.task.reviewer_assessment',
  taskReviewerIssues: 'ledger.task.reviewer_issues',
  taskRequiredFixes: 'ledger.task.required_fixes',
  taskBlockers: 'ledger.task.blockers',
  taskStalledCount: 'ledger.task.stalled_count',
  taskReplanHint: 'ledger.task.replan_hint',
  taskLastOutcome: 'ledger.task.last_outcome',
  progressActiveTaskId: 'ledger.progress.active_task_id',
  progressTotals: 'ledger.progress.totals',
  progressSourceFingerprint: 'ledger.progress.source_fingerprint',
  progressSourcePath: 'ledger.progress.source_path',
  progressSpecName: 'ledger.progress.spec_name',
  progressPlanVersion: 'ledger.progress.plan_version',
  progressTasks: 'ledger.progress.tasks',
} as const;

export type FactKey = (typeof FACT_KEYS)[keyof typeof FACT_KEYS];
const KNOWN = new Set<string>(Object.values(FACT_KEYS));

export function isKnownFactKey(key: string): key is FactKey {
  return KNOWN.has(key);
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** One fact of a revisioned snapshot; `revision` is the snapshot revision that last set it. */
export interface StateSnapshotFact {
  key: string;
  task_id: string | null;
  value: JsonValue;
  revision: number;
  updated_at: string;
}

/** A change to merge: `value: null` removes the fact. */
export interface FactUpdate {
  key: FactKey;
  task_id: string | null;
  value: JsonValue;
}

export function runFact(key: FactKey, value: JsonValue): FactUpdate {
  return { key, task_id: null, value };
}

export function taskFact(taskId: string, key: FactKey, value: JsonValue): FactUpdate {
  return { key, task_id: taskId, value };
}

/** Known facts of one scope as a key → value map; unknown keys and other scopes are skipped. */
export function factsFor(facts: readonly StateSnapshotFact[], taskId: string | null): Map<FactKey, JsonValue> {
  const out = new Map<FactKey, JsonValue>();
  for (const fact of facts) {
    if (fact.task_id === taskId && isKnownFactKey(fact.key)) out.set(fact.key, fact.value);
  }
  return out;
}

/** Merge updates into a fact list: last write wins per (task_id, key), output sorted for stable hashing. */
export function mergeFacts(
  facts: readonly StateSnapshotFact[],
  updates: readonly FactUpdate[],
  revision: number,
  at: string,
): StateSnapshotFact[] {
  const byId = new Map<string, StateSnapshotFact>();
  const id = (taskId: string | null, key: string): string => `${taskId ?? ''}\u0000${key}`;
  for (const fact of facts) byId.set(id(fact.task_id, fact.key), fact);
  for (const update of updates) {
    if (update.value === null) byId.delete(id(update.task_id, update.key));
    else
      byId.set(id(update.task_id, update.key), {
        key: update.key,
        task_id: update.task_id,
        value: update.value,
        revision,
        updated_at: at,
      });
  }
  return [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, fact]) => fact);
}

export function asString(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNumber(value: JsonValue | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function asStringArray(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

export function asObject(value: JsonValue | undefined): { [key: string]: JsonValue } | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
}
