import type { CliContext } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';

/** The `--root` option every config subcommand takes. */
export const CONFIG_ROOT = rootOption('the cplane root whose configuration to act on');

export function configRoot(args: { root?: string | undefined }, ctx: CliContext): string {
  return resolveRoot(args.root, ctx);
}

/** A value as one line: JSON, so a string and a number that look alike stay apart. */
export function showValue(value: unknown): string {
  return value === undefined ? '(unset)' : JSON.stringify(value);
}
