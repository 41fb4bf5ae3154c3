import { compileSchema, type SchemaCheck } from '../manifest/validator.js';
import { archiveError } from '../archive/errors.js';
import { SIGNATURE_SCHEMA } from './signature-schema.js';
import type { PackageSignature } from './signing.js';

let check: SchemaCheck | undefined;

/** Parse an archive's signature.json; a malformed one is refused, not treated as unsigned. */
export function parseSignature(bytes: Buffer, archive: string): PackageSignature {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw archiveError('ERR_SIGNATURE_MALFORMED', archive, `signature.json is not JSON: ${(error as Error).message}`, 'sign the package again with `cplane build --sign-key`', {}, error);
  }
  check ??= compileSchema(SIGNATURE_SCHEMA);
  const issues = check(value);
  if (issues.length > 0) {
    throw archiveError('ERR_SIGNATURE_MALFORMED', archive, `signature.json is invalid: ${issues[0]?.pointer || '/'} ${issues[0]?.message ?? ''}`, 'sign the package again with `cplane build --sign-key`', {
      errors: issues.map(({ pointer, message }) => ({ pointer, message })),
    });
  }
  return value as PackageSignature;
}
