import { join } from 'node:path';

/**
 * The layout of an installed root (SPEC §3.4): every state and config path, root-relative (forward slashes,
 * the form manifests and findings name). Everything under HOT/ is governed (owned by exactly one package)
 * except the three state directories, which the installer, the ledger and the packages' stores write.
 * Dependency-free apart from node:path: the module loader's trust anchor reads it before anything is verified.
 */
export const STATE_DIRS = ['installed', 'ledger', 'registries'] as const;

export const LAYOUT = {
  hot: 'HOT',
  installed: 'HOT/installed',
  ledgerDir: 'HOT/ledger',
  registries: 'HOT/registries',
  config: 'HOT/config',
  schemas: 'HOT/schemas',
  scripts: 'HOT/scripts',
  tests: 'HOT/tests',
  providers: 'HOT/providers',
  ledgerFile: 'HOT/ledger/ledger.sqlite',
  checkpoints: 'HOT/ledger/checkpoints',
  ownershipDb: 'HOT/registries/ownership.sqlite',
  lockDb: 'HOT/registries/lock.sqlite',
  journal: 'HOT/registries/journal.json',
  /** Per-transaction staging directories live here, inside the root so renames stay on one filesystem. */
  txnDir: 'HOT/registries/txn',
  trust: 'HOT/registries/trust.json',
  rootKey: 'HOT/registries/root-key.pem',
  bootstrapPending: 'HOT/registries/bootstrap-pending.json',
  budgetDb: 'HOT/registries/budget.sqlite',
  dispatchDb: 'HOT/registries/dispatch.sqlite',
  breakers: 'HOT/registries/breakers.json',
  spool: 'HOT/registries/router-spool',
  spoolQuarantine: 'HOT/registries/router-spool-quarantine',
  /** The operator's config overrides (`cplane config`): owned by no package, never touched by the installer. */
  operatorConfig: 'HOT/registries/operator-config.json',
  /** Route keys revoked before they expire (`cplane token revoke`), checked on every authentication. */
  revokedKeys: 'HOT/registries/revoked-keys.json',
  /** The result of the last `cplane gate-check` on this root, for the console and `cplane report`. */
  lastGateCheck: 'HOT/registries/last-gate-check.json',
} as const;

export const OPERATOR_CONFIG_REL = LAYOUT.operatorConfig;
export const REVOKED_KEYS_REL = LAYOUT.revokedKeys;

export type RootPaths = { root: string } & { [K in keyof typeof LAYOUT]: string };

/** The layout's paths under `root`. */
export function rootPaths(root: string): RootPaths {
  const paths = Object.entries(LAYOUT).map(([name, rel]) => [name, join(root, rel)]);
  return { root, ...Object.fromEntries(paths) } as RootPaths;
}

/** A shipped config file, `HOT/config/<name>` (router.json, budget.json, dispatch.json). */
export function configPath(root: string, name: string): string {
  return join(root, LAYOUT.config, name);
}

/** A package id as the manifest schema allows it: a single safe path segment (it names HOT/installed/<PKG>/). */
export const PACKAGE_ID = /^PKG-[A-Z0-9-]+-\d{3}$/;

export function receiptDir(root: string, packageId: string): string {
  return join(root, LAYOUT.installed, packageId);
}

export function receiptPath(root: string, packageId: string): string {
  return join(receiptDir(root, packageId), 'receipt.json');
}

/**
 * Whether a root-relative path (`HOT/kernel/x.js`, forward slashes) lies in a governed directory:
 * under HOT/ and not inside installed/, ledger/ or registries/. Gates use this to find orphans.
 */
export function isGovernedPath(relPath: string): boolean {
  const parts = relPath.split('/');
  if (parts.length < 2 || parts[0] !== LAYOUT.hot) return false;
  if (parts.some((part) => part === '' || part === '.' || part === '..')) return false;
  const top = parts[1] as string;
  return !(STATE_DIRS as readonly string[]).includes(top);
}
