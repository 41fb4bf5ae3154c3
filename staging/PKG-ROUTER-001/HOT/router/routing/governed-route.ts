import type { Usage } from '#providers/spec.js';
import type { BreakerPass, CircuitBreaker } from '../breaker.js';
import type { AttemptRecord } from '../records.js';
import { mayHaveBilled, type SendFailure, type SendOptions } from '../send.js';
import type { RoutedTo, Unroutable } from './resolver.js';

// The governed pipeline's side of routing (router/governed.ts): the Route a routed call carries, and the hooks the
// one retry loop takes to move it between deployments.

/**
 * A routed call's targets (router/routing/resolver.ts RoutePlan): the deployment it is on, with its breaker and
 * the pass that breaker gave; the pipeline moves it on after a failure the config falls back on.
 */
export interface Route {
  /** The model the budget is reserved under: the dearest target's, since any of them may answer. */
  readonly reserveModel: string;
  /** The upstream model of the deployment the call is on (null once it ended): what its answer is priced at. */
  readonly servedModel: string | null;
  readonly breaker: CircuitBreaker;
  readonly pass: BreakerPass | false;
  /** Asynchronous only when a shared RPM/TPM count is asked (router/routing/limits.ts). */
  start(): Unroutable | null | Promise<Unroutable | null>;
  next(failure: SendFailure): boolean | Promise<boolean>;
  attempted(): RoutedTo;
  finish(tokens: number | null): void;
}

/** The retry loop's routing hooks: the attempt's target in its record, and the move to the next deployment. */
export function routedLoop<R>(
  call: { breaker: CircuitBreaker; breakerPass: BreakerPass },
  route: Route,
  upstreamId: ((result: R) => string | null) | undefined,
): Pick<SendOptions<R>, 'reroute' | 'target'> {
  return {
    target: (outcome) => {
      const id = outcome.ok ? (upstreamId?.(outcome.result) ?? null) : upstreamIdOf(outcome.error);
      return { ...route.attempted(), upstream_request_id: id };
    },
    reroute: (failure) => {
      const moved = (ok: boolean): boolean => {
        if (!ok) return false;
        call.breaker = route.breaker;
        call.breakerPass = route.pass as BreakerPass;
        return true;
      };
      const next = route.next(failure);
      return typeof next === 'boolean' ? moved(next) : next.then(moved);
    },
  };
}

function upstreamIdOf(error: unknown): string | null {
  const id = (error as { request_id?: unknown } | null)?.request_id;
  return typeof id === 'string' ? id : null;
}

/** What an answer counts against its deployment's TPM limit. */
export function usedTokens(usage: Usage): number {
  return (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
}

const NO_FAILURE: SendFailure = {
  kind: 'none',
  error_code: '',
  status: null,
  retryable: false,
  retry_after_ms: null,
  message: '',
  after_success: false,
};

/** A routed call answered after an earlier attempt that may have been billed (a timeout once the body was sent). */
export function billedBeforeAnswer(attempts: readonly AttemptRecord[]): boolean {
  return mayHaveBilled(NO_FAILURE, attempts.slice(0, -1));
}
