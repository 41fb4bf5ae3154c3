/**
 * The tight input count a call reserves (docs/production.md, "How much a call reserves"), one path for `cplane
 * route` and the gateway: the body the upstream actually receives, counted with the model's published tokenizer
 * (OpenAI-family models), or by the API's count endpoint (Anthropic, Gemini) when the operator switched it on. Null:
 * not countable here, the caller keeps the byte bound.
 */
import { openaiInputBound } from '#budgeter/tokens/openai.js';
import type { WireProvider, WireSurface } from '#providers/wire/spec.js';

/** One count round trip: the body's input tokens, or a throw (refused, unreachable, malformed, too slow). */
export type CountCall = (body: Record<string, unknown>, signal: AbortSignal) => Promise<number>;

/** An API's count endpoint with its cache (the gateway's InputCounts, gateway/input-counts.ts). */
export interface CountEndpoint {
  readonly timeoutMs: number;
  /** An upper bound of the body's input, or null; `model` is counted with the body (Gemini names it in the path). */
  inputBound(body: Readonly<Record<string, unknown>>, count: CountCall, model?: string): Promise<number | null>;
}

/** The count endpoints the operator switched on (`gateway.count_input_tokens`), by API; none by default. */
export interface CountEndpoints {
  anthropic?: CountEndpoint;
  gemini?: CountEndpoint;
}

/** What is counted: the body as sent, where, for which model; and how a count endpoint may be asked. */
export interface CountedInput {
  provider: WireProvider;
  surface: WireSurface;
  body: Readonly<Record<string, unknown>>;
  model: string;
  counts?: CountEndpoints | null;
  /** Headers a count request passes on as the call does (anthropic-version, anthropic-beta). */
  headers?: Readonly<Record<string, string>>;
  /** Cancels a count round trip with the call. */
  signal?: AbortSignal;
}

export async function tightInputBound(input: CountedInput): Promise<number | null> {
  return counter(input)?.() ?? null;
}

/** How the body can be counted for its surface and provider, or null when it cannot be here (the byte bound stands). */
function counter(input: CountedInput): (() => Promise<number | null>) | null {
  const { surface, body, model, provider } = input;
  // A tokenizer that cannot be loaded (a damaged install) costs the call its tighter reservation, never the call.
  if (surface === 'openai.chat' || surface === 'openai.responses')
    return () => openaiInputBound(body, model, surface).catch(() => null);
  if (surface === 'anthropic.messages') {
    const counts = input.counts?.anthropic;
    if (!counts || !provider.surfaces.includes('anthropic.count_tokens')) return null;
    return () =>
      counts.inputBound(body, countCall(input, 'anthropic.count_tokens', counts.timeoutMs, {}, 'input_tokens'));
  }
  if (surface === 'gemini.generate' || surface === 'gemini.stream') {
    const counts = input.counts?.gemini;
    // Cached content is billed from the cache, which a count of the body does not see.
    if (!counts || body.cachedContent !== undefined || !provider.surfaces.includes('gemini.count_tokens')) return null;
    const call = countCall(input, 'gemini.count_tokens', counts.timeoutMs, { model }, 'totalTokens');
    return () => counts.inputBound(body, call, `models/${model}`);
  }
  return null;
}

/**
 * The largest tight count over the targets a call may be served by (a routed alias's deployments, fallbacks
 * included, each with the body in its own format): the reservation then holds whichever answers. Each target is
 * counted where a counter exists for it; one that has none keeps the byte bound, which is then the largest — so
 * null (the caller's byte bound), decided before any target is counted.
 */
export async function tightestCover(inputs: readonly CountedInput[]): Promise<number | null> {
  const counters = inputs.map(counter);
  if (counters.length === 0 || counters.some((c) => c === null)) return null;
  const counted = await Promise.all(counters.map((c) => (c as () => Promise<number | null>)()));
  let most = 0;
  for (const n of counted) {
    if (n === null) return null;
    most = Math.max(most, n);
  }
  return most;
}

/** One count call to the call's own upstream (with the call's passed headers): its count. */
function countCall(
  input: CountedInput,
  surface: WireSurface,
  timeoutMs: number,
  params: Record<string, string>,
  field: 'input_tokens' | 'totalTokens',
): CountCall {
  return async (body, signal) => {
    const wire = await input.provider.call(
      { surface, body, headers: input.headers ?? {}, params },
      { signal: input.signal === undefined ? signal : AbortSignal.any([signal, input.signal]), timeoutMs, whole: true },
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
