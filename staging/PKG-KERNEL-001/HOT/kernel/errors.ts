import { envError } from './env-errors.js';

/**
 * The one error base. Every refusal in cplane is a CpError with a stable `ERR_…` code,
 * a message that names the offending values, a hint that says what to do, and the cause.
 */
export type ErrorDetails = Readonly<Record<string, unknown>>;

export interface CpErrorOptions {
  hint?: string;
  details?: ErrorDetails;
  cause?: unknown;
}

export interface CpErrorJson {
  code: string;
  message: string;
  hint: string;
  details: ErrorDetails;
}

export class CpError extends Error {
  readonly code: string;
  readonly hint: string;
  readonly details: ErrorDetails;

  constructor(code: string, message: string, options: CpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CpError';
    this.code = code;
    this.hint = options.hint ?? '';
    this.details = options.details ?? {};
  }

  toJSON(): CpErrorJson {
    return { code: this.code, message: this.message, hint: this.hint, details: this.details };
  }
}

export function isCpError(value: unknown): value is CpError {
  if (value instanceof CpError) return true;
  // A CpError from another copy of the kernel (e.g. the repository's scripts driving an installed root).
  const code = (value as { code?: unknown } | null)?.code;
  return value instanceof Error && typeof code === 'string' && code.startsWith('ERR_') && 'hint' in value;
}

/** Wrap anything thrown into a CpError, keeping CpErrors as they are; a full disk or the like is not a bug. */
export function toCpError(value: unknown, code = 'ERR_INTERNAL', hint = 'this is a bug in cplane; please report it with the command that caused it'): CpError {
  if (isCpError(value)) return value;
  const env = code === 'ERR_INTERNAL' ? envError(value) : null;
  if (env) return env;
  const message = value instanceof Error ? value.message : String(value);
  return new CpError(code, message, { hint, cause: value });
}

/** Short JSON rendering of an offending value for error messages (bounded, never throws). */
export function show(value: unknown, max = 120): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
