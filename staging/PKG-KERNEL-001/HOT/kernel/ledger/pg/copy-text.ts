/**
 * Fields of PostgreSQL's `COPY … FROM STDIN` text format: one line per row, fields split by tabs, `\N` for NULL,
 * and a backslash, newline, carriage return or tab inside a field written as its escape.
 */
const SPECIAL = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
/** Bytes a bytea field may carry as themselves (its escape input form): printable ASCII but the backslash. */
const PLAIN_BYTES = /^[\x20-\x5b\x5d-\x7e]*$/;

export const COPY_NULL = '\\N';

/** A text field. */
export function copyText(value: string): string {
  return SPECIAL.test(value) ? value.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c] as string) : value;
}

/**
 * A bytea field holding `value`'s UTF-8 bytes: printable ASCII as itself, anything else (U+0000, a backslash,
 * non-ASCII) in bytea's hex form, whose leading backslash COPY needs doubled.
 */
export function copyBytea(value: string): string {
  return PLAIN_BYTES.test(value) ? value : `\\\\x${Buffer.from(value, 'utf8').toString('hex')}`;
}
