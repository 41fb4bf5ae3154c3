import { sha256Hex } from '#kernel/canonical.js';
import type { IncomingCall } from './call.js';
import { checkGeminiGeneration } from './gemini-body.js';
import { governedRequest, refusedRequest, refuseMalformed } from './governed-request.js';
import { checkGeneration } from './request-body.js';
import { reservedBounds } from './reservation.js';
import { routedExtra, routeOf } from './route-plan.js';
import { routeGeneration } from './routed.js';
import { streamReply } from './stream-reply.js';
import { sendUpstream } from './upstream.js';
import { wholeReply } from './whole-reply.js';

/**
 * A generation: validate → auth → budget reserve → breaker → DISPATCH (router.admit) → upstream through the one
 * retry loop (a retry only ever follows a reply whose headers said failure, so never a byte the client saw) →
 * the reply forwarded as it arrives, its terminal event held → EXCHANGE + settlement committed → the held
 * event (or the non-streaming body) released.
 */
export async function handleGeneration(incoming: IncomingCall): Promise<void> {
  const { endpoint, router } = incoming;
  const gen =
    endpoint.family === 'gemini'
      ? checkGeminiGeneration(endpoint.surface, incoming.body, endpoint.params?.model ?? '')
      : checkGeneration(endpoint.surface, incoming.body);
  if (typeof gen === 'string') return refuseMalformed(incoming, refusedRequest(incoming), gen);
  incoming.log.model = gen.model;
  const routed = await routeGeneration(incoming, gen);
  if (routed === null) return;
  const { ctx, upstreamBody } = routed;
  const request = governedRequest(ctx, gen.prompt, gen.model);
  const route = await routeOf(ctx, request);
  if (route === false) return;
  const admission = await router.admit({
    request,
    route,
    bounds: await reservedBounds(ctx, gen, upstreamBody),
    outputLimit: gen.outputLimit,
    inputLimit: gen.inputLimit,
    contextHash: sha256Hex(ctx.bytes),
    promptPieces: gen.promptPieces,
  });
  if (!admission.ok) return ctx.refuse(admission.code, admission.message, admission.retryAfterMs);
  const call = admission.call;
  const extra: Record<string, unknown> = {
    gateway_request_id: ctx.requestId,
    stream: gen.stream,
    surface: endpoint.surface,
  };
  if (ctx.translator !== null) extra.upstream_surface = ctx.translator.upstream;
  const sent = await sendUpstream(ctx, call, upstreamBody, extra);
  if (!sent.ok) return;
  const wire = sent.result;
  const attempts = sent.attempts;
  const finalExtra = routedExtra(ctx, Object.assign({}, extra, { upstream_request_id: wire.requestId }));
  if (gen.stream) return streamReply(ctx, call, gen, wire, attempts, finalExtra);
  return wholeReply(ctx, call, gen, wire, attempts, finalExtra);
}
