import { CpError, type ErrorDetails } from '#kernel/errors.js';

/**
 * The seed's typed error names (`progress_ledger_missing_tasks`, …) are kept as `details.error_type`
 * beside the project's stable `ERR_…` code, so either vocabulary can be matched on.
 */
export const DISPATCH_ERRORS = {
  progress_ledger_missing_tasks: 'ERR_PROGRESS_LEDGER_MISSING_TASKS',
  progress_ledger_parse_failed: 'ERR_PROGRESS_LEDGER_PARSE_FAILED',
} as const;

export type DispatchErrorType = keyof typeof DISPATCH_ERRORS;

export function dispatchError(
  type: DispatchErrorType,
  message: string,
  hint: string,
  details: ErrorDetails,
  cause?: unknown,
): CpError {
  return new CpError(DISPATCH_ERRORS[type], message, { hint, details: { error_type: type, ...details }, cause });
}
