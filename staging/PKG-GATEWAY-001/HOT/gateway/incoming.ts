import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallContext } from './call.js';
import { sendJson } from './http-io.js';
import type { RequestLog } from './log.js';
import { refusalFor } from './refusals.js';
import { errorBody, requestIdHeader, type Family } from './surfaces.js';

/** A request on its way through the handlers. */
export interface Incoming {
  req: IncomingMessage;
  res: ServerResponse;
  /** Fires when the client goes away (or the drain gives up on the call). */
  signal: AbortSignal;
  requestId: string;
  /** performance.now() when the request arrived. */
  started: number;
  method: string;
  path: string;
  /** The query string as the client sent it, without its '?'. */
  search: string;
  log: RequestLog;
}

export type Handler = (incoming: Incoming) => void | Promise<void>;

export type Fail = CallContext['fail'];

export function requestLog(method: string, path: string, requestId: string): RequestLog {
  return {
    ts: new Date().toISOString(),
    method,
    path,
    status: 0,
    surface: null,
    model: null,
    session: null,
    agent: null,
    request_id: requestId,
    exchange_id: null,
    outcome: null,
    input_tokens: null,
    output_tokens: null,
    cache_read_tokens: null,
    cache_write_tokens: null,
    cost: null,
    ms: 0,
  };
}

/** An error in the client's API shape, never to be retried as is. */
export function failer({ res, requestId }: Incoming): Fail {
  return (family, status, kind, message, extra = {}) => {
    sendJson(res, status, errorBody(family, kind, message, requestId, status), {
      [requestIdHeader(family)]: requestId,
      'x-should-retry': 'false',
      ...extra,
    });
  };
}

/** A governed refusal (auth, budget, breaker, ledger) as the client's API answers it; logged as rejected. */
export function refuser({ res, requestId, log }: Incoming, family: Family): CallContext['refuse'] {
  return (code, message, retryAfterMs) => {
    const refusal = refusalFor(code);
    const headers: Record<string, string> = { [requestIdHeader(family)]: requestId };
    if (refusal.noRetry) headers['x-should-retry'] = 'false';
    if (retryAfterMs !== null && retryAfterMs !== undefined)
      headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
    log.outcome = 'rejected';
    sendJson(
      res,
      refusal.status,
      errorBody(family, refusal.kind, `${code}: ${message}`, requestId, refusal.status),
      headers,
    );
  };
}
