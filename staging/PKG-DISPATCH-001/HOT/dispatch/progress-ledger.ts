import { readFileSync, statSync, type Stats } from 'node:fs';
import { sha256Digest } from '#kernel/canonical.js';
import { show, type CpError } from '#kernel/errors.js';
import { dispatchError } from './errors.js';
import { parseTasksMarkdown, type ParsedTask, type TaskStatus } from './tasks-parser.js';

export interface SourceFingerprint {
  mtime_ms: number;
  /** `sha256:<hex>` of the file's bytes: the authority on "changed"; mtime alone can repeat. */
  hash: string;
}

export interface ProgressTotals {
  total: number;
  completed: number;
  in_progress: number;
  pending: number;
}

export interface CurrentTask {
  id: string;
  description: string;
  status: TaskStatus;
  prompt?: string;
  requirements?: string[];
}

/** The seed's ProgressLedger, snake_case as it is persisted and printed. */
export interface ProgressLedger {
  spec_name: string;
  task_id: string | null;
  source_path: string;
  source_fingerprint: SourceFingerprint;
  totals: ProgressTotals;
  active_task_id: string | null;
  current_task?: CurrentTask;
}

export interface TasksSource {
  path: string;
  text: string;
  fingerprint: SourceFingerprint;
}

/** Large enough for any hand-written plan; bounds memory when pointed at the wrong file. */
export const MAX_TASKS_BYTES = 4 * 1024 * 1024;

/**
 * Read tasks.md once, fingerprinting the bytes that were read (not a second read).
 * A missing file is `progress_ledger_missing_tasks`; bytes that are not UTF-8 text are a parse failure.
 */
export function readTasksSource(path: string): TasksSource {
  const { bytes, mtimeMs } = readBytes(path);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (cause) {
    throw dispatchError(
      'progress_ledger_parse_failed',
      `${show(path)} is not UTF-8 text`,
      'tasks.md must be a UTF-8 Markdown file',
      { path, line: 0 },
      cause,
    );
  }
  if (text.includes('\u0000')) {
    throw dispatchError(
      'progress_ledger_parse_failed',
      `${show(path)} contains NUL bytes`,
      'tasks.md must be a text file, not binary data',
      { path, line: 0 },
    );
  }
  return { path, text, fingerprint: { mtime_ms: mtimeMs, hash: sha256Digest(bytes) } };
}

function readBytes(path: string): { bytes: Buffer; mtimeMs: number } {
  const missing = (reason: string, cause?: unknown): CpError =>
    dispatchError(
      'progress_ledger_missing_tasks',
      `cannot read tasks file ${show(path)} (${reason})`,
      'check the path: it must name an existing tasks.md',
      { path, reason },
      cause,
    );
  let stat: Stats;
  try {
    stat = statSync(path);
  } catch (cause) {
    throw missing(errnoOf(cause), cause);
  }
  if (!stat.isFile()) throw missing('not a regular file');
  if (stat.size > MAX_TASKS_BYTES) {
    throw dispatchError(
      'progress_ledger_parse_failed',
      `${show(path)} is ${stat.size} bytes, over the ${MAX_TASKS_BYTES}-byte limit`,
      "point --tasks at the spec's tasks.md",
      { path, line: 0, size: stat.size },
    );
  }
  try {
    return { bytes: readFileSync(path), mtimeMs: stat.mtimeMs };
  } catch (cause) {
    throw missing(errnoOf(cause), cause);
  }
}

function errnoOf(cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'unreadable';
}

export function computeTotals(tasks: readonly ParsedTask[]): ProgressTotals {
  const totals: ProgressTotals = { total: tasks.length, completed: 0, in_progress: 0, pending: 0 };
  for (const task of tasks) {
    if (task.status === 'completed') totals.completed += 1;
    else if (task.status === 'in-progress') totals.in_progress += 1;
    else totals.pending += 1;
  }
  return totals;
}

/**
 * The task to work on now: the first in-progress leaf (a task without subtasks), else the first
 * pending leaf, else null. Parents only summarise their subtasks, so they are never dispatched.
 */
export function findActiveTaskId(tasks: readonly ParsedTask[]): string | null {
  const parents = new Set(tasks.map((task) => task.parent_id).filter((id): id is string => id !== null));
  const leaves = tasks.filter((task) => !parents.has(task.id));
  return (
    (leaves.find((task) => task.status === 'in-progress') ?? leaves.find((task) => task.status === 'pending'))?.id ??
    null
  );
}

export function toCurrentTask(task: ParsedTask): CurrentTask {
  const current: CurrentTask = { id: task.id, description: task.description, status: task.status };
  if (task.prompt !== undefined) current.prompt = task.prompt;
  if (task.requirements !== undefined) current.requirements = [...task.requirements];
  return current;
}

export interface ProgressInput {
  specName: string;
  sourcePath: string;
  fingerprint: SourceFingerprint;
  tasks: readonly ParsedTask[];
  /** The task being dispatched, when there is one. */
  taskId?: string | null;
}

export function buildProgressLedger(input: ProgressInput): ProgressLedger {
  const taskId = input.taskId ?? null;
  const ledger: ProgressLedger = {
    spec_name: input.specName,
    task_id: taskId,
    source_path: input.sourcePath,
    source_fingerprint: { ...input.fingerprint },
    totals: computeTotals(input.tasks),
    active_task_id: findActiveTaskId(input.tasks),
  };
  const current = taskId === null ? undefined : input.tasks.find((task) => task.id === taskId);
  if (current) ledger.current_task = toCurrentTask(current);
  return ledger;
}

/** Read + parse in one step: what init and a fingerprint-triggered rebuild both do. */
export function loadTasks(path: string): { source: TasksSource; tasks: ParsedTask[] } {
  const source = readTasksSource(path);
  return { source, tasks: parseTasksMarkdown(source.text, path) };
}
