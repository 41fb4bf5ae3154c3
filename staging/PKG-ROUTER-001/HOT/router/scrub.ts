import type { AppendInput } from '../kernel/ledger/index.js';
import { wellFormed } from '../providers/bound.js';
import { redact } from '../providers/redact.js';

/**
 * Every string of every record the router writes (ledger, spool, error output) made well-formed and free of
 * the secrets it knows: provider API keys, auth signing keys and the caller's auth token. A provider that
 * echoes its key in an answer, or a caller who pastes a token into a prompt, gets it recorded nowhere.
 * Values are replaced in place so key order (the ledger's fast canonical path) is kept. The walk uses an
 * explicit stack: a deeply nested value cannot exhaust the call stack here.
 */
export function scrubRecords(records: readonly AppendInput[], secrets: readonly string[]): AppendInput[] {
  const out = records.map((record) => ({ ...record }));
  const stack: Record<string | number, unknown>[] = [...(out as unknown as Record<string, unknown>[])];
  while (stack.length > 0) {
    const node = stack.pop() as Record<string | number, unknown>;
    for (const key of Object.keys(node)) {
      const value = node[key];
      if (typeof value === 'string') {
        const clean = scrubText(value, secrets);
        if (clean !== value) node[key] = clean;
      } else if (typeof value === 'object' && value !== null) {
        stack.push(value as Record<string, unknown>);
      }
    }
  }
  return out;
}

export function scrubText(text: string, secrets: readonly string[]): string {
  return redact(wellFormed(text), secrets);
}

/** The secrets worth scrubbing: distinct, non-empty (redact ignores the very short ones). */
export function secretList(values: readonly (string | null | undefined)[]): string[] {
  return [...new Set(values.filter((v): v is string => typeof v === 'string' && v.trim() !== ''))]
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b.length - a.length);
}
