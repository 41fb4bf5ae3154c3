import { resolve } from 'node:path';
import { CpError } from '../kernel/errors.js';
import type { CliContext } from './command.js';

/** The root a command acts on: --root, else the root whose entry script is running. */
export function resolveRoot(root: unknown, ctx: CliContext): string {
  if (typeof root === 'string' && root.length > 0) return resolve(ctx.cwd, root);
  if (ctx.defaultRoot) return ctx.defaultRoot;
  throw new CpError('ERR_USAGE', 'this command needs --root ROOT', { hint: 'pass --root with the path of a cplane root' });
}
