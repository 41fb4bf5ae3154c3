import { readFileSync } from 'node:fs';
import { envError } from '../env-errors.js';
import { CpError, show } from '../errors.js';
import { checkpointKeys } from '../signing/root-key.js';
import { readTrustStore } from '../signing/trust.js';
import {
  checkCheckpoints,
  checkpointKeysFromPem,
  type CheckpointKey,
  type ChainView,
  type CheckpointReport,
  type FoundCheckpoint,
} from './checkpoint.js';
import { readCheckpointSource, readRootCheckpoints } from './checkpoint-store.js';
import type { Ledger } from './ledger.js';

export interface CheckpointSources {
  /** The root whose HOT/ledger/checkpoints/ and trust store to use; null for a bare ledger file. */
  root: string | null;
  /** Checkpoint files kept elsewhere (`--checkpoint FILE`, repeatable). */
  files?: readonly string[];
  /** Public keys (PEM files) to verify with instead of the trust store's checkpoint keys (`--checkpoint-key`). */
  keyFiles?: readonly string[];
}

export interface RootCheckpointReport extends CheckpointReport {
  /** Nothing to check against: no checkpoint key and no checkpoint (a root bootstrapped before checkpoints). */
  absent: boolean;
  checked: number;
}

function readKeyFile(path: string): CheckpointKey[] {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    // A fault of the machine (a full disk, a failing device, no permission) keeps its own code.
    const env = envError(error, path, 'reading a checkpoint key');
    if (env) throw env;
    throw new CpError('ERR_KEY_INVALID', `cannot read ${show(path)}: ${(error as Error).message}`, {
      hint: "pass the root's public key (trust.json's checkpoint key as a .pub file)",
      details: { path },
      cause: error,
    });
  }
  return checkpointKeysFromPem([{ public_key_pem: pem, source: path }]);
}

/**
 * Check a ledger against every checkpoint in its root and every file given. A root whose trust store holds a
 * checkpoint key always has checkpoints (genesis writes the first), so none at all is a finding too.
 */
export function checkLedgerCheckpoints(ledger: Ledger | ChainView, sources: CheckpointSources): RootCheckpointReport {
  const gathered = gatherCheckpoints(sources);
  return finishReport(checkCheckpoints(ledger, gathered.found, gathered.keys), gathered);
}

/** The checkpoints a root and the given files hold, and the keys to check them with. */
export function gatherCheckpoints(sources: CheckpointSources): {
  found: FoundCheckpoint[];
  keys: CheckpointKey[];
  rootKeyed: boolean;
  inRoot: number;
} {
  const rootKeys = sources.root === null ? [] : checkpointKeys(readTrustStore(sources.root));
  const keys =
    sources.keyFiles && sources.keyFiles.length > 0
      ? sources.keyFiles.flatMap(readKeyFile)
      : checkpointKeysFromPem(rootKeys);
  const inRoot = sources.root === null ? [] : readRootCheckpoints(sources.root);
  const found: FoundCheckpoint[] = [...inRoot, ...(sources.files ?? []).flatMap(readCheckpointSource)];
  return { found, keys, rootKeyed: rootKeys.length > 0, inRoot: inRoot.length };
}

export function finishReport(
  report: CheckpointReport,
  gathered: { found: readonly FoundCheckpoint[]; rootKeyed: boolean; inRoot: number },
): RootCheckpointReport {
  const { found, rootKeyed, inRoot } = gathered;
  if (rootKeyed && inRoot === 0) {
    report.findings.push({
      problem: 'missing',
      source: 'HOT/ledger/checkpoints',
      seq: null,
      message: 'this root has a checkpoint key but no checkpoint at all: they were deleted',
    });
    report.ok = false;
  }
  return { ...report, absent: found.length === 0 && !rootKeyed, checked: found.length };
}
