import { defineCommand, EXIT } from '../command.js';
import { intOption, MAX_LIST_LIMIT } from '../option-values.js';
import { entryLine, LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'tail',
  describe: 'the newest entries, in chain order',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('the newest entries'),
    limit: { alias: 'n', type: 'number', default: 10 },
  },
  async handler(args, ctx) {
    const limit = intOption('limit', args.limit, 1, MAX_LIST_LIMIT);
    const newest =
      args.store === undefined
        ? withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query({ limit }))
        : await withPgLedger(args.store, (store) => store.query({ limit }));
    const entries = newest.reverse();
    ctx.report(args, entries, entries.map(entryLine));
    return EXIT.OK;
  },
});
