// Archive integrity as npm's lockfile writes it: a Subresource Integrity string (`sha512-<base64>`, optionally
// followed by ` sha256-<base64>`). Parsing needs no hashing, so receipt readers check it without loading ssri.
import { CpError, show } from '../errors.js';

/** Base64 lengths of the digests a reader accepts, by algorithm. */
const DIGEST_LENGTH: Readonly<Record<string, number>> = { sha512: 88, sha256: 44 };
const TOKEN = /^([a-z0-9]{1,16})-([A-Za-z0-9+/]+={0,2})$/;
const MAX_LENGTH = 512;

function malformed(value: unknown, where: string, why: string): CpError {
  return new CpError('ERR_INTEGRITY_MALFORMED', `${where}: integrity ${show(value)} ${why}`, {
    hint: 'an archive integrity is an SRI string such as `sha512-<88 base64 characters>`; rebuild with `cplane build`',
    details: { where, integrity: value },
  });
}

/**
 * Parse an archive integrity at the edge: a space-separated list of `sha512-…`/`sha256-…` tokens of the right
 * length, at least one of them sha512, and nothing else. ssri alone would check a weak md5 or sha1 hash and
 * silently drop algorithms it does not know; here both are refusals.
 */
export function parseIntegrity(value: unknown, where: string): string {
  if (typeof value !== 'string') throw malformed(value, where, 'is not a string');
  if (value.length === 0 || value.length > MAX_LENGTH)
    throw malformed(value, where, `must be 1 to ${MAX_LENGTH} characters`);
  const algorithms = new Set<string>();
  for (const token of value.split(' ')) {
    const match = TOKEN.exec(token);
    if (!match) throw malformed(value, where, `has a token ${show(token)} that is not <algorithm>-<base64>`);
    const algorithm = match[1] as string;
    const length = DIGEST_LENGTH[algorithm];
    if (length === undefined) {
      throw new CpError(
        'ERR_INTEGRITY_UNSUPPORTED',
        `${where}: integrity ${show(value)} uses ${show(algorithm)}; only sha512 (optionally with sha256) is checked`,
        {
          hint: 'rebuild the archive with `cplane build`, which records sha512',
          details: { where, integrity: value, algorithm },
        },
      );
    }
    if ((match[2] as string).length !== length)
      throw malformed(value, where, `has a ${algorithm} digest of the wrong length (expected ${length} characters)`);
    algorithms.add(algorithm);
  }
  if (!algorithms.has('sha512'))
    throw new CpError(
      'ERR_INTEGRITY_UNSUPPORTED',
      `${where}: integrity ${show(value)} has no sha512 hash; sha256 alone is not accepted for an archive`,
      {
        hint: 'rebuild the archive with `cplane build`, which records sha512',
        details: { where, integrity: value, algorithm: [...algorithms].join(' ') },
      },
    );
  return value;
}
