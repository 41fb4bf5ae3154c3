import { openaiInputBound } from '#budgeter/tokens/openai.js';
import type { WireProvider } from '#providers/wire/spec.js';
import type { CountCall } from './anthropic-count.js';
import type { CallContext } from './call.js';
import type { Generation } from './request-body.js';
import { passedHeaders } from './upstream.js';

/**
 * What a generation reserves (docs/production.md, "How much a call reserves"): the byte bound of its body
 * (request-body.ts), or, where the model's tokens can be counted — an OpenAI-family model with its published
 * tokenizer, an Anthropic model by count_tokens when the operator enabled it — that count of the body actually sent
 * upstream plus its margins, whichever is smaller (both are upper bounds). A routed call keeps the byte bound: its
 * deployments may be models of other tokenizers.
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
  const counts = ctx.anthropicCounts;
  if (surface !== 'anthropic.messages' || !counts || !ctx.provider.surfaces.includes('anthropic.count_tokens'))
    return null;
  return counts.inputBound(body, countTokensCall(ctx, ctx.provider, counts.timeoutMs));
}

/** One count_tokens call to the call's own upstream, with the client's anthropic-version and beta headers. */
function countTokensCall(ctx: CallContext, provider: WireProvider, timeoutMs: number): CountCall {
  return async (body, signal) => {
    const wire = await provider.call(
      { surface: 'anthropic.count_tokens', body, headers: passedHeaders(ctx.req) },
      { signal: AbortSignal.any([signal, ctx.signal]), timeoutMs, whole: true },
    );
    const chunks: Uint8Array[] = [];
    for await (const chunk of wire.body) chunks.push(chunk);
    if (wire.status !== 200) throw new Error(`count_tokens answered ${wire.status}`);
    const reply = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input_tokens?: unknown };
    if (typeof reply.input_tokens !== 'number') throw new Error('count_tokens answered no input_tokens');
    return reply.input_tokens;
  };
}
