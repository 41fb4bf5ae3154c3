import { hash } from 'node:crypto';
import { CpError } from './errors.js';

/**
 * RFC 8785 (JCS) canonical JSON in one pass that also refuses values JSON cannot represent rather than
 * guessing: object keys sorted by UTF-16 code units, strings and numbers serialised as ECMAScript's
 * JSON.stringify does (which is what JCS specifies), no whitespace.
 */
export function canonicalJson(value: unknown): string {
  if (isStringifyCanonical(value)) return JSON.stringify(value);
  const sorted = sortedCopy(value);
  return sorted === UNSORTABLE ? serialize(value, []) : JSON.stringify(sorted);
}

/** What sortedCopy returns for a value only the serialiser takes: one to refuse, or a key JSON.stringify reorders. */
const UNSORTABLE: unique symbol = Symbol('unsortable');

/** The last key list sorted, and its sorted copy: a writer's records of one kind repeat the same keys in one order. */
let lastKeys: readonly string[] = [];
let lastSorted: readonly string[] = [];

/** `keys` sorted by UTF-16 code units (JCS order), the sort skipped when they repeat the last list. */
function sortedKeys(keys: string[]): readonly string[] {
  if (keys.length === lastKeys.length) {
    let same = true;
    for (let i = 0; i < keys.length && same; i += 1) same = keys[i] === lastKeys[i];
    if (same) return lastSorted;
  }
  lastKeys = keys;
  lastSorted = [...keys].sort();
  return lastSorted;
}

/**
 * `value` rebuilt with every object's keys inserted in sorted order, for one native JSON.stringify: several times
 * faster than the serialiser's string building on the records callers build unsorted. UNSORTABLE for anything the
 * serialiser refuses (it then says where), and for a key starting with a digit, which may be an array index that
 * JSON.stringify writes before every other key whatever the insertion order.
 */
function sortedCopy(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : UNSORTABLE;
    case 'object': {
      if (value === null) return value;
      if (Array.isArray(value)) {
        const out = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i += 1) {
          const item = sortedCopy(value[i]);
          if (item === UNSORTABLE) return UNSORTABLE;
          out[i] = item;
        }
        return out;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return UNSORTABLE;
      const record = value as Record<string, unknown>;
      const keys = sortedKeys(Object.keys(record));
      const out: Record<string, unknown> = {};
      for (let i = 0; i < keys.length; i += 1) {
        const key = keys[i] as string;
        const first = key.charCodeAt(0);
        if (first >= 48 && first <= 57) return UNSORTABLE;
        const item = sortedCopy(record[key]);
        if (item === UNSORTABLE) return UNSORTABLE;
        // defineProperty: a "__proto__" key stays data, never a prototype change.
        if (key === '__proto__')
          Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
        else out[key] = item;
      }
      return out;
    }
    default:
      return UNSORTABLE;
  }
}

/**
 * True when JSON.stringify already produces the canonical form: only JSON values, no non-finite numbers,
 * plain objects whose keys enumerate in sorted order at every level. Callers that build their objects with
 * sorted keys (the router's records) get one native stringify instead of a recursive serialisation; any
 * other value, including one JSON.stringify would silently change (undefined, NaN, toJSON), takes the
 * serialiser, which either sorts it or refuses it.
 */
function isStringifyCanonical(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i += 1) if (!isStringifyCanonical(value[i])) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      const record = value as Record<string, unknown>;
      let previous: string | null = null;
      // for…in (own enumerable keys here, the prototype being plain) is JSON.stringify's own key order.
      for (const key in record) {
        if (previous !== null && !(previous < key)) return false;
        previous = key;
        if (!isStringifyCanonical(record[key])) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/** JSON Pointer of the value being serialised; built only when refusing, so the happy path stays cheap. */
function pointerOf(path: readonly (string | number)[]): string {
  return path.length === 0
    ? '/'
    : path.map((part) => `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function refuse(message: (at: string) => string, hint: string, path: readonly (string | number)[]): CpError {
  const pointer = pointerOf(path);
  return new CpError('ERR_CANONICAL_JSON', message(pointer), { hint, details: { pointer } });
}

function serialize(value: unknown, path: (string | number)[]): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) {
        throw refuse((at) => `non-finite number ${String(value)} at ${at}`, 'JSON numbers must be finite', path);
      }
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i += 1) {
          path.push(i);
          out += `${i === 0 ? '' : ','}${serialize(value[i], path)}`;
          path.pop();
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) {
        throw refuse((at) => `non-plain object at ${at}`, 'only plain objects, arrays and primitives are hashed', path);
      }
      const record = value as Record<string, unknown>;
      // Default sort compares UTF-16 code units, exactly the JCS key order.
      const keys = Object.keys(record).sort();
      let out = '{';
      for (let i = 0; i < keys.length; i += 1) {
        const key = keys[i] as string;
        path.push(key);
        out += `${i === 0 ? '' : ','}${JSON.stringify(key)}:${serialize(record[key], path)}`;
        path.pop();
      }
      return `${out}}`;
    }
    default:
      throw refuse(
        (at) => `${typeof value} at ${at} is not JSON`,
        'remove undefined, functions, symbols and bigints before hashing',
        path,
      );
  }
}

/** One-shot SHA-256 (crypto.hash, Node >= 20.12): about twice as fast as createHash for short inputs. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** `sha256:<64 hex>`, the digest form used in manifests, receipts and bootstrap.json. */
export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}

export const SHA256_DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
