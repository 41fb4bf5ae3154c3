import { resolve } from 'node:path';
import { CpError } from '../kernel/errors.js';
import { assertRootShape } from '../kernel/root/shape.js';
import type { CliContext } from './command.js';

/** The `--root` option of a command acting on a root, described for that command; `resolveRoot` reads it. */
export function rootOption<const D extends string>(describe: D) {
  return { root: { type: 'string', describe } } as const;
}

/**
 * The root a command acts on: --root, else the root whose entry script is running. Its shape is checked
 * here, before any command opens a file in it (kernel/root/shape.ts).
 */
export function resolveRoot(root: unknown, ctx: CliContext): string {
  const chosen = typeof root === 'string' && root.length > 0 ? resolve(ctx.cwd, root) : ctx.defaultRoot;
  if (chosen) {
    assertRootShape(chosen);
    return chosen;
  }
  throw new CpError('ERR_USAGE', 'this command needs --root ROOT', {
    hint: 'pass --root with the path of a cplane root',
  });
}
