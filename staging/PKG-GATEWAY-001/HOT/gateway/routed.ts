// A generation's target and, when the target speaks another format than the client, the translation of its
// request, whole reply and stream frames (the translators live in #providers/translate/); for a model alias, the
// legs to each of its deployments (routed-legs.ts).
import type { TranslationRefused, Translator, Untranslatable } from '#providers/translate/index.js';
import type { SseFrame } from '#providers/wire/sse.js';
import type { WireProvider } from '#providers/wire/spec.js';
import { type CallContext, callContext, type IncomingCall } from './call.js';
import { refusedRequest, refuseMalformed } from './governed-request.js';
import { type AliasWays, RoutedLegs } from './routed-legs.js';
import type { Generation } from './request-body.js';

/**
 * The call's target (the model's provider family, targets.ts) and the body it is sent: the client's own, or its
 * translation; a model alias goes to its deployments instead, each spoken to in its own format. Null once answered: no provider for that family (503), or a field the target's format cannot
 * express (TRANSLATION_UNSUPPORTED, recorded as a refusal; nothing is sent upstream).
 */
export async function routeGeneration(
  incoming: IncomingCall,
  gen: Generation,
): Promise<{ ctx: CallContext; upstreamBody: Record<string, unknown> } | null> {
  const { endpoint } = incoming;
  const ways = incoming.routing?.ways(gen.model, endpoint.surface, gen.stream) ?? null;
  if (ways !== null) return routeAlias(incoming, gen, ways);
  const target = incoming.targets.targetFor(gen.model, endpoint.surface, endpoint.family, gen.stream);
  if ('unavailable' in target) {
    const message = `no ${target.unavailable} upstream is configured on this gateway (model ${JSON.stringify(gen.model)})`;
    incoming.fail(endpoint.family, 503, 'api_error', message);
    return null;
  }
  const ctx = callContext(incoming, target.provider, target.translator);
  if (target.translator === null) return { ctx, upstreamBody: gen.upstreamBody };
  // Gemini names the model in its path: a translated call to it fills the path from the client's model.
  if (target.surface === 'gemini.generate' || target.surface === 'gemini.stream')
    ctx.upstreamParams = { model: gen.model };
  const translated = target.translator.request(incoming.body as Record<string, unknown>, {
    model: gen.model,
    stream: gen.stream,
    defaultMaxTokens: gen.bounds.max_output_tokens,
  });
  if (translated.ok) return { ctx, upstreamBody: translated.value };
  await refuseUntranslatable(ctx, target.translator, translated.refusal);
  return null;
}

/**
 * A generation for a model alias: each deployment's leg worked out (its body translated once per upstream surface)
 * before anything is sent. A deployment the request cannot be carried to is left out of the call and named in its
 * EXCHANGE; when none is left the call is refused — VALIDATION_FAILED if no translation reaches any,
 * TRANSLATION_UNSUPPORTED naming the field if every translation refused one.
 */
async function routeAlias(
  incoming: IncomingCall,
  gen: Generation,
  ways: AliasWays,
): Promise<{ ctx: CallContext; upstreamBody: Record<string, unknown> } | null> {
  const legs = new RoutedLegs(ways, gen.upstreamBody, incoming.body as Record<string, unknown>, {
    model: gen.model,
    stream: gen.stream,
    defaultMaxTokens: gen.bounds.max_output_tokens,
  });
  const first = ways.ways[0]?.deployments[0];
  const provider = first === undefined ? undefined : incoming.routing?.resolver.deployments.get(first)?.provider;
  // The first deployment's provider names the call until an attempt answers (then the one that answered does).
  const ctx = callContext(incoming, provider ?? (incoming.provider as WireProvider), null);
  if (provider === undefined) {
    const problem = `model alias ${JSON.stringify(gen.model)} has no deployment a ${incoming.endpoint.surface} request can be sent to`;
    await refuseMalformed(ctx, refusedRequest(ctx), problem);
    return null;
  }
  ctx.legs = legs;
  if (legs.reachable) return { ctx, upstreamBody: gen.upstreamBody };
  const refused = legs.refusal() as { refusal: Untranslatable; translator: Translator };
  const each = legs.skipped.map(
    (s) => `${s.deployment} (${s.upstream_surface ?? 'no translation'}): ${s.field ?? s.why}`,
  );
  await refuseUntranslatable(
    ctx,
    refused.translator,
    refused.refusal,
    `model alias ${JSON.stringify(gen.model)}: ${each.join('; ')}`,
  );
  return null;
}

async function refuseUntranslatable(
  ctx: CallContext,
  translator: Translator,
  refusal: Untranslatable,
  routed?: string,
): Promise<void> {
  const served = `a ${translator.client} request served by ${translator.upstream}`;
  const message = `${refusal.field}: ${refusal.why} (${routed === undefined ? served : `${served}; ${routed}`})`;
  await ctx.router.recordRefusal(refusedRequest(ctx), 'TRANSLATION_UNSUPPORTED', message);
  ctx.refuse('TRANSLATION_UNSUPPORTED', message);
}

/** The whole reply the client gets: the upstream's bytes, or their translation (a problem string if it has none). */
export function clientReply(translator: Translator | null, json: unknown, bytes: Buffer): Buffer | string {
  if (translator === null) return bytes;
  const translated = translator.reply(json as Record<string, unknown>);
  if (!translated.ok) return `untranslatable reply: ${translated.refusal.field}: ${translated.refusal.why}`;
  return Buffer.from(JSON.stringify(translated.value), 'utf8');
}

/** The client's frames for one upstream frame: itself, or its translation (a fresh translator per stream). */
export function clientFrames(translator: Translator | null): (frame: SseFrame) => SseFrame[] {
  if (translator === null) return (frame) => [frame];
  const stream = translator.stream();
  return (frame) => stream.push(frame);
}

export function untranslatable(error: TranslationRefused): string {
  return `untranslatable reply: ${error.refusal.field}: ${error.refusal.why}`;
}
