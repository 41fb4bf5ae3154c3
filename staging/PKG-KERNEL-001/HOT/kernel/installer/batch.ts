import { basename } from 'node:path';
import { CpError, toCpError } from '../errors.js';
import type { PackageArchive } from '../archive/read.js';
import { writeRootCheckpoint } from '../ledger/checkpoint-store.js';
import {
  installOne,
  readRequestArchive,
  type InstallEnv,
  type InstallOutcome,
  type InstallRequest,
} from './install.js';
import { withRootSession, type RootSession, type SessionOptions } from './session.js';

export interface BatchProgress {
  index: number;
  total: number;
  outcome: InstallOutcome;
}

/**
 * Install archives in the given order under one lock and one ledger handle (bootstrap's fast path).
 * Stops at the first refusal: earlier packages stay fully installed, the failing one leaves nothing.
 * The next archive is read while the current one is staged and committed: reading writes nothing and
 * is mostly CPU (inflate, parse, hash) where committing mostly waits on the disk. A read that fails is
 * reported when its package's turn comes, exactly as if it had been read then.
 */
export async function installPackages(
  root: string,
  requests: readonly InstallRequest[],
  env: InstallEnv & SessionOptions = {},
  onProgress: (progress: BatchProgress) => void = () => {},
): Promise<InstallOutcome[]> {
  return withRootSession(root, env, async (session) => {
    const outcomes: InstallOutcome[] = [];
    session.deferCheckpoint = true;
    const committed = (): boolean => outcomes.some((o) => o.action !== 'unchanged');
    try {
      await installAll(session, outcomes);
    } catch (error) {
      // Also after a refusal: the packages committed before it are anchored like any others.
      if (committed()) checkpointAfterRefusal(root, session, error);
      throw error;
    }
    if (committed()) writeRootCheckpoint(root, session.ledger);
    return outcomes;
  });

  async function installAll(session: RootSession, outcomes: InstallOutcome[]): Promise<InstallOutcome[]> {
    const reads = new Map<number, Promise<PackageArchive>>();
    const readAhead = (index: number): void => {
      const request = requests[index];
      if (request === undefined || reads.has(index)) return;
      const reading = readRequestArchive(request, env);
      reading.catch(() => {}); // observed at its turn (or never, if an earlier package stops the batch)
      reads.set(index, reading);
    };
    for (const [index, request] of requests.entries()) {
      readAhead(index);
      readAhead(index + 1);
      const reading = reads.get(index);
      reads.delete(index); // an installed archive's bytes are not kept for the rest of the batch
      try {
        const outcome = await installOne(session, request, env, reading);
        outcomes.push(outcome);
        onProgress({ index, total: requests.length, outcome });
      } catch (error) {
        const coded = toCpError(error);
        throw new CpError(
          coded.code,
          `package ${index + 1} of ${requests.length} (${basename(request.archivePath)}): ${coded.message}`,
          {
            hint: coded.hint,
            details: {
              ...coded.details,
              archive: request.archivePath,
              index,
              installed: outcomes.map((o) => o.package_id),
            },
            cause: error,
          },
        );
      }
    }
    return outcomes;
  }
}

/** The refusal stays the error the caller sees; a checkpoint that also failed is named in it, not swallowed. */
function checkpointAfterRefusal(root: string, session: RootSession, refusal: unknown): void {
  try {
    writeRootCheckpoint(root, session.ledger);
  } catch (error) {
    const coded = toCpError(refusal);
    throw new CpError(
      coded.code,
      `${coded.message} (and the ledger head could not be checkpointed: ${toCpError(error).message})`,
      {
        hint: coded.hint,
        details: { ...coded.details, checkpoint_error: toCpError(error).code },
        cause: refusal,
      },
    );
  }
}
