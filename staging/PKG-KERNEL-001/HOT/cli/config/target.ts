import type { Argv } from 'yargs';
import type { CliContext } from '../command.js';
import { resolveRoot } from '../root-option.js';

export interface ConfigRootArgs {
  root?: string | undefined;
}

export function withConfigRoot<T>(y: Argv<T>): Argv<T & ConfigRootArgs> {
  return y.option('root', { type: 'string', describe: 'the cplane root whose configuration to act on' });
}

export function configRoot(args: ConfigRootArgs, ctx: CliContext): string {
  return resolveRoot(args.root, ctx);
}

/** A value as one line: JSON, so a string and a number that look alike stay apart. */
export function showValue(value: unknown): string {
  return value === undefined ? '(unset)' : JSON.stringify(value);
}
