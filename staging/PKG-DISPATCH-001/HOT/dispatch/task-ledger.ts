import { FACT_KEYS, asNumber, asObject, asString, asStringArray, factsFor, type StateSnapshotFact } from './facts.js';
import { REVIEWER_ASSESSMENTS, stallState, type ReviewerAssessment, type StallState } from './stall.js';

export interface ReviewerIssue {
  severity: string;
  message: string;
  file?: string;
}

/** The seed's TaskLedger, snake_case as printed and persisted. */
export interface TaskLedger {
  run_id: string;
  task_id: string;
  plan_version: number;
  summary?: string;
  reviewer_assessment?: ReviewerAssessment;
  reviewer_issues?: ReviewerIssue[];
  blockers: string[];
  required_fixes: string[];
  stalled: StallState;
  replan_hint?: string;
  last_outcome?: string;
}

/** Build a task ledger from a snapshot's facts: known keys only, each type-checked, anything else ignored. */
export function buildTaskLedger(
  runId: string,
  taskId: string,
  facts: readonly StateSnapshotFact[],
  threshold: number,
): TaskLedger {
  const task = factsFor(facts, taskId);
  const run = factsFor(facts, null);
  const ledger: TaskLedger = {
    run_id: runId,
    task_id: taskId,
    plan_version: asNumber(run.get(FACT_KEYS.progressPlanVersion)) ?? 1,
    blockers: asStringArray(task.get(FACT_KEYS.taskBlockers)),
    required_fixes: asStringArray(task.get(FACT_KEYS.taskRequiredFixes)),
    stalled: stallState(asNumber(task.get(FACT_KEYS.taskStalledCount)) ?? 0, threshold),
  };
  const summary = asString(task.get(FACT_KEYS.taskSummary));
  if (summary !== undefined) ledger.summary = summary;
  const assessment = asString(task.get(FACT_KEYS.taskReviewerAssessment));
  if (assessment !== undefined && (REVIEWER_ASSESSMENTS as readonly string[]).includes(assessment))
    ledger.reviewer_assessment = assessment as ReviewerAssessment;
  const issues = readIssues(task.get(FACT_KEYS.taskReviewerIssues));
  if (issues.length > 0) ledger.reviewer_issues = issues;
  const hint = asString(task.get(FACT_KEYS.taskReplanHint));
  if (hint !== undefined) ledger.replan_hint = hint;
  const last = asString(task.get(FACT_KEYS.taskLastOutcome));
  if (last !== undefined) ledger.last_outcome = last;
  return ledger;
}

function readIssues(value: Parameters<typeof asObject>[0]): ReviewerIssue[] {
  if (!Array.isArray(value)) return [];
  const out: ReviewerIssue[] = [];
  for (const item of value) {
    const issue = asObject(item);
    const severity = asString(issue?.severity);
    const message = asString(issue?.message);
    if (severity === undefined || message === undefined) continue;
    const file = asString(issue?.file);
    out.push(file === undefined ? { severity, message } : { severity, message, file });
  }
  return out;
}
