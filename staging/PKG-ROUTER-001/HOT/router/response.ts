import type { Warning } from '#kernel/catalogue/define.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { AttemptRecord } from './records.js';

export type RouteOutcome = 'success' | 'error' | 'timeout' | 'rejected';

/** What route() returns (snake_case: it is printed by `cplane route --json` and read by agents). */
export interface PromptResponse {
  content: string;
  outcome: RouteOutcome;
  input_tokens: number;
  output_tokens: number;
  model_id: string;
  provider_id: string;
  latency_ms: number;
  timestamp: string;
  /** The EXCHANGE (or PROMPT_REJECTED) entry id; empty when the ledger write failed and the exchange was spooled, or a refusal without an authentic key was counted, not recorded (router/refusal-sampler.ts). */
  exchange_entry_id: string;
  /** The DISPATCH marker id; empty for rejections. */
  dispatch_entry_id: string;
  output_valid: boolean | null;
  output_validation_errors: string[];
  context_hash: string | null;
  error_code: string | null;
  error_message: string | null;
  cost_incurred: number | null;
  budget_remaining: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  stable_prefix_hash: string | null;
  attempts: AttemptRecord[];
  /** Failures after the provider answered (ledger spool, budget settle): surfaced, never swallowed. */
  warnings: Warning[];
  /**
   * Present only when the exchange could be neither committed nor spooled: the whole batch of records, so
   * the caller (the CLI prints it in its error output) keeps it. Nothing is lost silently.
   */
  unrecorded_exchange?: AppendInput[];
}

export function emptyResponse(timestamp: string, providerId: string, modelId: string): PromptResponse {
  return {
    content: '',
    outcome: 'rejected',
    input_tokens: 0,
    output_tokens: 0,
    model_id: modelId,
    provider_id: providerId,
    latency_ms: 0,
    timestamp,
    exchange_entry_id: '',
    dispatch_entry_id: '',
    output_valid: null,
    output_validation_errors: [],
    context_hash: null,
    error_code: null,
    error_message: null,
    cost_incurred: null,
    budget_remaining: null,
    cache_read_tokens: null,
    cache_write_tokens: null,
    stable_prefix_hash: null,
    attempts: [],
    warnings: [],
  };
}
