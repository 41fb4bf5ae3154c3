import { defineCommand, EXIT } from '../command.js';
import { formatAnchor, parseAnchor, verifyLedger } from '../../kernel/ledger/index.js';
import { checkpointLines, checkpointOptions, checkpointsFor, type CheckpointArgs } from './verify-checkpoints.js';
import { withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface VerifyArgs extends LedgerTargetArgs, CheckpointArgs {
  anchor?: string | undefined;
}

export default defineCommand<VerifyArgs>({
  command: 'verify',
  describe: 'recompute the hash chain; exit 1 and name the first bad entry when it is broken',
  builder: (y) =>
    checkpointOptions(
      withLedgerTarget(y).option('anchor', {
        type: 'string',
        describe: 'SEQ:HASH recorded earlier (`ledger head`): also catches a deleted tail',
      }),
    ),
  run(args, ctx) {
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
    ctx.report(args, { ...result, checkpoints }, [...lines, ...checkpointLines(checkpoints)]);
    return result.ok && checkpoints.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});
