// The archive integrity bootstrap.json pins, checked with node:crypto alone: the entry runs before any package
// (and so before ssri, which ships in PKG-RUNTIME-001) is installed. It accepts exactly what the kernel's
// parseIntegrity accepts and checks the sha512 hash, the one ssri would pick; a repository test keeps the two
// in agreement on the same bytes.
import { createHash } from 'node:crypto';
import { BootstrapError } from './errors.js';

const SRI = /^sha512-([A-Za-z0-9+/]{86}==)(?: sha256-[A-Za-z0-9+/]{43}=)?$/;

/** `sha512-<base64>` of the bytes: the form ssri.fromData(data, {algorithms: ['sha512']}) writes. */
export const sri512 = (data: Buffer): string => `sha512-${createHash('sha512').update(data).digest('base64')}`;

/** The sha512 token of a pinned integrity, or a coded refusal when it is not one this bootstrap can check. */
export function pinnedSha512(integrity: string, what: string): string {
  const match = SRI.exec(integrity);
  if (!match)
    throw new BootstrapError(
      'ERR_BOOTSTRAP_INVALID',
      `bootstrap.json pins ${what} by ${JSON.stringify(integrity).slice(0, 200)}, not an SRI string (sha512-<base64>)`,
      'this CP_BOOTSTRAP predates SRI integrity or was edited; rebuild it with `cplane build`',
    );
  return `sha512-${match[1]}`;
}
