import { resolveRoot, rootOption } from '#cli/root-option.js';
import type { CliContext } from '#cli/command.js';
import { DispatchRuntime } from '../../dispatch/runtime.js';

/** Every dispatch subcommand acts on one run of one root. */
export const RUN_OPTIONS = {
  ...rootOption('the cplane root (state in ROOT/HOT/registries/dispatch.sqlite)'),
  run: { type: 'string', demandOption: true, describe: 'the run id' },
} as const;

/** Open the root's dispatch runtime, run `fn`, and always close it. */
export function withRuntime<T>(root: string | undefined, ctx: CliContext, fn: (runtime: DispatchRuntime) => T): T {
  const runtime = new DispatchRuntime({ root: resolveRoot(root, ctx) });
  try {
    return fn(runtime);
  } finally {
    runtime.close();
  }
}
