import { CpError, show } from '#kernel/errors.js';

export interface ReserveInput {
  request_id: string;
  session_id: string;
  work_order_id?: string | undefined;
  agent_id?: string | undefined;
  /** The verified key's budget scope: charged to the `key` scope of that name, across sessions. */
  budget_scope?: string | undefined;
  model: string;
  /** An upper bound of the call's input tokens (the router's comes from budgeter/bound.ts), not a guess. */
  estimated_input_tokens: number;
  max_output_tokens: number;
}

const ID_PATTERN = /^[\x21-\x7e]{1,200}$/;
const FIELDS = new Set([
  'request_id',
  'session_id',
  'work_order_id',
  'agent_id',
  'budget_scope',
  'model',
  'estimated_input_tokens',
  'max_output_tokens',
]);

function invalid(field: string, value: unknown, expected: string): CpError {
  return new CpError(
    'ERR_BUDGET_INPUT_INVALID',
    `budget request field ${field} must be ${expected}, got ${show(value)}`,
    {
      hint: `fix ${field} in the reserve call`,
      details: { field, value: value ?? null },
    },
  );
}

function id(record: Record<string, unknown>, field: string, optional: boolean): string | undefined {
  const value = record[field];
  if (optional && (value === undefined || value === null)) return undefined;
  if (typeof value !== 'string' || !ID_PATTERN.test(value))
    throw invalid(field, value, '1-200 printable ASCII characters without spaces');
  return value;
}

function count(record: Record<string, unknown>, field: string): number {
  const value = record[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw invalid(field, value, 'a non-negative integer');
  return value;
}

/** Parse-and-validate a reserve request at the edge; the result carries only known fields. */
export function parseReserveInput(input: unknown): ReserveInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalid('request', input, 'an object');
  const record = input as Record<string, unknown>;
  const extra = Object.keys(record).filter((k) => !FIELDS.has(k));
  if (extra.length > 0) throw invalid(extra[0] as string, record[extra[0] as string], 'absent (unknown field)');
  const out: ReserveInput = {
    request_id: id(record, 'request_id', false) as string,
    session_id: id(record, 'session_id', false) as string,
    model: id(record, 'model', false) as string,
    estimated_input_tokens: count(record, 'estimated_input_tokens'),
    max_output_tokens: count(record, 'max_output_tokens'),
  };
  if (!Number.isSafeInteger(out.estimated_input_tokens + out.max_output_tokens)) {
    throw invalid(
      'max_output_tokens',
      out.max_output_tokens,
      `small enough that input + output tokens (${out.estimated_input_tokens} + it) stay within ${Number.MAX_SAFE_INTEGER}`,
    );
  }
  const workOrder = id(record, 'work_order_id', true);
  const agent = id(record, 'agent_id', true);
  if (workOrder !== undefined) out.work_order_id = workOrder;
  if (agent !== undefined) out.agent_id = agent;
  const budgetScope = id(record, 'budget_scope', true);
  if (budgetScope !== undefined) out.budget_scope = budgetScope;
  return out;
}

/** The model a settlement is priced at, when not the reservation's (a routed call answered by a cheaper target). */
export function parseModelId(value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value))
    throw invalid('model', value, '1-200 printable ASCII characters without spaces');
  return value;
}

export function parseRequestId(value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value))
    throw invalid('request_id', value, '1-200 printable ASCII characters without spaces');
  return value;
}
