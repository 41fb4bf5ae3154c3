import { codeEntry, type ErrorCode } from './catalogue/define.js';
import './codes.js';
import { envError } from './env-errors.js';

export type { ErrorCode } from './catalogue/define.js';
import { truncateText } from './text.js';

/**
 * The one error base. Every refusal in cplane is a CpError with a stable `ERR_…` code from the catalogue
 * (catalogue/define.ts), a message that names the offending values, a hint that says what to do (the
 * catalogue's when none is given), and the cause.
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
  readonly code: ErrorCode;
  readonly hint: string;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, options: CpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CpError';
    this.code = code;
    this.hint = options.hint ?? codeEntry(code)?.hint ?? '';
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
export function toCpError(
  value: unknown,
  code: ErrorCode = 'ERR_INTERNAL',
  hint = 'this is a bug in cplane; please report it with the command that caused it',
): CpError {
  if (isCpError(value)) return value;
  const env = code === 'ERR_INTERNAL' ? envError(value) : null;
  if (env) return env;
  const message = value instanceof Error ? value.message : String(value);
  return new CpError(code, message, { hint, cause: value });
}

/**
 * Characters JSON.stringify leaves as they are although they change how a line reads: DEL, the C1 controls,
 * the line and paragraph separators and the bidirectional overrides and isolates.
 */
const UNPRINTABLE = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A string as a JSON string literal that prints unambiguously on one line: every control and formatting
 * character escaped (JSON.stringify already escapes C0 and unpaired surrogates), whole, never truncated.
 */
export function quote(text: string): string {
  return escapeUnprintable(JSON.stringify(text));
}

function escapeUnprintable(json: string): string {
  return json.replace(UNPRINTABLE, (c) => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, '0')}`);
}

/** Short JSON rendering of an offending value for error messages (bounded, never throws). */
export function show(value: unknown, max = 120): string {
  let text: string;
  try {
    const json = JSON.stringify(value) as string | undefined;
    text = json === undefined ? String(value) : escapeUnprintable(json);
  } catch {
    text = String(value);
  }
  return truncateText(text, max);
}
