import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../atomic.js';
import { CpError, isCpError, show } from '../errors.js';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { validateTrustSchema } from '../manifest/compiled-validators.js';
import { schemaCheck } from '../manifest/schema-issues.js';
import { keyIdOf, parsePublicKey } from './keys.js';
import type { TrustedKey } from './signing.js';
import { rootPaths } from '../root/layout.js';

export function trustStorePath(root: string): string {
  return rootPaths(root).trust;
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
    throw new CpError('ERR_TRUST_STORE_INVALID', `trust store ${path} is not JSON: ${(error as Error).message}`, {
      hint: 'restore the file or remove it and trust the keys again with `cplane keys trust`',
      details: { path },
      cause: error,
    });
  }
  const issues = trustCheck(value);
  if (issues.length > 0) {
    throw new CpError(
      'ERR_TRUST_STORE_INVALID',
      `trust store ${path} is invalid: ${issues[0]?.pointer || '/'} ${issues[0]?.message ?? ''}`,
      {
        hint: 'restore the file or remove it and trust the keys again with `cplane keys trust`',
        details: { path, errors: issues.map(({ pointer, message }) => ({ pointer, message })) },
      },
    );
  }
  return (value as { keys: TrustedKey[] }).keys;
}

export interface TrustKeyOptions {
  now?: () => Date;
  /** Packages this key may take over through `replaces` (or upgrade) although another key signed them. */
  mayReplace?: readonly string[];
  /** 'checkpoint' for the root key; package keys carry no role. */
  role?: 'checkpoint';
}

const PACKAGE_ID = /^PKG-[A-Z0-9-]+-\d{3}$/;

/**
 * Add a public key to the root's trust store (atomically). Trusting a key twice keeps the first entry, but
 * adds any new `mayReplace` package ids to it.
 */
export function trustKey(root: string, publicKeyPem: string, opts: TrustKeyOptions = {}): TrustedKey {
  const publicKey = parsePublicKey(publicKeyPem);
  const keyId = keyIdOf(publicKey);
  const mayReplace = [...new Set(opts.mayReplace ?? [])];
  const bad = mayReplace.filter((id) => !PACKAGE_ID.test(id));
  if (bad.length > 0) {
    throw new CpError('ERR_USAGE', `may-replace needs package ids, got ${show(bad)}`, {
      hint: 'name packages as PKG-NAME-001',
      details: { may_replace: bad },
    });
  }
  const keys = readTrustStore(root);
  const existing = keys.find((k) => k.key_id === keyId);
  const added = mayReplace.filter((id) => !(existing?.may_replace ?? []).includes(id));
  if (existing && added.length === 0) return existing;
  const entry: TrustedKey = existing
    ? { ...existing, may_replace: [...(existing.may_replace ?? []), ...added] }
    : {
        key_id: keyId,
        public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        added_at: (opts.now ?? (() => new Date()))().toISOString(),
        ...(opts.role ? { role: opts.role } : {}),
        ...(mayReplace.length > 0 ? { may_replace: mayReplace } : {}),
      };
  const path = trustStorePath(root);
  mkdirSync(dirname(path), { recursive: true });
  const next = existing ? keys.map((k) => (k === existing ? entry : k)) : [...keys, entry];
  writeFileAtomic(path, `${JSON.stringify({ keys: next }, null, 2)}\n`);
  return entry;
}
