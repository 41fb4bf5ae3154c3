import type { CompileResult, IngestResult, InitResult } from './results.js';
import type { StatusResult } from './status.js';
import type { StallState } from './stall.js';
import type { ProgressTotals } from './progress-ledger.js';

/** Human renderings of the dispatch results; `--json` prints the results themselves. */
const totalsLine = (totals: ProgressTotals): string =>
  `${totals.completed}/${totals.total} completed, ${totals.in_progress} in progress, ${totals.pending} pending`;

const stallLine = (stalled: StallState): string =>
  `stall: ${stalled.consecutive_non_progress}/${stalled.threshold}${stalled.flagged ? ' FLAGGED' : ''}`;

export function humanInit(result: InitResult): string[] {
  const ledger = result.progress_ledger;
  return [
    `run ${result.run_id} initialised from ${ledger.source_path} (spec ${ledger.spec_name}, snapshot r${result.snapshot_revision})`,
    `progress: ${totalsLine(ledger.totals)}; active task ${ledger.active_task_id ?? 'none'}`,
    `source: ${ledger.source_fingerprint.hash}`,
  ];
}

export function humanCompile(result: CompileResult): string[] {
  return [
    `run ${result.run_id} task ${result.task_id} role ${result.role}: ${result.ledger_mode}${result.fallback_reason ? ` (${result.fallback_reason})` : ''}, progress from ${result.progress_source}, snapshot r${result.snapshot_revision}`,
    `stable_prefix_hash: ${result.stable_prefix_hash}`,
    `dynamic_tail_hash:  ${result.dynamic_tail_hash}`,
    `full_prompt_hash:   ${result.full_prompt_hash}`,
    `cache_key:          ${result.cache_key}`,
    '--- delta context ---',
    result.delta_context,
    'use --json for the compiled prompt',
  ];
}

export function humanIngest(result: IngestResult): string[] {
  const task = result.task_ledger;
  const lines = [
    `run ${result.run_id} task ${result.task_id}: ${task.last_outcome ?? 'recorded'} (snapshot r${result.snapshot_revision}); ${stallLine(task.stalled)}`,
  ];
  if (task.replan_hint) lines.push(`replan hint: ${task.replan_hint}`);
  return lines;
}

export function humanStatus(result: StatusResult): string[] {
  const lines = [
    `run ${result.run_id} (spec ${result.spec_name}, plan v${result.plan_version}, snapshot r${result.snapshot_revision})`,
    `tasks: ${result.tasks_path} [${result.source_state}]`,
    result.totals
      ? `progress: ${totalsLine(result.totals)}; active task ${result.active_task_id ?? 'none'}`
      : 'progress: unknown (snapshot has no progress facts)',
  ];
  for (const task of result.task_ledgers) {
    lines.push(
      `  ${task.task_id}: ${task.last_outcome ?? '-'}; ${stallLine(task.stalled)}${task.reviewer_assessment ? `; reviewer ${task.reviewer_assessment}` : ''}`,
    );
  }
  if (result.stalled_task_ids.length > 0) lines.push(`stalled: ${result.stalled_task_ids.join(', ')} (exit 1)`);
  return lines;
}
