import { defineCommand } from '../command.js';
import { entryLine, withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface TailArgs extends LedgerTargetArgs {
  limit: number;
}

export default defineCommand<TailArgs>({
  command: 'tail',
  describe: 'the newest entries, in chain order',
  builder: (y) => withLedgerTarget(y).option('limit', { alias: 'n', type: 'number', default: 10 }),
  run(args, ctx) {
    const entries = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query({ limit: args.limit })).reverse();
    ctx.report(args, entries, entries.map(entryLine));
    return 0;
  },
});
