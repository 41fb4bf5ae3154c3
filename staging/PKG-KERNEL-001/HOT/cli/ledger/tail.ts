import { defineCommand } from '../command.js';
import { intOption, MAX_LIST_LIMIT } from '../option-values.js';
import { entryLine, withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface TailArgs extends LedgerTargetArgs {
  limit: number;
}

export default defineCommand<TailArgs>({
  command: 'tail',
  describe: 'the newest entries, in chain order',
  builder: (y) => withLedgerTarget(y).option('limit', { alias: 'n', type: 'number', default: 10 }),
  run(args, ctx) {
    const limit = intOption('limit', args.limit, 1, MAX_LIST_LIMIT) as number;
    const entries = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query({ limit })).reverse();
    ctx.report(args, entries, entries.map(entryLine));
    return 0;
  },
});
