import type { AppendInput } from '#kernel/ledger/index.js';
import { wellFormed } from '#providers/bound.js';
import { redact } from '#providers/redact.js';
import { BUILTIN_SECRET_PATTERNS, scrubSecretPatterns, type SecretPattern } from './secret-patterns.js';

/**
 * Every string of every record the router writes (ledger, spool, error output) made well-formed and free of
 * the secrets it knows: provider API keys, auth signing keys and the caller's auth token. A provider that
 * echoes its key in an answer, or a caller who pastes a token into a prompt, gets it recorded nowhere; nor does
 * any string shaped like a secret (router/secret-patterns.ts), which an EXCHANGE counts in `secrets_scrubbed`.
 * Copy-on-write: the inputs are never mutated, objects without a change are returned as they are, and a copy
 * keeps its key order (the ledger's fast canonical path) and its prototype.
 */
export function scrubRecords(
  records: readonly AppendInput[],
  secrets: readonly string[],
  patterns: readonly SecretPattern[] = BUILTIN_SECRET_PATTERNS,
): AppendInput[] {
  const anchors = anchorsOf(patterns);
  return records.map((record) => {
    const counts: Record<string, number> = {};
    const clean = scrubValue(record, { secrets, patterns, anchors, counts }, 0) as AppendInput;
    if (record.event_type !== 'EXCHANGE' || Object.keys(counts).length === 0) return clean;
    return { ...clean, metadata: withCounts(clean.metadata ?? {}, counts) };
  });
}

/** The metadata with `secrets_scrubbed` in its sorted place (records keep sorted keys: the ledger's fast path). */
function withCounts(metadata: Record<string, unknown>, counts: Record<string, number>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const sorted = Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
  const keys = [...Object.keys(metadata), 'secrets_scrubbed'].sort();
  for (const key of keys) setData(out, key, key === 'secrets_scrubbed' ? sorted : metadata[key]);
  return out;
}

interface Scrub {
  secrets: readonly string[];
  patterns: readonly SecretPattern[];
  /** Whether a text holds any pattern's anchor (anchorsOf). */
  anchors: RegExp;
  counts: Record<string, number>;
}

/** Records are bounded (raw provider values are cut at depth 8), so this depth is never reached by them. */
const MAX_SCRUB_DEPTH = 64;

function scrubValue(value: unknown, scrub: Scrub, depth: number): unknown {
  if (typeof value === 'string') {
    const text = scrubText(value, scrub.secrets);
    return scrub.anchors.test(text) ? scrubSecretPatterns(text, scrub.patterns, scrub.counts) : text;
  }
  if (typeof value !== 'object' || value === null || depth > MAX_SCRUB_DEPTH) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    // forEach's order and holes (skipped), each element read once.
    for (let i = 0; i < value.length; i += 1) {
      if (!(i in value)) continue;
      const item: unknown = value[i];
      const clean = scrubValue(item, scrub, depth + 1);
      if (clean !== item) (out ??= value.slice())[i] = clean;
    }
    return out ?? value;
  }
  const source = value as Record<string, unknown>;
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(source)) {
    // Read once: a record's keys are megamorphic loads here (every shape of every record meets this line).
    const item = source[key];
    const clean = scrubValue(item, scrub, depth + 1);
    if (clean === item) continue;
    out ??= copyOf(source);
    setData(out, key, clean);
  }
  return out ?? value;
}

/**
 * One regular expression finding any pattern's anchor: a text without one is read once, where asking each anchor
 * in turn read it once per anchor (a short anchor such as `sk-` is searched character by character, so a long
 * prompt paid milliseconds). It only decides whether the patterns run; they find and count the secrets.
 */
const anchorSearches = new WeakMap<readonly SecretPattern[], RegExp>();

function anchorsOf(patterns: readonly SecretPattern[]): RegExp {
  let search = anchorSearches.get(patterns);
  if (search === undefined) {
    const anchors = patterns.flatMap((p) => p.anchors).map((a) => a.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&'));
    // No anchor at all: a search that never matches (no pattern could run either).
    search = new RegExp(anchors.length === 0 ? '(?!)' : anchors.join('|'));
    anchorSearches.set(patterns, search);
  }
  return search;
}

function copyOf(source: Record<string, unknown>): Record<string, unknown> {
  const out = Object.create(Object.getPrototypeOf(source) as object | null) as Record<string, unknown>;
  for (const key of Object.keys(source)) setData(out, key, source[key]);
  return out;
}

/** defineProperty: a "__proto__" key stays data, never a prototype change. */
function setData(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function scrubText(text: string, secrets: readonly string[]): string {
  return redact(wellFormed(text), secrets);
}

/** The secrets worth scrubbing: distinct, non-empty (redact ignores the very short ones). */
export function secretList(values: readonly (string | null | undefined)[]): string[] {
  return (
    [...new Set(values.filter((v): v is string => typeof v === 'string' && v.trim() !== ''))]
      // Longest first, so a secret containing another is replaced whole.
      .sort((a, b) => b.length - a.length)
  );
}
