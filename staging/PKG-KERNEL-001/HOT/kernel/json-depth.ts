/**
 * The deepest JSON any untrusted text may nest. JSON.parse accepts any depth, but every recursive walk after it
 * (JSON.stringify, canonical hashing, token bounds) overflows the stack on a few hundred thousand brackets: such
 * text is refused at the edge, before it is parsed. Real API bodies nest a few dozen levels.
 */
export const MAX_JSON_DEPTH = 128;

/** The nesting depth of JSON text, stopping as soon as it passes `limit` (brackets in strings do not count). */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/** JSON.parse for untrusted text: a SyntaxError as JSON.parse gives, or a RangeError past `limit` levels. */
export function parseJsonBounded(text: string, limit = MAX_JSON_DEPTH): unknown {
  if (jsonDepth(text, limit) > limit) throw new RangeError(`JSON nested deeper than ${limit} levels`);
  return JSON.parse(text) as unknown;
}
