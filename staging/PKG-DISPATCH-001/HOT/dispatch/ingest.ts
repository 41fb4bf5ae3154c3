import { CpError, show } from '#kernel/errors.js';
import {
  FACT_KEYS,
  asNumber,
  factsFor,
  taskFact,
  type FactUpdate,
  type JsonValue,
  type StateSnapshotFact,
} from './facts.js';
import {
  IMPLEMENTER_OUTCOMES,
  REVIEWER_ASSESSMENTS,
  nextStallCount,
  replanHint,
  stallState,
  type DispatchOutput,
  type ImplementerOutcome,
  type ReviewerAssessment,
  type StallState,
} from './stall.js';
import type { ReviewerIssue } from './task-ledger.js';

/** What an implementer or reviewer reported back for one task. */
export type IngestInput = DispatchOutput & {
  summary?: string;
  blockers?: string[];
  required_fixes?: string[];
  issues?: ReviewerIssue[];
};

const MAX_TEXT = 16_000;
const MAX_ITEMS = 100;
/** The fields each role's output carries; any other (a typo, a field of the other role) would be dropped unseen. */
const FIELDS: Readonly<Record<DispatchOutput['role'], readonly string[]>> = {
  implementer: ['role', 'outcome', 'summary', 'blockers'],
  reviewer: ['role', 'assessment', 'summary', 'blockers', 'required_fixes', 'issues'],
};
const ISSUE_FIELDS: readonly string[] = ['severity', 'message', 'file'];

/** The first own key of `record` outside `allowed` whose value is set, if any. */
function extraField(record: Record<string, unknown>, allowed: readonly string[]): string | undefined {
  return Object.keys(record).find((key) => !allowed.includes(key) && record[key] !== undefined);
}

/** Parse-and-validate an ingest payload at the edge (CLI flags or a caller's JSON). */
export function parseIngestInput(value: unknown): IngestInput {
  const record = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}) as Record<
    string,
    unknown
  >;
  const invalid = (why: string): never => {
    throw new CpError('ERR_DISPATCH_OUTPUT_INVALID', `dispatch output ${why}`, {
      hint: 'pass role implementer with outcome completed|blocked|failed, or role reviewer with assessment approved|needs_changes|blocked',
      details: { value: show(value, 300) },
    });
  };
  let output: DispatchOutput;
  if (
    record.role === 'implementer' &&
    (IMPLEMENTER_OUTCOMES as readonly unknown[]).includes(record.outcome) &&
    record.assessment === undefined
  ) {
    output = { role: 'implementer', outcome: record.outcome as ImplementerOutcome };
  } else if (
    record.role === 'reviewer' &&
    (REVIEWER_ASSESSMENTS as readonly unknown[]).includes(record.assessment) &&
    record.outcome === undefined
  ) {
    output = { role: 'reviewer', assessment: record.assessment as ReviewerAssessment };
  } else {
    return invalid(
      `has role ${show(record.role)}, outcome ${show(record.outcome)}, assessment ${show(record.assessment)}`,
    );
  }
  const extra = extraField(record, FIELDS[output.role]);
  if (extra !== undefined)
    invalid(
      `has field ${show(extra)}, which a ${output.role} output does not carry (fields: ${FIELDS[output.role].join(', ')})`,
    );
  const input: IngestInput = { ...output };
  const summary = record.summary;
  if (summary !== undefined) {
    if (typeof summary !== 'string' || summary.length > MAX_TEXT)
      invalid(`summary must be a string of at most ${MAX_TEXT} characters`);
    input.summary = summary as string;
  }
  for (const field of ['blockers', 'required_fixes'] as const) {
    const list = record[field];
    if (list === undefined) continue;
    if (
      !Array.isArray(list) ||
      list.length > MAX_ITEMS ||
      list.some((item) => typeof item !== 'string' || item.length > MAX_TEXT)
    ) {
      invalid(`${field} must be at most ${MAX_ITEMS} strings`);
    }
    input[field] = [...(list as string[])];
  }
  const issues = record.issues;
  if (issues !== undefined) input.issues = parseIssues(issues, invalid);
  return input;
}

function parseIssues(value: unknown, invalid: (why: string) => never): ReviewerIssue[] {
  if (!Array.isArray(value) || value.length > MAX_ITEMS)
    return invalid(`issues must be an array of at most ${MAX_ITEMS}`);
  return value.map((item: unknown) => {
    const issue = (item ?? {}) as Record<string, unknown>;
    const extra = typeof item === 'object' && item !== null ? extraField(issue, ISSUE_FIELDS) : undefined;
    if (extra !== undefined) invalid(`issue has field ${show(extra)}; issues carry ${ISSUE_FIELDS.join(', ')}`);
    const text = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_TEXT;
    if (!text(issue.severity) || !text(issue.message) || (issue.file !== undefined && !text(issue.file))) {
      return invalid(`issues need {severity, message, file?} strings of at most ${MAX_TEXT} characters`);
    }
    return issue.file === undefined
      ? { severity: issue.severity, message: issue.message }
      : { severity: issue.severity, message: issue.message, file: issue.file as string };
  });
}

export interface IngestEffect {
  updates: FactUpdate[];
  before: StallState;
  after: StallState;
  newly_flagged: boolean;
}

export function outputLabel(output: DispatchOutput): string {
  return output.role === 'implementer' ? `implementer ${output.outcome}` : `reviewer ${output.assessment}`;
}

/** The fact updates one output causes for its task, including the stall counter and the replan hint. */
export function ingestEffect(
  facts: readonly StateSnapshotFact[],
  taskId: string,
  input: IngestInput,
  threshold: number,
): IngestEffect {
  const current = factsFor(facts, taskId);
  const beforeCount = asNumber(current.get(FACT_KEYS.taskStalledCount)) ?? 0;
  const before = stallState(beforeCount, threshold);
  const after = stallState(nextStallCount(beforeCount, input), threshold);
  const label = outputLabel(input);
  const put = (key: Parameters<typeof taskFact>[1], value: JsonValue): FactUpdate => taskFact(taskId, key, value);
  const updates: FactUpdate[] = [
    put(FACT_KEYS.taskLastOutcome, label),
    put(FACT_KEYS.taskStalledCount, after.consecutive_non_progress),
  ];
  if (input.summary !== undefined) updates.push(put(FACT_KEYS.taskSummary, input.summary));
  updates.push(...roleUpdates(input, put));
  const hint = after.flagged
    ? replanHint(taskId, after, input.summary === undefined ? label : `${label}: ${input.summary}`)
    : null;
  updates.push(put(FACT_KEYS.taskReplanHint, hint));
  return { updates, before, after, newly_flagged: after.flagged && !before.flagged };
}

function roleUpdates(
  input: IngestInput,
  put: (key: Parameters<typeof taskFact>[1], value: JsonValue) => FactUpdate,
): FactUpdate[] {
  const fromSummary = input.summary === undefined ? [] : [input.summary];
  if (input.role === 'implementer') {
    if (input.outcome === 'completed') return [put(FACT_KEYS.taskBlockers, null)];
    const blockers = input.blockers && input.blockers.length > 0 ? input.blockers : fromSummary;
    return blockers.length > 0 ? [put(FACT_KEYS.taskBlockers, blockers)] : [];
  }
  const out = [
    put(FACT_KEYS.taskReviewerAssessment, input.assessment),
    put(
      FACT_KEYS.taskReviewerIssues,
      input.issues && input.issues.length > 0 ? input.issues.map((issue) => ({ ...issue })) : null,
    ),
  ];
  if (input.assessment === 'approved')
    return [...out, put(FACT_KEYS.taskRequiredFixes, null), put(FACT_KEYS.taskBlockers, null)];
  const listed = input.assessment === 'needs_changes' ? input.required_fixes : input.blockers;
  const items = listed && listed.length > 0 ? listed : fromSummary;
  if (items.length === 0) return out;
  return [
    ...out,
    put(input.assessment === 'needs_changes' ? FACT_KEYS.taskRequiredFixes : FACT_KEYS.taskBlockers, items),
  ];
}
