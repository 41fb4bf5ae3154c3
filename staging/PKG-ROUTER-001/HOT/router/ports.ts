/**
 * What the router needs from a provider and from the budgeter. Providers make exactly one attempt per
 * send; the router owns the one retry loop.
 */
export interface ProviderUsage {
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  raw?: unknown;
}

export interface ProviderCall {
  model: string;
  prompt: string;
  max_tokens: number;
  temperature?: number;
  /** A request body already rendered by the prompt compiler; sent as is. */
  body?: Record<string, unknown>;
}

export interface ProviderAnswer {
  content: string;
  finish_reason: string;
  model: string;
  usage: ProviderUsage;
}

export interface ProviderFailure {
  kind: string;
  status: number | null;
  retryable: boolean;
  retry_after_ms: number | null;
  message: string;
}

export interface ProviderPort {
  id: string;
  send(call: ProviderCall, options: { timeoutMs: number; signal?: AbortSignal }): Promise<ProviderAnswer>;
  /** Turn whatever send threw into a normalised failure. */
  classify(error: unknown): ProviderFailure;
}

export interface BudgetRequest {
  request_id: string;
  session_id: string;
  work_order_id?: string;
  agent_id?: string;
  model: string;
  estimated_input_tokens: number;
  max_output_tokens: number;
}

export type BudgetDecision = { ok: true; remaining_tokens: number | null } | { ok: false; code: string; message: string };

export interface BudgetPort {
  reserve(request: BudgetRequest): BudgetDecision;
  settle(requestId: string, usage: ProviderUsage): { cost: number | null; remaining_tokens: number | null };
  release(requestId: string): void;
}
