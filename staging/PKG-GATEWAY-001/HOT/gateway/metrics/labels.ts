/**
 * Label values bounded at the edge: a label takes a value from a set fixed when the gateway opens (or a value the
 * code itself produces, like an outcome), and anything else becomes `other`. A client choosing the model name or a
 * route contract therefore cannot grow the number of series; session, agent and key ids are never labels at all.
 */
export const OTHER = 'other';

export class BoundedLabel {
  private readonly allowed: ReadonlySet<string>;

  constructor(values: Iterable<string>) {
    this.allowed = new Set(values);
  }

  of(value: unknown): string {
    return typeof value === 'string' && this.allowed.has(value) ? value : OTHER;
  }
}

/** The gateway's surfaces (gateway/surfaces.ts); any other contract id (a `cplane route` contract) is `route`. */
export const SURFACES: readonly string[] = [
  'anthropic.messages',
  'anthropic.count_tokens',
  'anthropic.models',
  'openai.chat',
  'openai.responses',
  'openai.models',
];

export function surfaceLabel(contractId: unknown): string {
  return typeof contractId === 'string' && SURFACES.includes(contractId) ? contractId : 'route';
}

/** An EXCHANGE's outcome: success, error, timeout or cancelled (the record's decision and outcome). */
export function exchangeOutcome(decision: string | undefined, outcome: unknown): string {
  if (decision === 'SUCCESS') return 'success';
  if (decision === 'CANCELLED') return 'cancelled';
  return outcome === 'timeout' ? 'timeout' : 'error';
}

/** A refusal code is the catalogue's (the code names it, never the client): kept when it has that shape. */
export function codeLabel(code: string): string {
  return /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : OTHER;
}
