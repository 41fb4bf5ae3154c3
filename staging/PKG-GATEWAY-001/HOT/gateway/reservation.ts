import { type CountedInput, tightestCover, tightInputBound } from '#router/input-count.js';
import type { CallContext } from './call.js';
import type { Generation } from './request-body.js';
import { passedHeaders } from './upstream.js';

/**
 * What a generation reserves (docs/production.md, "How much a call reserves"): the byte bound of its body
 * (request-body.ts), or, where the model's tokens can be counted (router/input-count.ts), that count of the body
 * actually sent upstream plus its margins, whichever is smaller (both are upper bounds). A routed call counts the
 * body each of its alias's deployments would receive (translated into its format where it speaks another) and
 * reserves the largest: its deployments may tokenize apart.
 */
export async function reservedBounds(
  ctx: CallContext,
  gen: Generation,
  upstreamBody: Readonly<Record<string, unknown>>,
): Promise<Generation['bounds']> {
  const counted = await countedInput(ctx, gen.model, upstreamBody);
  if (counted === null || counted >= gen.bounds.estimated_input_tokens) return gen.bounds;
  return { ...gen.bounds, estimated_input_tokens: counted };
}

function countedInput(
  ctx: CallContext,
  model: string,
  body: Readonly<Record<string, unknown>>,
): Promise<number | null> {
  const input: CountedInput = {
    provider: ctx.provider,
    surface: ctx.translator?.upstream ?? ctx.endpoint.surface,
    body,
    model,
    counts: ctx.inputCounts ?? null,
    headers: passedHeaders(ctx.req),
    signal: ctx.signal,
  };
  const plan = ctx.plan;
  if (plan === null || plan === undefined) return tightInputBound(input);
  // Each deployment is asked for its own model in its own format (upstream.ts callProvider): its body is counted as
  // it is sent — translated for a deployment of another format, the model in the path for Gemini.
  const legs = ctx.legs ?? null;
  return tightestCover(
    plan.candidates().map((c) => {
      const leg = legs?.leg(c.deployment) ?? null;
      const surface = leg?.surface ?? input.surface;
      const sent = leg?.body ?? body;
      const own = surface.startsWith('gemini.') ? sent : { ...sent, model: c.model };
      return { ...input, provider: c.provider, model: c.model, surface, body: own };
    }),
  );
}
