import { createHash } from 'node:crypto';
import canonicalizeImport from 'canonicalize';
import { CpError } from './errors.js';

type Canonicalize = (input: unknown) => string | undefined;
const canonicalizeFn = canonicalizeImport as unknown as Canonicalize;

/** RFC 8785 (JCS) canonical JSON. Refuses values JSON cannot represent rather than guessing. */
export function canonicalJson(value: unknown): string {
  assertJsonValue(value, '');
  const text = canonicalizeFn(value);
  if (text === undefined) {
    throw new CpError('ERR_CANONICAL_JSON', 'value has no canonical JSON form', { hint: 'pass a JSON object, array, string, number, boolean or null' });
  }
  return text;
}

function assertJsonValue(value: unknown, pointer: string): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) {
        throw new CpError('ERR_CANONICAL_JSON', `non-finite number ${String(value)} at ${pointer || '/'}`, { hint: 'JSON numbers must be finite', details: { pointer } });
      }
      return;
    case 'object':
      if (value === null) return;
      if (Array.isArray(value)) {
        value.forEach((item, index) => assertJsonValue(item, `${pointer}/${index}`));
        return;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
        throw new CpError('ERR_CANONICAL_JSON', `non-plain object at ${pointer || '/'}`, { hint: 'only plain objects, arrays and primitives are hashed', details: { pointer } });
      }
      for (const [key, item] of Object.entries(value)) assertJsonValue(item, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
      return;
    default:
      throw new CpError('ERR_CANONICAL_JSON', `${typeof value} at ${pointer || '/'} is not JSON`, { hint: 'remove undefined, functions, symbols and bigints before hashing', details: { pointer } });
  }
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `sha256:<64 hex>`, the digest form used in manifests, receipts and bootstrap.json. */
export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}

export const SHA256_DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
