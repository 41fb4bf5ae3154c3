import type { AppendInput } from '#kernel/ledger/index.js';
import { wellFormed } from '#providers/bound.js';
import { redact } from '#providers/redact.js';

/**
 * Every string of every record the router writes (ledger, spool, error output) made well-formed and free of
 * the secrets it knows: provider API keys, auth signing keys and the caller's auth token. A provider that
 * echoes its key in an answer, or a caller who pastes a token into a prompt, gets it recorded nowhere.
 * Copy-on-write: the inputs are never mutated, objects without a change are returned as they are, and a copy
 * keeps its key order (the ledger's fast canonical path) and its prototype.
 */
export function scrubRecords(records: readonly AppendInput[], secrets: readonly string[]): AppendInput[] {
  return records.map((record) => scrubValue(record, secrets, 0) as AppendInput);
}

/** Records are bounded (raw provider values are cut at depth 8), so this depth is never reached by them. */
const MAX_SCRUB_DEPTH = 64;

function scrubValue(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === 'string') return scrubText(value, secrets);
  if (typeof value !== 'object' || value === null || depth > MAX_SCRUB_DEPTH) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    value.forEach((item, i) => {
      const clean = scrubValue(item, secrets, depth + 1);
      if (clean !== item) (out ??= value.slice())[i] = clean;
    });
    return out ?? value;
  }
  const source = value as Record<string, unknown>;
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(source)) {
    const clean = scrubValue(source[key], secrets, depth + 1);
    if (clean === source[key]) continue;
    out ??= copyOf(source);
    setData(out, key, clean);
  }
  return out ?? value;
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
