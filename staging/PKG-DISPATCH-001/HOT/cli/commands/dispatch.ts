import { resolve } from 'node:path';
import { defineCommand, EXIT, type CliContext } from '#cli/command.js';
import { resolveRoot } from '#cli/root-option.js';
import { CpError } from '#kernel/errors.js';
import { DISPATCH_ROLES } from '../../dispatch/compiler-port.js';
import { DispatchRuntime } from '../../dispatch/runtime.js';
import { IMPLEMENTER_OUTCOMES, REVIEWER_ASSESSMENTS } from '../../dispatch/stall.js';
import { humanCompile, humanIngest, humanInit, humanStatus } from '../../dispatch/human.js';

const ACTIONS = ['init', 'compile', 'ingest', 'status'] as const;
type Action = (typeof ACTIONS)[number];

interface DispatchArgs {
  json?: boolean;
  action: Action;
  root?: string;
  run: string;
  tasks?: string;
  specName?: string;
  task?: string;
  role?: string;
  outcome?: string;
  assessment?: string;
  summary?: string;
  blocker?: string[];
  requiredFix?: string[];
}

/** Which options each action needs; checked before anything is opened so a usage error writes nothing. */
const REQUIRED: Readonly<Record<Action, readonly (keyof DispatchArgs)[]>> = {
  init: ['tasks'],
  compile: ['task', 'role'],
  ingest: ['task'],
  status: [],
};

export default defineCommand<DispatchArgs>({
  command: 'dispatch <action>',
  describe:
    "dispatch runtime over a spec's tasks.md: init | compile | ingest | status (task and progress ledgers, stall detection)",
  builder: (y) =>
    y
      .positional('action', {
        type: 'string',
        choices: [...ACTIONS],
        demandOption: true,
        describe: 'init a run, compile a task prompt, ingest an outcome, or show status',
      })
      .option('root', { type: 'string', describe: 'the cplane root (state in ROOT/HOT/registries/dispatch.sqlite)' })
      .option('run', { type: 'string', demandOption: true, describe: 'the run id' })
      .option('tasks', { type: 'string', describe: "init: the spec's tasks.md" })
      .option('spec-name', { type: 'string', describe: 'init: the spec name (default: the folder holding tasks.md)' })
      .option('task', { type: 'string', describe: 'compile/ingest: the task id, e.g. 2.1' })
      .option('role', { type: 'string', choices: [...DISPATCH_ROLES], describe: 'compile: the prompt role' })
      .option('outcome', {
        type: 'string',
        choices: [...IMPLEMENTER_OUTCOMES],
        describe: 'ingest: the implementer outcome',
      })
      .option('assessment', {
        type: 'string',
        choices: [...REVIEWER_ASSESSMENTS],
        describe: 'ingest: the reviewer assessment',
      })
      .option('summary', { type: 'string', describe: 'ingest: a one-paragraph summary of the output' })
      .option('blocker', { type: 'string', array: true, describe: 'ingest: a blocker (repeatable)' })
      .option('required-fix', {
        type: 'string',
        array: true,
        describe: 'ingest: a fix the reviewer requires (repeatable)',
      })
      .example('$0 dispatch init --root R --tasks specs/a/tasks.md --run r1', '')
      .example('$0 dispatch compile --root R --run r1 --task 2.1 --role executor --json', '')
      .example(
        '$0 dispatch ingest --root R --run r1 --task 2.1 --outcome blocked --summary "fixture missing"',
        '',
      ) as never,
  run(args, ctx) {
    checkUsage(args);
    const runtime = new DispatchRuntime({ root: resolveRoot(args.root, ctx) });
    try {
      return runAction(runtime, args, ctx);
    } finally {
      runtime.close();
    }
  },
});

function checkUsage(args: DispatchArgs): void {
  const missing = REQUIRED[args.action].filter((name) => args[name] === undefined);
  if (missing.length > 0) {
    throw new CpError('ERR_USAGE', `dispatch ${args.action} needs ${missing.map((name) => `--${name}`).join(', ')}`, {
      hint: 'run cplane dispatch --help',
    });
  }
  if (args.action === 'ingest' && (args.outcome === undefined) === (args.assessment === undefined)) {
    throw new CpError('ERR_USAGE', 'dispatch ingest needs exactly one of --outcome or --assessment', {
      hint: '--outcome completed|blocked|failed for an implementer, --assessment approved|needs_changes|blocked for a reviewer',
    });
  }
}

function runAction(runtime: DispatchRuntime, args: DispatchArgs, ctx: CliContext): number {
  switch (args.action) {
    case 'init': {
      const result = runtime.initRun({
        runId: args.run,
        tasksPath: resolve(ctx.cwd, args.tasks as string),
        ...(args.specName === undefined ? {} : { specName: args.specName }),
      });
      ctx.report(args, result, humanInit(result));
      return EXIT.OK;
    }
    case 'compile': {
      const result = runtime.compilePrompt({ runId: args.run, taskId: args.task as string, role: args.role as string });
      ctx.report(args, result, humanCompile(result));
      return EXIT.OK;
    }
    case 'ingest': {
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
      const result = runtime.ingestOutput({
        runId: args.run,
        taskId: args.task as string,
        output: dropUndefined(output),
      });
      ctx.report(args, result, humanIngest(result));
      return EXIT.OK;
    }
    case 'status': {
      const result = runtime.status({ runId: args.run });
      ctx.report(args, result, humanStatus(result));
      return result.stalled_task_ids.length > 0 ? EXIT.CHECK_FAILED : EXIT.OK;
    }
  }
}

function dropUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined));
}
