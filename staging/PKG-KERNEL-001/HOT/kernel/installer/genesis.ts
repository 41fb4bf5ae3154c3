import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { CpError, show } from '../errors.js';
// ledger.js, not the ledger's index: the index also loads export/import (and ajv), which installing never uses.
import { Ledger, ledgerPathForRoot } from '../ledger/ledger.js';
import { OwnershipRegistry } from '../registry/ownership.js';
import { rootPaths } from '../root/layout.js';
import { createLockFile } from '../root/lock.js';
import { writeRootCheckpoint } from '../ledger/checkpoint-store.js';
import { createRootKey, trustKey } from '../signing/index.js';

export interface CreateRootOptions {
  /** Names allowed to exist in the root already (the genesis kernel's own temporary directory). */
  allow?: readonly string[];
  /** Public keys (PEM) to trust before any package is installed. */
  trustKeys?: readonly string[];
  clock?: () => number;
  bootstrapVersion?: string;
  /** false lays out a root as cplane did before root keys (no checkpoints); for tests of such roots. */
  rootKey?: boolean;
}

/**
 * Genesis: lay down a new root's state (directories, lock, ownership registry, ledger, trust store, root key and
 * the first checkpoint).
 * Refuses a root that already has anything in it: genesis never adopts files it did not write.
 */
export function createRoot(root: string, options: CreateRootOptions = {}): void {
  if (existsSync(root)) {
    const allow = new Set(options.allow ?? []);
    const present = readdirSync(root).filter((name) => !allow.has(name));
    if (present.length > 0) {
      throw new CpError(
        'ERR_ROOT_NOT_EMPTY',
        `${show(root)} is not empty (${show(present.slice(0, 5))}); genesis needs an empty directory`,
        {
          hint: 'pick a new directory for the root, or install single packages into the existing root with cplane install',
          details: { root, entries: present.slice(0, 20) },
        },
      );
    }
  }
  const paths = rootPaths(root);
  for (const dir of [paths.installed, paths.txnDir]) mkdirSync(dir, { recursive: true });
  // The ledger holds every recorded prompt and reply: its directory is the owner's alone.
  mkdirSync(paths.ledgerDir, { recursive: true, mode: 0o700 });
  createLockFile(root);
  OwnershipRegistry.open(root, { create: true }).close();
  for (const pem of options.trustKeys ?? []) trustKey(root, pem);
  const clock = options.clock;
  const rootKey = options.rootKey === false ? null : createRootKey(root, clock ? { now: () => new Date(clock()) } : {});
  const ledger = Ledger.open(ledgerPathForRoot(root), {
    create: true,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  try {
    ledger.append({
      event_type: 'ROOT_CREATED',
      submission_id: 'ROOT',
      decision: 'SUCCESS',
      reason: 'genesis created the root',
      metadata: {
        bootstrap_version: options.bootstrapVersion ?? null,
        trusted_keys: (options.trustKeys ?? []).length,
        ...(rootKey ? { root_key_id: rootKey.key_id } : {}),
      },
    });
    if (rootKey) writeRootCheckpoint(root, ledger, clock ? { now: clock } : {});
  } finally {
    ledger.close();
  }
}
