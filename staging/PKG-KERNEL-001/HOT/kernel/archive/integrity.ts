// Archive integrity computed and checked with npm's own `ssri`, as npm checks a package against its lockfile.
// Per-asset digests inside a manifest stay `sha256:<hex>`; this is only the digest of a whole .tar.gz.
import type { Readable } from 'node:stream';
import ssri from 'ssri';
import { CpError } from '../errors.js';

/** What a writer records: one sha512 hash. */
const WRITE_ALGORITHMS = ['sha512'];

/** The SRI of bytes already in memory (a freshly packed archive). */
export function integrityOf(data: Buffer): string {
  return ssri.fromData(data, { algorithms: WRITE_ALGORITHMS }).toString();
}

/** The refusal of bytes whose SRI does not match, naming both. */
export function integrityMismatch(where: string, expected: string, actual: string): CpError {
  return new CpError('ERR_INTEGRITY_MISMATCH', `${where} has integrity ${actual}, expected ${expected}`, {
    hint: 'the archive differs from the one that was recorded; do not install it, fetch or build it again',
    details: { where, expected, actual },
  });
}

/** Check bytes in memory against a parsed SRI with `ssri.checkData`. */
export function checkIntegrity(data: Buffer, expected: string, where: string): void {
  if (ssri.checkData(data, expected) !== false) return;
  const algorithm = ssri.parse(expected).pickAlgorithm();
  throw integrityMismatch(where, expected, ssri.fromData(data, { algorithms: [algorithm] }).toString());
}

interface IntegrityError extends Error {
  code?: string;
  found?: unknown;
}

/**
 * Hash a stream as it flows (ssri pipes it alongside whatever else reads it): with `expected`, checked with
 * `ssri.checkStream`, which resolves to the SRI that matched; without, `ssri.fromStream` computes it. Never
 * rejects: a mismatch comes back as the refusal, so a caller can wait for its own reader first.
 */
export function streamIntegrity(
  stream: Readable,
  expected: string | undefined,
  where: string,
): Promise<{ integrity: string } | { error: CpError }> {
  const hashing =
    expected === undefined
      ? ssri.fromStream(stream, { algorithms: WRITE_ALGORITHMS })
      : ssri.checkStream(stream, expected);
  return hashing.then(
    (sri) => ({ integrity: sri.toString() }),
    (error: IntegrityError) => ({
      error:
        error.code === 'EINTEGRITY' && expected !== undefined
          ? integrityMismatch(where, expected, String(error.found))
          : new CpError('ERR_INTERNAL', `${where}: hashing failed: ${error.message}`, { cause: error }),
    }),
  );
}
