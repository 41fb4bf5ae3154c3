/**
 * Well-formed text. A string holding a lone UTF-16 surrogate (an emoji cut in half, or hostile input) has no
 * UTF-8 form: SQLite stores it as U+FFFD, so a record hashed before it was stored would never verify again.
 * Every string that is hashed or stored is made well-formed first, and every truncation cuts between code points.
 */

// ES2024 String methods (Node >= 20); the project's lib is ES2023.
declare global {
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** `text` with each lone surrogate replaced by U+FFFD (the same string when it is already well-formed). */
export function wellFormed(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * At most `max` UTF-16 units of `text`, never ending inside a surrogate pair; a cut text ends in `marker`
 * (counted in `max`). The result is well-formed.
 */
export function truncateText(text: string, max: number, marker = '…'): string {
  if (text.length <= max) return wellFormed(text);
  let end = Math.max(0, max - marker.length);
  // A high surrogate as the last kept unit would be the first half of a pair the cut splits.
  if (end > 0 && isHigh(text.charCodeAt(end - 1))) end -= 1;
  return wellFormed(text.slice(0, end)) + marker;
}

/**
 * The first lone surrogate anywhere in a JSON value (strings and object keys), as a JSON Pointer, or undefined
 * when every string is well-formed.
 */
export function illFormedPointer(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path || '/';
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = illFormedPointer(value[i], `${path}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const at = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (!key.isWellFormed()) return at;
    const found = illFormedPointer(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A copy of a JSON value with every string and key made well-formed; returns `value` itself when nothing needed
 * changing. `onKeyClash` is called when two keys of one object become the same key.
 */
export function wellFormedDeep<T>(value: T, onKeyClash: (key: string) => never): T {
  if (typeof value === 'string') return wellFormed(value) as T;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((item: unknown, i) => {
      const fixed = wellFormedDeep(item, onKeyClash);
      if (fixed !== item) (out ??= value.slice())[i] = fixed;
    });
    return (out ?? value) as T;
  }
  const record = value as Record<string, unknown>;
  if (illFormedPointer(record) === undefined) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(record)) {
    const fixedKey = wellFormed(key);
    if (Object.hasOwn(out, fixedKey)) onKeyClash(fixedKey);
    // defineProperty: a "__proto__" key stays a plain key, as JSON.parse makes it.
    Object.defineProperty(out, fixedKey, {
      value: wellFormedDeep(item, onKeyClash),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out as T;
}

/** `text.slice(start, end)` with both cuts moved inward so neither splits a surrogate pair. */
export function sliceText(text: string, start: number, end = text.length): string {
  let from = Math.max(0, start);
  let to = Math.min(text.length, end);
  if (from > 0 && isLow(text.charCodeAt(from)) && isHigh(text.charCodeAt(from - 1))) from += 1;
  if (to < text.length && isLow(text.charCodeAt(to)) && isHigh(text.charCodeAt(to - 1))) to -= 1;
  return from >= to ? '' : text.slice(from, to);
}

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
