/** One line per request: what was asked, what came of it, what it cost. Never a credential. */
export interface RequestLog {
  ts: string;
  method: string;
  path: string;
  status: number;
  surface: string | null;
  model: string | null;
  session: string | null;
  agent: string | null;
  request_id: string;
  exchange_id: string | null;
  outcome: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  /** Settled cost in the budget's nano-units, or null (unknown, or not a generation). */
  cost: number | null;
  ms: number;
}

export function formatLog(entry: RequestLog, json: boolean): string {
  if (json) return JSON.stringify(entry);
  const parts = [
    entry.ts,
    entry.method,
    entry.path,
    String(entry.status),
    `${entry.ms.toFixed(1)}ms`,
    `id=${entry.request_id}`,
  ];
  const add = (key: string, value: string | number | null): void => {
    if (value !== null) parts.push(`${key}=${value}`);
  };
  add('surface', entry.surface);
  add('model', entry.model);
  add('session', entry.session);
  add('exchange', entry.exchange_id);
  add('outcome', entry.outcome);
  add('in', entry.input_tokens);
  add('out', entry.output_tokens);
  add('cache_read', entry.cache_read_tokens);
  add('cache_write', entry.cache_write_tokens);
  add('cost', entry.cost);
  return parts.join(' ');
}
