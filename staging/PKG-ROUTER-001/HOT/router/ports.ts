import type { Usage } from '../providers/spec.js';

/** What the router needs from the budgeter: reserve before the call, settle or release after it. */
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
  settle(requestId: string, usage: Usage): { cost: number | null; remaining_tokens: number | null };
  release(requestId: string): void;
}
