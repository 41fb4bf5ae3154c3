import { resolve } from 'node:path';
import { type CliContext, defineCommand, EXIT, type ExitCode } from '../command.js';
import { formatAnchor, parseAnchor, verifyLedger } from '../../kernel/ledger/index.js';
import { verifyPgChain } from '../../kernel/ledger/pg/pg-checks.js';
import { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { resolveRoot } from '../root-option.js';
import { type CheckpointArgs, CHECKPOINT_OPTIONS, checkpointLines, checkpointsFor } from './verify-checkpoints.js';
import { LEDGER_TARGET_OPTIONS, type LedgerTargetArgs, withLedger } from './target.js';

export default defineCommand({
  name: 'verify',
  describe: 'recompute the hash chain; exit 1 and name the first bad entry when it is broken',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    anchor: { type: 'string', describe: 'SEQ:HASH recorded earlier (`ledger head`): also catches a deleted tail' },
    ...CHECKPOINT_OPTIONS,
    store: {
      type: 'string',
      conflicts: ['ledger', 'anchor'],
      describe:
        "verify the chain in this PostgreSQL store instead (postgres://user@host/db; with --root, against the root's checkpoints)",
    },
  },
  async handler(args, ctx) {
    if (args.store !== undefined) return verifyPostgres(args.store, args, ctx);
    const anchor = args.anchor === undefined ? undefined : parseAnchor(args.anchor);
    const [result, checkpoints] = withLedger(
      args,
      ctx,
      { readonly: true },
      (ledger) => [verifyLedger(ledger, anchor ? { anchor } : {}), checkpointsFor(ledger, args, ctx)] as const,
    );
    const bad = result.first_bad;
    const lines = bad
      ? [
          `ledger BROKEN at ${bad.id ?? `#${bad.seq}`}: ${bad.problem}`,
          `  ${bad.message}`,
          `  last good: ${formatAnchor(result.head)}`,
        ]
      : [
          `${result.ok ? 'ledger intact' : 'chain intact'}: ${result.entries} entries, head ${formatAnchor(result.head)}`,
        ];
    for (const problem of result.schema_problems ?? [])
      lines.push(`schema ${problem.kind.toUpperCase()}: ${problem.message}`);
    const content = result.content;
    if (content) {
      lines.push(
        `content: ${content.blocks} blocks (${content.redacted_blocks} redacted), ${content.lists} list nodes, ${content.problem_count === 0 ? 'intact' : `${content.problem_count} problems`}`,
      );
      for (const problem of content.problems) lines.push(`content ${problem.kind.toUpperCase()}: ${problem.message}`);
    }
    ctx.report(args, { ...result, checkpoints }, [...lines, ...checkpointLines(checkpoints)]);
    return result.ok && checkpoints.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});

/** The chain in a PostgreSQL store, re-hashed end to end, and checked against the root's checkpoints. */
async function verifyPostgres(
  url: string,
  args: LedgerTargetArgs & CheckpointArgs & { json?: boolean | undefined },
  ctx: CliContext,
): Promise<ExitCode> {
  const store = await PgLedger.open(url);
  try {
    const root = args.root === undefined && !ctx.defaultRoot ? null : resolveRoot(args.root, ctx);
    const { result, checkpoints } = await verifyPgChain(store, {
      root,
      files: (args.checkpoint ?? []).map((f) => resolve(ctx.cwd, f)),
      keyFiles: (args.checkpointKey ?? []).map((f) => resolve(ctx.cwd, f)),
    });
    const bad = result.first_bad;
    const lines = bad
      ? [`ledger BROKEN at ${bad.id}: ${bad.problem}`, `  ${bad.message}`, `  last good: ${formatAnchor(result.head)}`]
      : [
          `${result.ok ? 'ledger intact' : 'chain intact'} (postgres): ${result.entries} entries, head ${formatAnchor(result.head)}`,
        ];
    const content = result.content;
    if (content)
      lines.push(
        `content: ${content.blocks} blocks (${content.redacted_blocks} redacted), ${content.lists} list nodes, ${result.content_problems.length === 0 ? 'intact' : `${result.content_problems.length} problems`}`,
      );
    for (const problem of result.content_problems) lines.push(`content: ${problem}`);
    ctx.report(args, { ...result, checkpoints }, [...lines, ...checkpointLines(checkpoints)]);
    return result.ok && checkpoints.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  } finally {
    await store.close();
  }
}
