import { createHash } from 'node:crypto';
import { bodyInputBounds } from '#budgeter/bound.js';
import { Lru } from '#budgeter/tokens/lru.js';

/**
 * Anthropic's count_tokens is an estimate ("may differ by a small amount" from what a message is billed): what it
 * says is reserved with this margin on top (docs/production.md, "How much a call reserves").
 */
export const COUNT_MARGIN_FRACTION = 0.05;
export const COUNT_MARGIN_TOKENS = 64;
/** How long a count may take before the call reserves without it (it holds the call's admission meanwhile). */
export const DEFAULT_COUNT_TIMEOUT_MS = 500;
/** Counts kept, by the hash of the conversation they count (44 characters and a number each). */
export const COUNT_CACHE_ENTRIES = 4096;

/** The fields of a Messages body count_tokens takes (it refuses the others: max_tokens, stream, temperature…). */
const COUNTED_FIELDS = ['model', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers'] as const;

/** One count_tokens round trip: the body's input_tokens, or a throw (refused, unreachable, malformed, too slow). */
export type CountCall = (body: Record<string, unknown>, signal: AbortSignal) => Promise<number>;

/** A count with its margin: never below what count_tokens said, by a few percent and a message's template. */
export function withMargin(counted: number): number {
  return Math.ceil(counted * (1 + COUNT_MARGIN_FRACTION)) + COUNT_MARGIN_TOKENS;
}

/**
 * Input counts for Anthropic models by count_tokens, an extra upstream round trip an operator enables
 * (gateway.count_input_tokens.anthropic). Each count is cached by the hash of the conversation it counted, and an
 * agent's next turn resends that conversation with messages added: when its own count fails or is too slow, the
 * longest counted prefix is reserved at its count and the messages after it by their bytes.
 */
export class AnthropicCounts {
  private readonly cache = new Lru<number>(COUNT_CACHE_ENTRIES);

  constructor(readonly timeoutMs: number) {}

  /** An upper bound of the body's input, or null when neither a count nor a counted prefix is at hand. */
  async inputBound(body: Readonly<Record<string, unknown>>, count: CountCall): Promise<number | null> {
    const messages = body.messages;
    if (!Array.isArray(messages) || messages.length === 0) return null;
    const keys = prefixKeys(body, messages);
    const whole = keys[messages.length] as string;
    const cached = this.cache.get(whole);
    if (cached !== undefined) return withMargin(cached);
    const counted = await this.ask(body, count);
    if (counted !== null) {
      this.cache.set(whole, counted);
      return withMargin(counted);
    }
    for (let i = messages.length - 1; i >= 1; i -= 1) {
      const prefix = this.cache.get(keys[i] as string);
      if (prefix === undefined) continue;
      const rest = bodyInputBounds({ messages: messages.slice(i) });
      return rest.limit === null ? null : withMargin(prefix) + rest.bound;
    }
    return null;
  }

  private async ask(body: Readonly<Record<string, unknown>>, count: CountCall): Promise<number | null> {
    const sent: Record<string, unknown> = { messages: body.messages };
    for (const field of COUNTED_FIELDS) if (body[field] !== undefined) sent[field] = body[field];
    try {
      const n = await count(sent, AbortSignal.timeout(this.timeoutMs));
      return Number.isSafeInteger(n) && n >= 0 ? n : null;
    } catch {
      return null;
    }
  }
}

/** The gateway option for the operator's `gateway.count_input_tokens`: none unless Anthropic counting is switched on. */
export function anthropicCountsOption(config: { anthropic?: boolean; timeout_ms?: number } | undefined): {
  anthropicCounts?: AnthropicCounts;
} {
  if (config?.anthropic !== true) return {};
  return { anthropicCounts: new AnthropicCounts(config.timeout_ms ?? DEFAULT_COUNT_TIMEOUT_MS) };
}

/**
 * keys[i]: the hash of the body's counted fields and its first i messages, chained, so every prefix of a
 * conversation has its key for the cost of hashing each message once.
 */
function prefixKeys(body: Readonly<Record<string, unknown>>, messages: readonly unknown[]): string[] {
  const head: Record<string, unknown> = {};
  for (const field of COUNTED_FIELDS) if (body[field] !== undefined) head[field] = body[field];
  let key = hash(JSON.stringify(head));
  const keys = [key];
  for (const message of messages) {
    key = hash(key + (JSON.stringify(message) ?? 'null'));
    keys.push(key);
  }
  return keys;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}
