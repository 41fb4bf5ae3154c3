import type { ProgressLedger } from './progress-ledger.js';
import type { TaskLedger } from './task-ledger.js';

export type LedgerMode = 'ledger' | 'ledger_plus_fallback';
export type FallbackReason = 'rebuild_failed';

/**
 * The compact, ledger-first delta packet: everything per-dispatch that the model needs about the run,
 * rendered deterministically (same ledgers → same bytes) so only real changes move the dynamic tail hash.
 */
export function buildDeltaPacket(progress: ProgressLedger, task: TaskLedger, mode: LedgerMode): string {
  const { totals } = progress;
  const lines = [
    `Run: ${task.run_id} (spec ${progress.spec_name}, plan v${task.plan_version})`,
    `Progress: ${totals.completed}/${totals.total} completed, ${totals.in_progress} in progress, ${totals.pending} pending; active task ${progress.active_task_id ?? 'none'}`,
  ];
  const current = progress.current_task;
  if (current) {
    lines.push(`Task ${current.id} [${current.status}]: ${current.description}`);
    if (current.requirements && current.requirements.length > 0)
      lines.push(`Requirements: ${current.requirements.join(', ')}`);
  }
  if (task.last_outcome !== undefined) lines.push(`Last outcome: ${task.last_outcome}`);
  if (task.summary !== undefined) lines.push(`Last summary: ${task.summary}`);
  if (task.reviewer_assessment !== undefined) lines.push(`Reviewer assessment: ${task.reviewer_assessment}`);
  pushList(
    lines,
    'Reviewer issues',
    (task.reviewer_issues ?? []).map(
      (issue) => `[${issue.severity}] ${issue.message}${issue.file ? ` (${issue.file})` : ''}`,
    ),
  );
  pushList(lines, 'Required fixes', task.required_fixes);
  pushList(lines, 'Blockers', task.blockers);
  lines.push(
    `Stall: ${task.stalled.consecutive_non_progress}/${task.stalled.threshold} consecutive non-progress outcomes${task.stalled.flagged ? ' (STALLED)' : ''}`,
  );
  if (task.replan_hint !== undefined) lines.push(`Replan hint: ${task.replan_hint}`);
  if (mode === 'ledger_plus_fallback')
    lines.push('Ledger mode: ledger_plus_fallback (tasks.md could not be re-read; progress is from the last snapshot)');
  return lines.join('\n');
}

function pushList(lines: string[], title: string, items: readonly string[]): void {
  if (items.length === 0) return;
  lines.push(`${title}:`);
  for (const item of items) lines.push(`- ${item}`);
}
