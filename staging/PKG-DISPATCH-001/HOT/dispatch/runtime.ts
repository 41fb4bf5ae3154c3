import { basename, dirname, resolve } from 'node:path';
import { CpError, show } from '#kernel/errors.js';
import type { Ledger } from '#kernel/ledger/index.js';
import { DISPATCH_ROLES, type CompileDispatchPrompt, type DispatchRole } from './compiler-port.js';
import { compileWithPromptCompiler } from './compile-adapter.js';
import { loadDispatchConfigForRoot, type DispatchConfig } from './config.js';
import { buildDeltaPacket } from './delta-packet.js';
import { ingestEffect, outputLabel, parseIngestInput } from './ingest.js';
import { progressFacts, progressLedgerFor, readStoredProgress, type StoredProgress } from './progress-facts.js';
import { loadTasks } from './progress-ledger.js';
import { buildPromptSpec } from './prompt-spec.js';
import { refreshProgress } from './refresh-progress.js';
import { SnapshotStore, type Snapshot } from './snapshot-store.js';
import { buildTaskLedger } from './task-ledger.js';
import { DISPATCH_EVENTS, DispatchTelemetry } from './telemetry.js';
import type { CompileResult, IngestResult, InitResult } from './results.js';
import { buildStatus, type StatusResult } from './status.js';

export interface DispatchRuntimeOptions {
  /** The cplane root: state goes to ROOT/HOT/registries/dispatch.sqlite, telemetry to its kernel ledger. */
  root: string;
  /** Defaults to the prompt compiler (PKG-COMPILER-001). */
  compile?: CompileDispatchPrompt;
  clock?: () => number;
  config?: DispatchConfig;
  /** An already-open kernel ledger (tests, long-lived hosts); otherwise the root's ledger is opened on demand. */
  ledger?: Ledger;
}

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const TASK_ID = /^\d+(?:\.\d+)*$/;

/** The dispatch runtime's three operations (init_run, compile_prompt, ingest_output) plus status. */
export class DispatchRuntime {
  readonly config: DispatchConfig;
  private readonly root: string;
  private readonly clock: () => number;
  private readonly telemetry: DispatchTelemetry;
  private readonly compile: CompileDispatchPrompt;
  private opened: SnapshotStore | undefined;

  constructor(options: DispatchRuntimeOptions) {
    const clock = options.clock ?? Date.now;
    this.config = options.config ?? loadDispatchConfigForRoot(options.root);
    this.compile = options.compile ?? compileWithPromptCompiler;
    this.root = options.root;
    this.clock = clock;
    this.telemetry = new DispatchTelemetry(options.root, clock, options.ledger);
  }

  /** init_run: parse tasks.md (typed errors, no fallback) and persist the first snapshot. */
  initRun(input: { runId: string; tasksPath: string; specName?: string }): InitResult {
    const runId = checkRunId(input.runId);
    const tasksPath = resolve(input.tasksPath);
    const { source, tasks } = loadTasks(tasksPath);
    this.telemetry.open();
    const specName = checkSpecName(input.specName, tasksPath);
    const progress: StoredProgress = {
      spec_name: specName,
      source_path: tasksPath,
      source_fingerprint: source.fingerprint,
      plan_version: 1,
      tasks,
    };
    const snapshot = this.store(true).createRun(
      { run_id: runId, spec_name: specName, tasks_path: tasksPath },
      progressFacts(progress),
    );
    const ledger = progressLedgerFor(progress, null);
    const [entry] = this.telemetry.record(
      [
        {
          event_type: DISPATCH_EVENTS.runInitialized,
          run_id: runId,
          decision: 'INITIALIZED',
          reason: 'ledger',
          metadata: {
            spec_name: specName,
            tasks_path: tasksPath,
            snapshot_revision: snapshot.revision,
            totals: { ...ledger.totals },
            active_task_id: ledger.active_task_id,
            source_fingerprint: { ...ledger.source_fingerprint },
          },
        },
      ],
      snapshot.revision,
    );
    return {
      run_id: runId,
      snapshot_revision: snapshot.revision,
      progress_ledger: ledger,
      telemetry_entry_id: entry?.id ?? null,
    };
  }

  /** compile_prompt: validate the fingerprint, rebuild only on change, compile the ledger-first delta. */
  compilePrompt(input: { runId: string; taskId: string; role: string }): CompileResult {
    const role = checkRole(input.role);
    const taskId = checkTaskId(input.taskId);
    const run = this.store(false).requireRun(input.runId);
    this.telemetry.open();
    const { snapshot, result: refresh } = this.store(false).update(run.run_id, 'compile', (head) => {
      const found = refreshProgress(head.facts, run.tasks_path, run.spec_name);
      requireTask(found.progress, taskId, run.tasks_path);
      return { updates: found.updates, result: found };
    });
    const progress = progressLedgerFor(refresh.progress, taskId);
    const task = buildTaskLedger(run.run_id, taskId, snapshot.facts, this.config.stall_threshold);
    const delta = buildDeltaPacket(progress, task, refresh.mode);
    const compiled = this.compile(buildPromptSpec(role, progress, delta, this.config));
    const telemetry = {
      ledger_mode: refresh.mode,
      fallback_reason: refresh.fallback_reason,
      progress_source: refresh.progress_source,
      rebuild_cause: refresh.rebuild_cause,
    };
    const [entry] = this.telemetry.record(
      [
        {
          event_type: DISPATCH_EVENTS.promptCompiled,
          run_id: run.run_id,
          decision: 'COMPILED',
          reason: refresh.fallback_reason ?? refresh.mode,
          metadata: {
            task_id: taskId,
            role,
            ...telemetry,
            snapshot_revision: snapshot.revision,
            plan_version: task.plan_version,
            source_fingerprint: { ...progress.source_fingerprint },
            stalled: { ...task.stalled },
            stable_prefix_hash: compiled.stable_prefix_hash,
            dynamic_tail_hash: compiled.dynamic_tail_hash,
            full_prompt_hash: compiled.full_prompt_hash,
            cache_key: compiled.cache_key,
          },
        },
      ],
      snapshot.revision,
    );
    return {
      run_id: run.run_id,
      task_id: taskId,
      role,
      ...telemetry,
      snapshot_revision: snapshot.revision,
      progress_ledger: progress,
      task_ledger: task,
      delta_context: delta,
      stable_prefix_hash: compiled.stable_prefix_hash,
      dynamic_tail_hash: compiled.dynamic_tail_hash,
      full_prompt_hash: compiled.full_prompt_hash,
      cache_key: compiled.cache_key,
      telemetry_entry_id: entry?.id ?? null,
      prompt: compiled.prompt,
    };
  }

  /** ingest_output: update the task ledger facts and the stall counter; flag and hint at the threshold. */
  ingestOutput(input: { runId: string; taskId: string; output: unknown }): IngestResult {
    const taskId = checkTaskId(input.taskId);
    const output = parseIngestInput(input.output);
    const run = this.store(false).requireRun(input.runId);
    const threshold = this.config.stall_threshold;
    this.telemetry.open();
    const { snapshot, result: effect } = this.store(false).update(
      run.run_id,
      `ingest ${outputLabel(output)}`,
      (head) => {
        const stored = readStoredProgress(head.facts);
        if ('progress' in stored) requireTask(stored.progress, taskId, run.tasks_path);
        const found = ingestEffect(head.facts, taskId, output, threshold);
        return { updates: found.updates, result: found };
      },
    );
    const task = buildTaskLedger(run.run_id, taskId, snapshot.facts, threshold);
    const base = {
      task_id: taskId,
      role: output.role,
      output: outputLabel(output),
      snapshot_revision: snapshot.revision,
      stalled: { ...task.stalled },
    };
    const entries = this.telemetry.record(
      [
        {
          event_type: DISPATCH_EVENTS.outputIngested,
          run_id: run.run_id,
          decision: 'INGESTED',
          reason: outputLabel(output),
          metadata: base,
        },
        ...(effect.newly_flagged
          ? [
              {
                event_type: DISPATCH_EVENTS.stallFlagged,
                run_id: run.run_id,
                decision: 'STALLED',
                reason: 'stall_threshold_reached',
                metadata: { ...base, replan_hint: task.replan_hint ?? null },
              },
            ]
          : []),
      ],
      snapshot.revision,
    );
    return {
      run_id: run.run_id,
      task_id: taskId,
      snapshot_revision: snapshot.revision,
      task_ledger: task,
      newly_flagged: effect.newly_flagged,
      telemetry_entry_ids: entries.map((entry) => entry.id),
    };
  }

  /** The snapshot store, opened on first use; only init may create it, after tasks.md parsed cleanly. */
  private store(create: boolean): SnapshotStore {
    this.opened ??= SnapshotStore.open(this.root, { create, clock: this.clock });
    if (this.opened) return this.opened;
    throw new CpError('ERR_DISPATCH_RUN_NOT_FOUND', `no dispatch runs in root ${show(this.root)}`, {
      hint: 'start one with `cplane dispatch init --root R --tasks FILE --run RUN`',
      details: { root: this.root },
    });
  }

  /** Read-only view of a run: never rebuilds, but says whether tasks.md moved on since the snapshot. */
  status(input: { runId: string }): StatusResult {
    const run = this.store(false).requireRun(input.runId);
    const head: Snapshot = this.store(false).head(run.run_id);
    return buildStatus(run, head, this.config.stall_threshold);
  }

  close(): void {
    this.opened?.close();
    this.telemetry.close();
  }
}

function checkRunId(runId: string): string {
  if (RUN_ID.test(runId)) return runId;
  throw new CpError('ERR_DISPATCH_RUN_ID_INVALID', `run id ${show(runId)} is not valid`, {
    hint: 'use 1-128 letters, digits, dot, dash or underscore, starting with a letter or digit',
    details: { run_id: runId },
  });
}

/**
 * A spec name is printed in status lines and goes into every prompt of the run (its delta packet and guide cache
 * key), so it is one short line of well-formed text, whether it came from --spec-name or from a folder's name.
 */
const SPEC_NAME = /^[^\p{Cc}\u2028\u2029]{1,128}$/u;

function checkSpecName(given: string | undefined, tasksPath: string): string {
  const specName = given ?? basename(dirname(tasksPath));
  if (specName.isWellFormed() && SPEC_NAME.test(specName) && specName.trim() === specName) return specName;
  throw new CpError(
    'ERR_DISPATCH_SPEC_NAME_INVALID',
    `spec name ${show(specName)}${given === undefined ? ` (the name of the folder holding ${show(tasksPath)})` : ''} is not valid`,
    {
      hint: 'pass --spec-name with 1-128 characters on one line, no control characters and no surrounding spaces',
      details: { spec_name: specName, source: given === undefined ? 'folder' : 'option' },
    },
  );
}

function checkTaskId(taskId: string): string {
  if (TASK_ID.test(taskId)) return taskId;
  throw new CpError('ERR_DISPATCH_TASK_UNKNOWN', `task id ${show(taskId)} is not a tasks.md id`, {
    hint: 'task ids are dotted numbers such as 1 or 2.1',
    details: { task_id: taskId },
  });
}

function checkRole(role: string): DispatchRole {
  if ((DISPATCH_ROLES as readonly string[]).includes(role)) return role as DispatchRole;
  throw new CpError('ERR_DISPATCH_ROLE_INVALID', `role ${show(role)} is not a prompt role`, {
    hint: `use one of ${DISPATCH_ROLES.join(', ')}`,
    details: { role },
  });
}

function requireTask(progress: StoredProgress, taskId: string, tasksPath: string): void {
  if (progress.tasks.some((task) => task.id === taskId)) return;
  throw new CpError('ERR_DISPATCH_TASK_UNKNOWN', `task ${show(taskId)} is not in ${show(tasksPath)}`, {
    hint: `known task ids: ${progress.tasks
      .map((task) => task.id)
      .slice(0, 20)
      .join(', ')}`,
    details: { task_id: taskId, tasks_path: tasksPath },
  });
}
