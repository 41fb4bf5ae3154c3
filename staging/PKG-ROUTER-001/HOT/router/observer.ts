import type { AppendInput } from '#kernel/ledger/index.js';
import type { PromptRequest } from './request.js';

/** What an observer is told of an admitted call: the request as its records name it, and when it started. */
export interface ObservedCall {
  readonly request: PromptRequest & { provider_id: string; model_id: string };
  readonly start: number;
  /** The secrets a record of this call is scrubbed of (the upstream keys, the client's token). */
  readonly secrets: readonly string[];
}

/** A call's end as its records say it: the EXCHANGE written (or spooled), and the settlement's cost. */
export interface ObservedConclusion {
  exchange: AppendInput;
  /** The EXCHANGE's ledger id ('' when it was spooled or could not be recorded). */
  exchangeId: string;
  /** The settled cost in currency units; null when unknown or unpriced (or no budget). */
  cost: number | null;
  latencyMs: number;
}

/**
 * Told of every governed call (metrics, traces) by the one pipeline (router/governed.ts), whatever its surface.
 * Called synchronously on the call path, so an implementation does O(1) work and never throws: a throw is caught
 * and dropped by the pipeline, never allowed to fail the call it observes.
 */
export interface GovernedObserver {
  admitted(call: ObservedCall): void;
  /** A refusal recorded (or sampled away) as PROMPT_REJECTED, with its code. */
  refused(request: Partial<PromptRequest>, code: string): void;
  /** The first byte of a streamed reply released to the client, `ms` after admission. */
  firstToken(call: ObservedCall, ms: number): void;
  concluded(call: ObservedCall, conclusion: ObservedConclusion): void;
  /** An upstream attempt about to be sent (the n-th of the call's, in the order its EXCHANGE lists them). */
  attemptStarted?(call: ObservedCall): void;
}

/** One observer telling each of the present ones in turn (each one's fault dropped alone). */
export function observers(first: GovernedObserver, ...rest: (GovernedObserver | undefined)[]): GovernedObserver {
  const present = [first, ...rest.filter((o): o is GovernedObserver => o !== undefined)];
  if (present.length === 1) return first;
  const each = (tell: (o: GovernedObserver) => void): void => {
    for (const o of present) notify(o, tell);
  };
  return {
    admitted: (call) => each((o) => o.admitted(call)),
    refused: (request, code) => each((o) => o.refused(request, code)),
    firstToken: (call, ms) => each((o) => o.firstToken(call, ms)),
    concluded: (call, seen) => each((o) => o.concluded(call, seen)),
    attemptStarted: (call) => each((o) => o.attemptStarted?.(call)),
  };
}

/** Run an observer's callback, dropping what it throws: an observer never fails the call. */
export function notify(observer: GovernedObserver | undefined, tell: (o: GovernedObserver) => void): void {
  if (observer === undefined) return;
  try {
    tell(observer);
  } catch {
    // An observer's fault is its own; the call it watches goes on.
  }
}
