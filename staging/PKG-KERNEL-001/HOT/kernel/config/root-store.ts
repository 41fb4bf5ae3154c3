import { existsSync } from 'node:fs';
import { CpError } from '../errors.js';
import { defaultConfigPath, effectiveConfig } from './effective.js';

/**
 * Where a root's ledger, budgets, breakers and revocations live: a postgres:// URL, or null for its SQLite
 * files. The flag wins over CPLANE_DATABASE_URL, which wins over the root's effective `gateway.store`; an empty
 * value is not a choice. Every command that reads or writes the root's store (serve, route, status, budget
 * status, the gates) asks here, so they never disagree about which chain is the root's.
 *
 * The kernel cannot import the gateway package that owns the `gateway` section, so it reads the section
 * generically; a root without that package (no HOT/config/gateway.json) simply has no configured store.
 */
export function rootStoreUrl(root: string, env: NodeJS.ProcessEnv, flag?: unknown): string | null {
  return explicitStoreUrl(env, flag) ?? configuredStoreUrl(root);
}

/** The store named by the flag or CPLANE_DATABASE_URL, before the root's config is read; undefined when neither. */
export function explicitStoreUrl(env: NodeJS.ProcessEnv, flag?: unknown): string | undefined {
  if (typeof flag === 'string' && flag !== '') return flag;
  const fromEnv = env.CPLANE_DATABASE_URL;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
}

/** The root's effective `gateway.store`, or null when it has none. */
export function configuredStoreUrl(root: string): string | null {
  if (!existsSync(defaultConfigPath(root, 'gateway'))) return null;
  const section = effectiveConfig(root, 'gateway');
  const store = typeof section === 'object' && section !== null ? (section as { store?: unknown }).store : undefined;
  if (store === undefined || store === '') return null;
  if (typeof store !== 'string')
    throw new CpError('ERR_STORE_URL', "the root's gateway.store config is not a string", {
      hint: 'see `cplane config show gateway`; set it with `cplane config set gateway.store postgres://…` or unset it',
      details: { type: typeof store },
    });
  return store;
}
