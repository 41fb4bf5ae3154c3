import { validateSignatureSchema } from '../manifest/compiled-validators.js';
import { schemaCheck } from '../manifest/schema-issues.js';
import { archiveError } from '../archive/errors.js';
import type { PackageSignature } from './signing.js';

const check = schemaCheck(validateSignatureSchema);

/** Parse an archive's signature.json; a malformed one is refused, not treated as unsigned. */
export function parseSignature(bytes: Buffer, archive: string): PackageSignature {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw archiveError(
      'ERR_SIGNATURE_MALFORMED',
      archive,
      `signature.json is not JSON: ${(error as Error).message}`,
      'sign the package again with `cplane build --sign-key`',
      {},
      error,
    );
  }
  const issues = check(value);
  if (issues.length > 0) {
    throw archiveError(
      'ERR_SIGNATURE_MALFORMED',
      archive,
      `signature.json is invalid: ${issues[0]?.pointer || '/'} ${issues[0]?.message ?? ''}`,
      'sign the package again with `cplane build --sign-key`',
      {
        errors: issues.map(({ pointer, message }) => ({ pointer, message })),
      },
    );
  }
  return value as PackageSignature;
}
