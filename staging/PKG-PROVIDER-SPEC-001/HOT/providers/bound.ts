import { redact } from './redact.js';

/**
 * Bounds for what a provider's reply may put into a record. A hostile or broken server controls every byte
 * after the status line; these keep what reaches a ledger record small, finite, well-formed and secret-free,
 * so building and canonicalising the EXCHANGE can never fail on the provider's account.
 */
export const REPLY_BOUNDS = {
  /** Nesting kept in a raw object (usage); anything deeper is replaced by a marker string. */
  maxDepth: 8,
  /** Keys per object / items per array kept in a raw object. */
  maxEntries: 64,
  /** Code units of a string kept inside a raw object. */
  maxRawString: 1024,
  /** Code units of a short field (model, stop reason, request id, error type). */
  maxField: 256,
} as const;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const nativeToWellFormed = (String.prototype as { toWellFormed?: (this: string) => string }).toWellFormed;

/** The string with every lone surrogate (a JSON `\ud800` escape) replaced by U+FFFD. */
export function wellFormed(text: string): string {
  return nativeToWellFormed ? nativeToWellFormed.call(text) : text.replace(LONE_SURROGATE, '\uFFFD');
}

/** Well-formed, secret-free, at most `max` code units, never cutting a surrogate pair. */
export function boundText(text: string, secrets: readonly string[], max: number = REPLY_BOUNDS.maxField): string {
  const clean = redact(wellFormed(text), secrets);
  if (clean.length <= max) return clean;
  let end = max - 1;
  const code = clean.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${clean.slice(0, end)}…`;
}

/**
 * A bounded copy of a parsed JSON value: depth, entries and string sizes capped, non-finite numbers (a
 * `1e400` parses to Infinity) replaced by null, strings well-formed and secret-free. Recursion is limited by maxDepth, so a 10k-deep body
 * cannot exhaust the stack here.
 */
export function boundJson(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return boundText(value, secrets, REPLY_BOUNDS.maxRawString);
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'boolean' || value === null) return value;
  if (typeof value !== 'object') return null;
  if (depth >= REPLY_BOUNDS.maxDepth) return `[nested deeper than ${REPLY_BOUNDS.maxDepth} levels: dropped]`;
  if (Array.isArray(value)) {
    const items = value.slice(0, REPLY_BOUNDS.maxEntries).map((item) => boundJson(item, secrets, depth + 1));
    if (value.length > REPLY_BOUNDS.maxEntries)
      items.push(`[${value.length - REPLY_BOUNDS.maxEntries} more items dropped]`);
    return items;
  }
  const out: Record<string, unknown> = {};
  const keys = Object.keys(value);
  // defineProperty: a "__proto__" key is copied as data, never as a prototype.
  const put = (key: string, item: unknown): void => {
    Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
  };
  for (const key of keys.slice(0, REPLY_BOUNDS.maxEntries))
    put(boundText(key, secrets), boundJson((value as Record<string, unknown>)[key], secrets, depth + 1));
  if (keys.length > REPLY_BOUNDS.maxEntries) put('…', `${keys.length - REPLY_BOUNDS.maxEntries} more keys dropped`);
  return out;
}
