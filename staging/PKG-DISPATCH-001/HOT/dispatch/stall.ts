/** What one dispatch produced: an implementer outcome or a reviewer assessment. */
export type DispatchOutput =
  | { role: 'implementer'; outcome: ImplementerOutcome }
  | { role: 'reviewer'; assessment: ReviewerAssessment };

export type ImplementerOutcome = 'completed' | 'blocked' | 'failed';
export type ReviewerAssessment = 'approved' | 'needs_changes' | 'blocked';

export const IMPLEMENTER_OUTCOMES: readonly ImplementerOutcome[] = ['completed', 'blocked', 'failed'];
export const REVIEWER_ASSESSMENTS: readonly ReviewerAssessment[] = ['approved', 'needs_changes', 'blocked'];

export interface StallState {
  consecutive_non_progress: number;
  threshold: number;
  flagged: boolean;
}

export type StallEffect = 'increment' | 'reset' | 'none';

/**
 * The stall policy: implementer blocked/failed and reviewer blocked are non-progress (+1);
 * implementer completed and reviewer approved are forward progress (reset); needs_changes is neither.
 */
export function stallEffect(output: DispatchOutput): StallEffect {
  if (output.role === 'implementer') return output.outcome === 'completed' ? 'reset' : 'increment';
  if (output.assessment === 'approved') return 'reset';
  return output.assessment === 'blocked' ? 'increment' : 'none';
}

export function stallState(count: number, threshold: number): StallState {
  return { consecutive_non_progress: count, threshold, flagged: count >= threshold };
}

export function nextStallCount(count: number, output: DispatchOutput): number {
  const effect = stallEffect(output);
  return effect === 'increment' ? count + 1 : effect === 'reset' ? 0 : count;
}

/** The replan hint written as a fact when a task is flagged; names the task and what last happened. */
export function replanHint(taskId: string, state: StallState, last: string): string {
  return (
    `Task ${taskId} made no progress in ${state.consecutive_non_progress} consecutive dispatches (threshold ${state.threshold}; last: ${last}). ` +
    'Replan before dispatching it again: split the task, resolve the blockers, or escalate to a human.'
  );
}
