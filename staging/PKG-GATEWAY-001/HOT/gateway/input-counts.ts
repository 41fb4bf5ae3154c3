import { createHash } from 'node:crypto';
import { bodyInputBounds } from '#budgeter/bound.js';
import { Lru } from '#budgeter/tokens/lru.js';
import type { CountCall, CountEndpoint, CountEndpoints } from '#router/input-count.js';
import { geminiInputBounds } from './gemini-body.js';

export type { CountCall };

/**
 * Anthropic's count_tokens is an estimate ("may differ by a small amount" from what a message is billed), and
 * Gemini's countTokens is not promised equal to a reply's promptTokenCount: what either says is reserved with this
 * margin on top (docs/production.md, "How much a call reserves").
 */
export const COUNT_MARGIN_FRACTION = 0.05;
export const COUNT_MARGIN_TOKENS = 64;
/** How long a count may take before the call reserves without it (it holds the call's admission meanwhile). */
export const DEFAULT_COUNT_TIMEOUT_MS = 500;
/** Counts kept per API, by the hash of the conversation they count (44 characters and a number each). */
export const COUNT_CACHE_ENTRIES = 4096;

/** How one API's bodies are counted: where the conversation is, what else is counted, the count request's body. */
export interface CountShape {
  /** The body's turns: Anthropic `messages`, Gemini `contents`. */
  turns: 'messages' | 'contents';
  /** The other fields the count takes (the count endpoints refuse generation-only fields). */
  fields: readonly string[];
  /** The count request's body from the body's turns and fields. */
  request(counted: Record<string, unknown>): Record<string, unknown>;
  /** An upper bound of turns after a counted prefix, by their bytes; null: their bytes do not bound them. */
  restBound(turns: unknown[]): number | null;
}

export const ANTHROPIC_COUNT: CountShape = {
  turns: 'messages',
  fields: ['model', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers'],
  request: (counted) => counted,
  restBound: (messages) => {
    const rest = bodyInputBounds({ messages });
    return rest.limit === null ? null : rest.bound;
  },
};

/** Gemini's countTokens counts a whole generateContent request (contents alone would leave out the system and tools). */
export const GEMINI_COUNT: CountShape = {
  turns: 'contents',
  fields: ['systemInstruction', 'tools', 'toolConfig'],
  request: (counted) => ({ generateContentRequest: counted }),
  restBound: (contents) => {
    const rest = geminiInputBounds({ contents }, Buffer.byteLength(JSON.stringify(contents)));
    return rest.limit === null ? null : rest.bound;
  },
};

/** A count with its margin: never below what the API said, by a few percent and a message's template. */
export function withMargin(counted: number): number {
  return Math.ceil(counted * (1 + COUNT_MARGIN_FRACTION)) + COUNT_MARGIN_TOKENS;
}

/**
 * Input counts by an API's own count endpoint, an extra upstream round trip an operator enables
 * (gateway.count_input_tokens). Each count is cached by the hash of the conversation it counted, and an agent's next
 * turn resends that conversation with turns added: when its own count fails or is too slow, the longest counted
 * prefix is reserved at its count and the turns after it by their bytes.
 */
export class InputCounts implements CountEndpoint {
  private readonly cache = new Lru<number>(COUNT_CACHE_ENTRIES);

  constructor(
    readonly timeoutMs: number,
    private readonly shape: CountShape,
  ) {}

  /**
   * An upper bound of the body's input, or null when neither a count nor a counted prefix is at hand. `model` is
   * counted with the body (Gemini names it in the path, not the body).
   */
  async inputBound(body: Readonly<Record<string, unknown>>, count: CountCall, model?: string): Promise<number | null> {
    const turns = body[this.shape.turns];
    if (!Array.isArray(turns) || turns.length === 0) return null;
    const counted: Record<string, unknown> = model === undefined ? {} : { model };
    for (const field of this.shape.fields) if (body[field] !== undefined) counted[field] = body[field];
    const keys = prefixKeys(counted, turns);
    const whole = keys[turns.length] as string;
    const cached = this.cache.get(whole);
    if (cached !== undefined) return withMargin(cached);
    const answer = await this.ask(this.shape.request({ ...counted, [this.shape.turns]: turns }), count);
    if (answer !== null) {
      this.cache.set(whole, answer);
      return withMargin(answer);
    }
    for (let i = turns.length - 1; i >= 1; i -= 1) {
      const prefix = this.cache.get(keys[i] as string);
      if (prefix === undefined) continue;
      const rest = this.shape.restBound(turns.slice(i));
      return rest === null ? null : withMargin(prefix) + rest;
    }
    return null;
  }

  private async ask(body: Record<string, unknown>, count: CountCall): Promise<number | null> {
    try {
      const n = await count(body, AbortSignal.timeout(this.timeoutMs));
      return Number.isSafeInteger(n) && n >= 0 ? n : null;
    } catch {
      return null;
    }
  }
}

/** The counts the operator switched on (`gateway.count_input_tokens`), by API; none by default. */
export interface UpstreamCounts extends CountEndpoints {
  anthropic?: InputCounts;
  gemini?: InputCounts;
}

/** The gateway option for the operator's `gateway.count_input_tokens`: none unless a count is switched on. */
export function inputCountsOption(config: { anthropic?: boolean; gemini?: boolean; timeout_ms?: number } | undefined): {
  inputCounts?: UpstreamCounts;
} {
  const timeout = config?.timeout_ms ?? DEFAULT_COUNT_TIMEOUT_MS;
  const counts: UpstreamCounts = {};
  if (config?.anthropic === true) counts.anthropic = new InputCounts(timeout, ANTHROPIC_COUNT);
  if (config?.gemini === true) counts.gemini = new InputCounts(timeout, GEMINI_COUNT);
  return counts.anthropic === undefined && counts.gemini === undefined ? {} : { inputCounts: counts };
}

/**
 * keys[i]: the hash of the counted fields and the first i turns, chained, so every prefix of a conversation has its
 * key for the cost of hashing each turn once.
 */
function prefixKeys(head: Record<string, unknown>, turns: readonly unknown[]): string[] {
  let key = hash(JSON.stringify(head));
  const keys = [key];
  for (const turn of turns) {
    key = hash(key + (JSON.stringify(turn) ?? 'null'));
    keys.push(key);
  }
  return keys;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}
