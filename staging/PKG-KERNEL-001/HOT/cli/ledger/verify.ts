import { defineCommand, EXIT } from '../command.js';
import { formatAnchor, parseAnchor, verifyLedger } from '../../kernel/ledger/index.js';
import { CHECKPOINT_OPTIONS, checkpointLines, checkpointsFor } from './verify-checkpoints.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'verify',
  describe: 'recompute the hash chain; exit 1 and name the first bad entry when it is broken',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    anchor: { type: 'string', describe: 'SEQ:HASH recorded earlier (`ledger head`): also catches a deleted tail' },
    ...CHECKPOINT_OPTIONS,
  },
  handler(args, ctx) {
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
