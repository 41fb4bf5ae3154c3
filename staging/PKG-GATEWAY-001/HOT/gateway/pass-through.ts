import { sha256Hex } from '#kernel/canonical.js';
import { type CallContext, callContext, type IncomingCall } from './call.js';
import { noteConcluded } from './conclusion.js';
import { governedRequest, refuseMalformed } from './governed-request.js';
import { describe, MODEL_ID } from './request-body.js';
import { routedExtra, routeOf } from './route-plan.js';
import { passedQuery } from './surfaces.js';
import { failMalformed } from './upstream-failure.js';
import { readReply, sendUpstream } from './upstream.js';
import { releaseWhole } from './whole-reply.js';

/** The breaker and EXCHANGE model of a call that names none (GET /v1/models). */
const NO_MODEL = 'models';

/**
 * count_tokens and models: round-trips to the provider like any other, so governed like any other — auth, the
 * breaker, DISPATCH, the one retry loop, one EXCHANGE holding the upstream's answer — with a zero budget bound
 * (the upstream bills nothing for them) and zero usage.
 */
export async function handlePassThrough(incoming: IncomingCall): Promise<void> {
  const { provider } = incoming;
  // The server answers 503 before calling here when the family has no provider.
  if (provider === null) throw new Error('a pass-through call reached its handler without a provider');
  const ctx = callContext(incoming, provider, null);
  const { endpoint, identity, router } = ctx;
  const checked = passThroughRequest(ctx);
  if (typeof checked === 'string') {
    const { agent, session, token } = identity;
    const refused = { contract_id: endpoint.surface, agent_id: agent, session_id: session };
    return refuseMalformed(ctx, { ...refused, ...(token === null ? {} : { auth_token: token }) }, checked);
  }
  const { model, query } = checked;
  ctx.log.model = model === NO_MODEL ? null : model;
  const post = endpoint.method === 'POST';
  const prompt = post ? ctx.bytes.toString('utf8') : new URLSearchParams(query).toString();
  const request = governedRequest(ctx, prompt, model);
  const route = await routeOf(ctx, request);
  if (route === false) return;
  const admission = await router.admit({
    request,
    bounds: { estimated_input_tokens: 0, max_output_tokens: 0 },
    contextHash: sha256Hex(ctx.bytes),
    route,
  });
  if (!admission.ok) return ctx.refuse(admission.code, admission.message, admission.retryAfterMs);
  const call = admission.call;
  const extra = { gateway_request_id: ctx.requestId, stream: false, surface: endpoint.surface };
  const body = post ? (ctx.body as Record<string, unknown>) : null;
  const sent = await sendUpstream(ctx, call, body, extra, query);
  if (!sent.ok) return;
  const wire = sent.result;
  const text = await readReply(ctx, call, wire, sent.attempts, extra);
  if (text === null) return;
  const problem = passThroughProblem(text);
  if (problem !== null) return failMalformed(ctx, call, wire, sent.attempts, extra, problem);
  const zero = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, raw: null };
  const concluded = await router.conclude(call, {
    kind: 'answered',
    answer: {
      provider_id: ctx.provider.id,
      model,
      content: text.toString('utf8'),
      stop_reason: 'stop',
      raw_stop_reason: null,
      usage: zero,
      request_id: wire.requestId,
      latency_ms: 0,
    },
    usageFinal: true,
    attempts: sent.attempts,
    extra: routedExtra(ctx, Object.assign({}, extra, { upstream_request_id: wire.requestId })),
  });
  noteConcluded(ctx, concluded, 'success');
  releaseWhole(ctx, call, concluded, text);
}

/**
 * A count_tokens or models request's model and upstream query, or why it is refused: the upstream would refuse
 * it too, but only after a round-trip the gateway had already governed and recorded.
 */
function passThroughRequest(ctx: CallContext): { model: string; query: Record<string, string> } | string {
  const { body, endpoint } = ctx;
  if (endpoint.method === 'POST' && (typeof body !== 'object' || body === null || Array.isArray(body)))
    return 'the request body must be a JSON object';
  const named = endpoint.params?.model ?? (body as { model?: unknown } | null)?.model;
  if (named !== undefined && (typeof named !== 'string' || !MODEL_ID.test(named)))
    return `model: 1-200 printable ASCII characters without spaces are required, got ${describe(named)}`;
  const query = passedQuery(endpoint.surface, ctx.search);
  if (typeof query === 'string') return query;
  return { model: named ?? NO_MODEL, query };
}

/**
 * Why a count_tokens or models 2xx body is no answer, or null. Both APIs answer with a JSON object; anything else
 * (an HTML page from a proxy, an empty or compressed body, an error object sent with a 2xx) would reach the client
 * as a success its SDK cannot read, and be recorded as one.
 */
function passThroughProblem(bytes: Buffer): string | null {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const { type, error } = value as { type?: unknown; error?: unknown };
  if (type === 'error' || (typeof error === 'object' && error !== null)) return 'an error object';
  return null;
}
