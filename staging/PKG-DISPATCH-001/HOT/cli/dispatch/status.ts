import { defineCommand, EXIT } from '#cli/command.js';
import { humanStatus } from '../../dispatch/human.js';
import { RUN_OPTIONS, withRuntime } from './run-options.js';

export default defineCommand({
  name: 'status',
  describe: "a run's tasks, their progress, and the stalled ones (exit 1 when any task is stalled)",
  options: RUN_OPTIONS,
  handler(args, ctx) {
    const result = withRuntime(args.root, ctx, (runtime) => runtime.status({ runId: args.run }));
    ctx.report(args, result, humanStatus(result));
    return result.stalled_task_ids.length > 0 ? EXIT.CHECK_FAILED : EXIT.OK;
  },
});
