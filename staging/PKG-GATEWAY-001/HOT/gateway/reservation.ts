import { openaiInputBound } from '#budgeter/tokens/openai.js';
import type { CallContext } from './call.js';
import type { Generation } from './request-body.js';

/**
 * What a generation reserves (docs/production.md, "How much a call reserves"): the byte bound of its body
 * (request-body.ts), or, for a model whose tokenizer is published, the count of the body actually sent upstream
 * with that tokenizer plus its margins, whichever is smaller (both are upper bounds). A routed call keeps the byte
 * bound: its deployments may be models of other tokenizers.
 */
export async function reservedBounds(
  ctx: CallContext,
  gen: Generation,
  upstreamBody: Readonly<Record<string, unknown>>,
): Promise<Generation['bounds']> {
  if (ctx.plan !== null && ctx.plan !== undefined) return gen.bounds;
  const surface = ctx.translator?.upstream ?? ctx.endpoint.surface;
  if (surface !== 'openai.chat' && surface !== 'openai.responses') return gen.bounds;
  // A tokenizer that cannot be loaded (a damaged install) costs the call its tighter reservation, never the call.
  const counted = await openaiInputBound(upstreamBody, gen.model, surface).catch(() => null);
  if (counted === null || counted >= gen.bounds.estimated_input_tokens) return gen.bounds;
  return { ...gen.bounds, estimated_input_tokens: counted };
}
