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

/**
 * The first key that one object of valid JSON text holds twice, or undefined. JSON.parse keeps the last value
 * silently, while other readers keep the first or refuse: a text with a repeated key means different things to
 * different readers. Keys are compared as decoded (`"\u0061"` is `"a"`).
 */
export function repeatedKey(text: string): string | undefined {
  // One frame per open bracket: the keys of an object (null for an array), and whether a key comes next.
  const frames: { keys: Set<string> | null; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      const frame = frames[frames.length - 1];
      if (frame?.keys && frame.expectKey) {
        const key = JSON.parse(text.slice(start, i + 1)) as string;
        if (frame.keys.has(key)) return key;
        frame.keys.add(key);
        frame.expectKey = false;
      }
    } else if (c === 0x7b) frames.push({ keys: new Set(), expectKey: true });
    else if (c === 0x5b) frames.push({ keys: null, expectKey: false });
    else if (c === 0x7d || c === 0x5d) frames.pop();
    else if (c === 0x2c) {
      const frame = frames[frames.length - 1];
      if (frame?.keys) frame.expectKey = true;
    }
  }
  return undefined;
}
