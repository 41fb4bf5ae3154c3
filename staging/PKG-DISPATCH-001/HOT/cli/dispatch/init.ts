import { resolve } from 'node:path';
import { defineCommand, EXIT } from '#cli/command.js';
import { humanInit } from '../../dispatch/human.js';
import { RUN_OPTIONS, withRuntime } from './run-options.js';

export default defineCommand({
  name: 'init',
  describe: "init a run over a spec's tasks.md (the task ledger)",
  options: {
    ...RUN_OPTIONS,
    tasks: { type: 'string', demandOption: true, describe: "the spec's tasks.md" },
    'spec-name': { type: 'string', describe: 'the spec name (default: the folder holding tasks.md)' },
  },
  examples: [['$0 dispatch init --root R --tasks specs/a/tasks.md --run r1', '']],
  handler(args, ctx) {
    const result = withRuntime(args.root, ctx, (runtime) =>
      runtime.initRun({
        runId: args.run,
        tasksPath: resolve(ctx.cwd, args.tasks),
        ...(args.specName === undefined ? {} : { specName: args.specName }),
      }),
    );
    ctx.report(args, result, humanInit(result));
    return EXIT.OK;
  },
});
