import type { IncomingMessage } from 'node:http';
import type { WireResponse } from '#providers/wire/spec.js';
import type { GovernedCall } from '#router/governed.js';
import type { AttemptRecord } from '#router/records.js';
import { classify } from '#router/send.js';
import type { CallContext } from './call.js';
import { noteConcluded } from './conclusion.js';
import { routedExtra } from './route-plan.js';
import { failUpstream } from './upstream-failure.js';

/** Headers the upstream must see as the client sent them. */
export function passedHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = req.headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** A whole reply's bytes; null once a failure to read them is concluded and answered. */
export async function readReply(
  ctx: CallContext,
  call: GovernedCall,
  wire: WireResponse,
  attempts: AttemptRecord[],
  extra: Record<string, unknown>,
): Promise<Buffer | null> {
  try {
    return await readAll(wire);
  } catch (error) {
    const failure = classify(error);
    const concluded = await ctx.router.conclude(call, { kind: 'failed', failure, attempts, extra });
    noteConcluded(ctx, concluded, ctx.signal.aborted ? 'cancelled' : 'error');
    failUpstream(ctx, failure);
    return null;
  }
}

/**
 * The upstream call inside the one retry loop; a failure is concluded (EXCHANGE, settlement) and answered here.
 * An attempt counts as sent once it left while the client was still there: a client gone before that costs nothing.
 */
export async function sendUpstream(
  ctx: CallContext,
  call: GovernedCall,
  body: Record<string, unknown> | null,
  extra: Record<string, unknown>,
  query: Record<string, string> = {},
): Promise<{ ok: true; result: WireResponse; attempts: AttemptRecord[] } | { ok: false }> {
  const { router } = ctx;
  let sentUpstream = false;
  const sent = await router.attempts(
    call,
    () => {
      sentUpstream ||= !ctx.signal.aborted;
      return callProvider(ctx, body, query);
    },
    ctx.signal,
    (wire) => wire.requestId,
  );
  if (sent.ok) {
    const plan = ctx.plan;
    if (plan) {
      // The reply is read with the reader of the deployment that answered it, translated back if it was sent one.
      const target = plan.target;
      ctx.provider = target.provider;
      ctx.servedBy = `${target.deployment}/${target.model}`;
      if (ctx.legs) ctx.translator = ctx.legs.leg(target.deployment)?.translator ?? null;
    }
    return { ok: true, result: sent.result, attempts: sent.attempts };
  }
  const concluded = await router.conclude(call, {
    kind: 'failed',
    failure: sent.failure,
    attempts: sent.attempts,
    extra: routedExtra(ctx, extra),
    unsent: !sentUpstream,
  });
  noteConcluded(ctx, concluded, sent.failure.kind === 'cancelled' ? 'cancelled' : 'error');
  failUpstream(ctx, sent.failure);
  return { ok: false };
}

/** The provider call itself, one attempt: the only place the gateway speaks the provider contract. */
function callProvider(
  ctx: CallContext,
  body: Record<string, unknown> | null,
  query: Record<string, string>,
): Promise<WireResponse> {
  const target = ctx.plan?.target;
  const leg = target === undefined ? null : (ctx.legs?.leg(target.deployment) ?? null);
  const surface = leg?.surface ?? ctx.translator?.upstream ?? ctx.endpoint.surface;
  let sent = leg?.body ?? body;
  let params = ctx.upstreamParams ?? ctx.endpoint.params;
  // A routed attempt asks the deployment for its own model: the client named the alias. Gemini names it in the path.
  if (target !== undefined && sent !== null) {
    if (surface.startsWith('gemini.')) params = { ...params, model: target.model };
    else sent = { ...sent, model: target.model };
  }
  return (target?.provider ?? ctx.provider).call(
    {
      surface,
      body: sent,
      headers: passedHeaders(ctx.req),
      query,
      ...(params === undefined ? {} : { params }),
    },
    {
      signal: ctx.signal,
      timeoutMs: ctx.upstreamTimeoutMs,
      ...(ctx.deadline === null ? {} : { deadlineMs: Math.max(1, Math.ceil(ctx.deadline.at - performance.now())) }),
    },
  );
}

async function readAll(wire: WireResponse): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of wire.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
