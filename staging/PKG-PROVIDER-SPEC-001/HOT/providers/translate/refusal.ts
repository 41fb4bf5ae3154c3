// What a translation cannot express: named by the field's path, refused before anything is sent.
import type { JsonObject } from '../json.js';

/** A field of the client's request (or of an upstream reply) the other format has no exact equivalent for. */
export interface Untranslatable {
  /** The field's path in the client's body, e.g. `messages[2].content[0].type`. */
  field: string;
  /** Why, with the offending value (cut short). */
  why: string;
}

export class TranslationRefused extends Error {
  constructor(readonly refusal: Untranslatable) {
    super(`${refusal.field}: ${refusal.why}`);
  }
}

/** Throws the refusal: translators are written straight-line and caught once at their entry point. */
export function refuse(field: string, why: string): never {
  throw new TranslationRefused({ field, why });
}

/** A hostile value shown in a refusal: JSON, cut short. */
export function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = typeof value;
  }
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object at `field`, or a refusal naming it. */
export function objectAt(value: unknown, field: string): JsonObject {
  if (!isObject(value)) refuse(field, `an object is required, got ${shown(value)}`);
  return value;
}

export function arrayAt(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value)) refuse(field, `an array is required, got ${shown(value)}`);
  return value;
}

export function stringAt(value: unknown, field: string): string {
  if (typeof value !== 'string') refuse(field, `a string is required, got ${shown(value)}`);
  return value;
}

/** Every key of `obj` must be one of `known`: a field the translation does not know is refused, never dropped. */
export function onlyKnown(obj: JsonObject, known: ReadonlySet<string>, at: string): void {
  for (const key of Object.keys(obj))
    if (!known.has(key)) refuse(at === '' ? key : `${at}.${key}`, 'the target format has no equivalent for this field');
}

/** Runs a translation; a refusal comes back as a value, anything else is a bug and is thrown. */
export function attempt<T>(run: () => T): { ok: true; value: T } | { ok: false; refusal: Untranslatable } {
  try {
    return { ok: true, value: run() };
  } catch (error) {
    if (error instanceof TranslationRefused) return { ok: false, refusal: error.refusal };
    throw error;
  }
}
