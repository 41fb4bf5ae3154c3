import type { Argv } from 'yargs';
import { CpError, show } from '../kernel/errors.js';

interface DeclaredOptions {
  string: string[];
  number: string[];
  array: string[];
  boolean: string[];
}

/**
 * Every string or number option of a command needs a value: `--prompt --dev` is a usage error, not an empty
 * prompt, and `--max-tokens abc` (NaN) is refused instead of falling back to a default.
 */
export function requireOptionValues(y: Argv): Argv {
  const declared = (y as unknown as { getOptions(): DeclaredOptions }).getOptions();
  const booleans = new Set(declared.boolean);
  const arrays = new Set(declared.array);
  const valued = [...new Set([...declared.string, ...declared.number])].filter(
    (key) => !booleans.has(key) && !arrays.has(key),
  );
  const numbers = declared.number.filter((key) => !booleans.has(key));
  let built = valued.length > 0 ? y.requiresArg(valued) : y;
  if (valued.length > 0) {
    // yargs turns a repeated option into an array, which no handler of a single value expects (`--session a
    // --session b` reached SQLite as two bind values: an uncoded crash). Which one was meant is the user's call.
    built = built.check((argv) => {
      for (const key of valued) {
        const value = argv[key] as unknown;
        if (Array.isArray(value)) {
          throw new CpError('ERR_USAGE', `--${key} was given ${value.length} times; it takes one value`, {
            hint: `give --${key} once`,
            details: { option: key, times: value.length },
          });
        }
      }
      return true;
    });
  }
  if (numbers.length > 0) {
    built = built.check((argv) => {
      for (const key of numbers) {
        const value = argv[key] as unknown;
        const values = Array.isArray(value) ? value : [value];
        if (values.some((v) => typeof v === 'number' && !Number.isFinite(v))) {
          throw new CpError('ERR_USAGE', `--${key} needs a number, and what was given is not one`, {
            hint: `e.g. --${key} 100`,
            details: { option: key },
          });
        }
      }
      return true;
    });
  }
  return built;
}

/** The most rows a listing command (`ledger tail/query --limit`, `budget status --limit`) returns. */
export const MAX_LIST_LIMIT = 100_000;

/** A whole number option within [min, max], or undefined when not given; anything else is a usage error. */
export function intOption(name: string, value: number, min: number, max: number): number;
export function intOption(name: string, value: unknown, min: number, max: number): number | undefined;
export function intOption(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new CpError('ERR_USAGE', `--${name} must be a whole number from ${min} to ${max}, got ${show(value)}`, {
      hint: `e.g. --${name} ${Math.min(max, Math.max(min, 100))}`,
      details: { option: name, min, max },
    });
  }
  return value;
}
