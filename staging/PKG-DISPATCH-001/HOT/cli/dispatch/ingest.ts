import { CpError } from '#kernel/errors.js';
import { defineCommand, EXIT } from '#cli/command.js';
import { humanIngest } from '../../dispatch/human.js';
import { IMPLEMENTER_OUTCOMES, REVIEWER_ASSESSMENTS } from '../../dispatch/stall.js';
import { RUN_OPTIONS, withRuntime } from './run-options.js';

export default defineCommand({
  name: 'ingest',
  describe: "ingest an implementer's outcome or a reviewer's assessment of a task",
  options: {
    ...RUN_OPTIONS,
    task: { type: 'string', demandOption: true, describe: 'the task id, e.g. 2.1' },
    outcome: { type: 'string', choices: IMPLEMENTER_OUTCOMES, describe: 'the implementer outcome' },
    assessment: { type: 'string', choices: REVIEWER_ASSESSMENTS, describe: 'the reviewer assessment' },
    summary: { type: 'string', describe: 'a one-paragraph summary of the output' },
    blocker: { type: 'string', array: true, describe: 'a blocker (repeatable)' },
    'required-fix': { type: 'string', array: true, describe: 'a fix the reviewer requires (repeatable)' },
  },
  check(args) {
    if ((args.outcome === undefined) === (args.assessment === undefined)) {
      throw new CpError('ERR_USAGE', 'dispatch ingest needs exactly one of --outcome or --assessment', {
        hint: '--outcome completed|blocked|failed for an implementer, --assessment approved|needs_changes|blocked for a reviewer',
      });
    }
  },
  examples: [['$0 dispatch ingest --root R --run r1 --task 2.1 --outcome blocked --summary "fixture missing"', '']],
  handler(args, ctx) {
    const output =
      args.outcome !== undefined
        ? { role: 'implementer', outcome: args.outcome, summary: args.summary, blockers: args.blocker }
        : {
            role: 'reviewer',
            assessment: args.assessment,
            summary: args.summary,
            blockers: args.blocker,
            required_fixes: args.requiredFix,
          };
    const result = withRuntime(args.root, ctx, (runtime) =>
      runtime.ingestOutput({ runId: args.run, taskId: args.task, output: dropUndefined(output) }),
    );
    ctx.report(args, result, humanIngest(result));
    return EXIT.OK;
  },
});

function dropUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined));
}
