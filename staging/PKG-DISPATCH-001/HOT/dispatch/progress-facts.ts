import {
  FACT_KEYS,
  asNumber,
  asObject,
  asString,
  asStringArray,
  factsFor,
  runFact,
  type FactUpdate,
  type JsonValue,
  type StateSnapshotFact,
} from './facts.js';
import { buildProgressLedger, type ProgressLedger, type SourceFingerprint } from './progress-ledger.js';
import type { ParsedTask, TaskStatus } from './tasks-parser.js';

/** The progress state a run keeps in its snapshot, enough to rebuild any ProgressLedger without the file. */
export interface StoredProgress {
  spec_name: string;
  source_path: string;
  source_fingerprint: SourceFingerprint;
  plan_version: number;
  tasks: ParsedTask[];
}

const STATUSES: readonly TaskStatus[] = ['pending', 'in-progress', 'completed'];

export function progressFacts(progress: StoredProgress): FactUpdate[] {
  const ledger = buildProgressLedger({
    specName: progress.spec_name,
    sourcePath: progress.source_path,
    fingerprint: progress.source_fingerprint,
    tasks: progress.tasks,
  });
  return [
    runFact(FACT_KEYS.progressSpecName, progress.spec_name),
    runFact(FACT_KEYS.progressSourcePath, progress.source_path),
    runFact(FACT_KEYS.progressSourceFingerprint, { ...progress.source_fingerprint }),
    runFact(FACT_KEYS.progressPlanVersion, progress.plan_version),
    runFact(FACT_KEYS.progressTotals, { ...ledger.totals }),
    runFact(FACT_KEYS.progressActiveTaskId, ledger.active_task_id),
    runFact(FACT_KEYS.progressTasks, progress.tasks.map(taskToJson)),
  ];
}

/**
 * Read the stored progress back. Returns the names of required facts that are missing or malformed
 * instead of throwing: the caller decides whether to rebuild from tasks.md or degrade.
 */
export function readStoredProgress(
  facts: readonly StateSnapshotFact[],
): { progress: StoredProgress } | { missing: string[] } {
  const run = factsFor(facts, null);
  const specName = asString(run.get(FACT_KEYS.progressSpecName));
  const sourcePath = asString(run.get(FACT_KEYS.progressSourcePath));
  const fingerprint = readFingerprint(run.get(FACT_KEYS.progressSourceFingerprint));
  const tasks = readTasks(run.get(FACT_KEYS.progressTasks));
  const missing: string[] = [];
  if (specName === undefined) missing.push(FACT_KEYS.progressSpecName);
  if (sourcePath === undefined) missing.push(FACT_KEYS.progressSourcePath);
  if (fingerprint === undefined) missing.push(FACT_KEYS.progressSourceFingerprint);
  if (tasks === undefined) missing.push(FACT_KEYS.progressTasks);
  if (specName === undefined || sourcePath === undefined || fingerprint === undefined || tasks === undefined)
    return { missing };
  const planVersion = asNumber(run.get(FACT_KEYS.progressPlanVersion)) ?? 1;
  return {
    progress: {
      spec_name: specName,
      source_path: sourcePath,
      source_fingerprint: fingerprint,
      plan_version: planVersion,
      tasks,
    },
  };
}

export function progressLedgerFor(progress: StoredProgress, taskId: string | null): ProgressLedger {
  return buildProgressLedger({
    specName: progress.spec_name,
    sourcePath: progress.source_path,
    fingerprint: progress.source_fingerprint,
    tasks: progress.tasks,
    taskId,
  });
}

function taskToJson(task: ParsedTask): JsonValue {
  const out: { [key: string]: JsonValue } = {
    id: task.id,
    description: task.description,
    status: task.status,
    line: task.line,
    parent_id: task.parent_id,
  };
  if (task.prompt !== undefined) out.prompt = task.prompt;
  if (task.requirements !== undefined) out.requirements = [...task.requirements];
  return out;
}

function readFingerprint(value: JsonValue | undefined): SourceFingerprint | undefined {
  const object = asObject(value);
  const mtime = asNumber(object?.mtime_ms);
  const hash = asString(object?.hash);
  return mtime === undefined || hash === undefined ? undefined : { mtime_ms: mtime, hash };
}

function readTasks(value: JsonValue | undefined): ParsedTask[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const tasks: ParsedTask[] = [];
  for (const item of value) {
    const object = asObject(item);
    const id = asString(object?.id);
    const description = asString(object?.description);
    const status = asString(object?.status);
    const line = asNumber(object?.line);
    if (
      id === undefined ||
      description === undefined ||
      line === undefined ||
      !(STATUSES as readonly (string | undefined)[]).includes(status)
    )
      return undefined;
    const parent = object?.parent_id;
    const task: ParsedTask = {
      id,
      description,
      status: status as TaskStatus,
      line,
      parent_id: typeof parent === 'string' ? parent : null,
    };
    const prompt = asString(object?.prompt);
    if (prompt !== undefined) task.prompt = prompt;
    if (Array.isArray(object?.requirements)) task.requirements = asStringArray(object?.requirements);
    tasks.push(task);
  }
  return tasks;
}
