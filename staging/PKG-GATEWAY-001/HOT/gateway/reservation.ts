import { openaiInputBound } from '#budgeter/tokens/openai.js';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';
import type { CallContext } from './call.js';
import type { CountCall } from './input-counts.js';
import type { Generation } from './request-body.js';
import { passedHeaders } from './upstream.js';

/**
 * What a generation reserves (docs/production.md, "How much a call reserves"): the byte bound of its body
 * (request-body.ts), or, where the model's tokens can be counted — an OpenAI-family model with its published
 * tokenizer, an Anthropic or Gemini model by the API's count endpoint when the operator switched it on — that count
 * of the body actually sent upstream plus its margins, whichever is smaller (both are upper bounds). A routed call
 * keeps the byte bound: its deployments may be models of other tokenizers.
 */
export async function reservedBounds(
  ctx: CallContext,
  gen: Generation,
  upstreamBody: Readonly<Record<string, unknown>>,
): Promise<Generation['bounds']> {
  if (ctx.plan !== null && ctx.plan !== undefined) return gen.bounds;
  const counted = await countedInput(ctx, gen.model, upstreamBody);
  if (counted === null || counted >= gen.bounds.estimated_input_tokens) return gen.bounds;
  return { ...gen.bounds, estimated_input_tokens: counted };
}

async function countedInput(
  ctx: CallContext,
  model: string,
  body: Readonly<Record<string, unknown>>,
): Promise<number | null> {
  const surface = ctx.translator?.upstream ?? ctx.endpoint.surface;
  // A tokenizer that cannot be loaded (a damaged install) costs the call its tighter reservation, never the call.
  if (surface === 'openai.chat' || surface === 'openai.responses')
    return openaiInputBound(body, model, surface).catch(() => null);
  const { provider } = ctx;
  if (surface === 'anthropic.messages') {
    const counts = ctx.inputCounts?.anthropic;
    if (!counts || !provider.surfaces.includes('anthropic.count_tokens')) return null;
    const call = countCall(ctx, provider, 'anthropic.count_tokens', counts.timeoutMs, {}, 'input_tokens');
    return counts.inputBound(body, call);
  }
  if (surface === 'gemini.generate' || surface === 'gemini.stream') {
    const counts = ctx.inputCounts?.gemini;
    // Cached content is billed from the cache, which a count of the body does not see.
    if (!counts || body.cachedContent !== undefined || !provider.surfaces.includes('gemini.count_tokens')) return null;
    const call = countCall(ctx, provider, 'gemini.count_tokens', counts.timeoutMs, { model }, 'totalTokens');
    return counts.inputBound(body, call, `models/${model}`);
  }
  return null;
}

/** One count call to the call's own upstream (with the client's anthropic-version and beta headers): its count. */
function countCall(
  ctx: CallContext,
  provider: WireProvider,
  surface: WireSurface,
  timeoutMs: number,
  params: Record<string, string>,
  field: 'input_tokens' | 'totalTokens',
): CountCall {
  return async (body, signal) => {
    const wire = await provider.call(
      { surface, body, headers: passedHeaders(ctx.req), params },
      { signal: AbortSignal.any([signal, ctx.signal]), timeoutMs, whole: true },
    );
    const chunks: Uint8Array[] = [];
    for await (const chunk of wire.body) chunks.push(chunk);
    if (wire.status !== 200) throw new Error(`the count answered ${wire.status}`);
    const reply = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    const count = reply[field];
    if (typeof count !== 'number') throw new Error(`the count answered no ${field}`);
    return count;
  };
}
