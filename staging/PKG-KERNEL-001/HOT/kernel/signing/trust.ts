import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../atomic.js';
import { CpError, isCpError } from '../errors.js';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { validateTrustSchema } from '../manifest/compiled-validators.js';
import { schemaCheck } from '../manifest/schema-issues.js';
import { keyIdOf, parsePublicKey } from './keys.js';
import type { TrustedKey } from './signing.js';

export function trustStorePath(root: string): string {
  return join(root, 'HOT', 'registries', 'trust.json');
}

const trustCheck = schemaCheck(validateTrustSchema);

/** The keys a root trusts to sign packages; an absent store trusts nothing. */
export function readTrustStore(root: string): TrustedKey[] {
  const path = trustStorePath(root);
  if (!existsSync(path)) return [];
  let value: unknown;
  try {
    value = JSON.parse(readTextBounded(path, { maxBytes: READ_LIMITS.state, what: 'the trust store' }));
  } catch (error) {
    if (isCpError(error) && error.code !== 'ERR_INPUT_UNREADABLE') throw error;
    throw new CpError('ERR_TRUST_STORE_INVALID', `trust store ${path} is not JSON: ${(error as Error).message}`, { hint: 'restore the file or remove it and trust the keys again with `cplane keys trust`', details: { path }, cause: error });
  }
  const issues = trustCheck(value);
  if (issues.length > 0) {
    throw new CpError('ERR_TRUST_STORE_INVALID', `trust store ${path} is invalid: ${issues[0]?.pointer || '/'} ${issues[0]?.message ?? ''}`, {
      hint: 'restore the file or remove it and trust the keys again with `cplane keys trust`',
      details: { path, errors: issues.map(({ pointer, message }) => ({ pointer, message })) },
    });
  }
  return (value as { keys: TrustedKey[] }).keys;
}

export interface TrustKeyOptions {
  now?: () => Date;
}

/** Add a public key to the root's trust store (atomically). Trusting a key twice keeps the first entry. */
export function trustKey(root: string, publicKeyPem: string, opts: TrustKeyOptions = {}): TrustedKey {
  const publicKey = parsePublicKey(publicKeyPem);
  const keyId = keyIdOf(publicKey);
  const keys = readTrustStore(root);
  const existing = keys.find((k) => k.key_id === keyId);
  if (existing) return existing;
  const entry: TrustedKey = {
    key_id: keyId,
    public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    added_at: (opts.now ?? (() => new Date()))().toISOString(),
  };
  const path = trustStorePath(root);
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, `${JSON.stringify({ keys: [...keys, entry] }, null, 2)}\n`);
  return entry;
}
