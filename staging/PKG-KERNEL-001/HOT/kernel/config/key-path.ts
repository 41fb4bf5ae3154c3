import { CpError, show } from '../errors.js';

/**
 * A config key names a place in the effective config: `section.field.sub`, with a segment that is not a plain
 * name written as a JSON string in brackets (`budget.pricing["gpt-4.1"].input_per_mtok`).
 */
const PLAIN = /^[A-Za-z0-9_-]+$/;
const MAX_KEY_CHARS = 512;
const MAX_SEGMENTS = 16;
/** Segments that would reach Object.prototype when merged or set. */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const FORBIDDEN = FORBIDDEN_SEGMENTS;

function invalid(text: string, why: string): CpError {
  return new CpError('ERR_CONFIG_KEY_INVALID', `config key ${show(text)} ${why}`, {
    hint: 'a key is SECTION.FIELD[.FIELD…], e.g. router.timeout_ms or budget.pricing["gpt-4.1"].input_per_mtok',
    details: { key: text },
  });
}

export function parseKeyPath(text: unknown): string[] {
  if (typeof text !== 'string' || text.length === 0) throw invalid(String(text), 'is empty');
  if (text.length > MAX_KEY_CHARS) throw invalid(text.slice(0, 60), `is longer than ${MAX_KEY_CHARS} characters`);
  const segments: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '[') {
      const end = closingBracket(text, i);
      if (end < 0) throw invalid(text, `has an unterminated [ at offset ${i}`);
      let seg: unknown;
      try {
        seg = JSON.parse(text.slice(i + 1, end));
      } catch {
        seg = undefined;
      }
      if (typeof seg !== 'string' || seg.length === 0)
        throw invalid(text, `has a bracket segment that is not a JSON string at offset ${i}`);
      segments.push(seg);
      i = end + 1;
    } else {
      let end = i;
      while (end < text.length && text[end] !== '.' && text[end] !== '[') end += 1;
      const seg = text.slice(i, end);
      if (!PLAIN.test(seg)) throw invalid(text, `has an empty or unquoted segment ${show(seg)} (quote it: ["${seg}"])`);
      segments.push(seg);
      i = end;
    }
    if (i < text.length) {
      if (text[i] === '.') {
        i += 1;
        if (i === text.length) throw invalid(text, 'ends with a dot');
      } else if (text[i] !== '[') throw invalid(text, `has ${show(text[i])} where . or [ belongs`);
    }
  }
  if (segments.length > MAX_SEGMENTS) throw invalid(text, `has more than ${MAX_SEGMENTS} segments`);
  const bad = segments.find((s) => FORBIDDEN.has(s) || /[\u0000-\u001f\u007f]/.test(s));
  if (bad !== undefined) throw invalid(text, `has the segment ${show(bad)}, which no config holds`);
  return segments;
}

/** The `]` closing a `["…"]` segment that starts at `open`, skipping escaped quotes inside the string. */
function closingBracket(text: string, open: number): number {
  if (text[open + 1] !== '"') return -1;
  let i = open + 2;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '"') return text[i + 1] === ']' ? i + 1 : -1;
    else i += 1;
  }
  return -1;
}

export function formatKeyPath(segments: readonly string[]): string {
  return segments.map((s, i) => (PLAIN.test(s) ? `${i === 0 ? '' : '.'}${s}` : `[${JSON.stringify(s)}]`)).join('');
}
