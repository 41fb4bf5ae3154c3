import { CpError, toCpError } from '../errors.js';
import { installOne, type InstallEnv, type InstallOutcome, type InstallRequest } from './install.js';
import { withRootSession, type SessionOptions } from './session.js';

export interface BatchProgress {
  index: number;
  total: number;
  outcome: InstallOutcome;
}

/**
 * Install archives in the given order under one lock and one ledger handle (bootstrap's fast path).
 * Stops at the first refusal: earlier packages stay fully installed, the failing one leaves nothing.
 */
export async function installPackages(root: string, requests: readonly InstallRequest[], env: InstallEnv & SessionOptions = {},
  onProgress: (progress: BatchProgress) => void = () => {}): Promise<InstallOutcome[]> {
  return withRootSession(root, env, async (session) => {
    const outcomes: InstallOutcome[] = [];
    for (const [index, request] of requests.entries()) {
      try {
        const outcome = await installOne(session, request, env);
        outcomes.push(outcome);
        onProgress({ index, total: requests.length, outcome });
      } catch (error) {
        const coded = toCpError(error);
        throw new CpError(coded.code, `package ${index + 1} of ${requests.length} (${request.archivePath}): ${coded.message}`, {
          hint: coded.hint, details: { ...coded.details, archive: request.archivePath, index, installed: outcomes.map((o) => o.package_id) }, cause: error,
        });
      }
    }
    return outcomes;
  });
}
