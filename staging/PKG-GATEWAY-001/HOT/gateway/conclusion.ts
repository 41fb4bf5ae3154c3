import type { WireResponse, WireResult } from '#providers/wire/spec.js';
import type { ProviderResult } from '#providers/spec.js';
import type { Concluded } from '#router/governed.js';
import type { CallContext } from './call.js';
import { sendJson } from './http-io.js';
import type { Generation } from './request-body.js';
import { errorBody, requestIdHeader } from './surfaces.js';

/** A reply whose content (a tool input, say) nests too deep to serialise cannot be recorded, so is not released. */
export const UNRECORDABLE = 'its content is nested too deep to be recorded';

/** The reply's content blocks as the EXCHANGE records them, or null when they cannot be serialised. */
export function recordableContent(result: WireResult): string | null {
  try {
    return JSON.stringify(result.blocks);
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

export function answerOf(
  ctx: CallContext,
  gen: Generation,
  wire: WireResponse,
  result: WireResult,
  content: string,
): ProviderResult {
  return {
    provider_id: ctx.provider.id,
    model: result.model ?? gen.model,
    content,
    stop_reason: result.stop_reason,
    raw_stop_reason: result.raw_stop_reason,
    usage: result.usage,
    // An upstream sending no request id header (Gemini) names the reply in its body.
    request_id: wire.requestId ?? result.response_id ?? null,
    latency_ms: 0,
  };
}

export function resultExtra(result: WireResult, extra: Record<string, unknown>): Record<string, unknown> {
  const named = extra.upstream_request_id ?? result.response_id ?? null;
  // Object.assign, not a spread given new fields: that object gets a V8 map of its own on every call (call.ts).
  return Object.assign({}, extra, { upstream_request_id: named, raw_stop_reason: result.raw_stop_reason });
}

export function noteConcluded(ctx: CallContext, concluded: Concluded, outcome: string, result?: WireResult): void {
  ctx.log.exchange_id = concluded.exchangeEntryId || null;
  ctx.log.outcome = outcome;
  ctx.log.cost = concluded.cost;
  if (result) {
    ctx.log.input_tokens = result.usage.input_tokens;
    ctx.log.output_tokens = result.usage.output_tokens;
    ctx.log.cache_read_tokens = result.usage.cache_read_tokens;
    ctx.log.cache_write_tokens = result.usage.cache_write_tokens;
  }
}

/** Neither committed nor spooled: the records go to stderr (the operator's only copy), the client gets an error. */
export function logUnrecorded(concluded: Concluded): void {
  process.stderr.write(`cplane serve: EXCHANGE_NOT_RECORDED: ${JSON.stringify(concluded.unrecorded)}\n`);
}

export function unrecorded(ctx: CallContext, concluded: Concluded): void {
  logUnrecorded(concluded);
  sendJson(
    ctx.res,
    500,
    errorBody(
      ctx.endpoint.family,
      'api_error',
      'the exchange could not be recorded; the reply is withheld',
      ctx.requestId,
      500,
    ),
    { [requestIdHeader(ctx.endpoint.family)]: ctx.requestId, 'x-should-retry': 'false' },
  );
}
