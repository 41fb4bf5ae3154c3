import { defineCommand, EXIT } from '#cli/command.js';
import { DISPATCH_ROLES } from '../../dispatch/compiler-port.js';
import { humanCompile } from '../../dispatch/human.js';
import { RUN_OPTIONS, withRuntime } from './run-options.js';

export default defineCommand({
  name: 'compile',
  describe: "compile a task's prompt for a role",
  options: {
    ...RUN_OPTIONS,
    task: { type: 'string', demandOption: true, describe: 'the task id, e.g. 2.1' },
    role: { type: 'string', demandOption: true, choices: DISPATCH_ROLES, describe: 'the prompt role' },
  },
  examples: [['$0 dispatch compile --root R --run r1 --task 2.1 --role executor --json', '']],
  handler(args, ctx) {
    const result = withRuntime(args.root, ctx, (runtime) =>
      runtime.compilePrompt({ runId: args.run, taskId: args.task, role: args.role }),
    );
    ctx.report(args, result, humanCompile(result));
    return EXIT.OK;
  },
});
