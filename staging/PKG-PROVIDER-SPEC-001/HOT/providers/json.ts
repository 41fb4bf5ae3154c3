/** Narrow readers for hostile JSON: each returns the value only if it has the expected type. */
export type JsonObject = Readonly<Record<string, unknown>>;

export function asObject(value: unknown): JsonObject | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : null;
}

export function getObject(obj: JsonObject | null, key: string): JsonObject | null {
  return obj === null ? null : asObject(obj[key]);
}

export function getString(obj: JsonObject | null, key: string): string | null {
  const v = obj?.[key];
  return typeof v === 'string' ? v : null;
}

/** A non-negative integer token count, or null (unknown) for anything else. */
export function getCount(obj: JsonObject | null, key: string): number | null {
  const v = obj?.[key];
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: Error } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, error: error as Error };
  }
}
