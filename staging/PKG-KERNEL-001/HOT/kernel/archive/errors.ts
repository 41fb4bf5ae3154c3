import { CpError, type ErrorCode, show } from '../errors.js';

/** Refusals of a hostile or broken archive; each names the archive and the member at fault. */
export function archiveError(
  code: ErrorCode,
  archive: string,
  message: string,
  hint: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): CpError {
  return new CpError(code, `archive ${show(archive)}: ${message}`, { hint, details: { archive, ...details }, cause });
}
