import { defineCommand, EXIT } from '../command.js';
import { intOption, MAX_LIST_LIMIT } from '../option-values.js';
import { entryLine, LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'tail',
  describe: 'the newest entries, in chain order',
  options: { ...LEDGER_TARGET_OPTIONS, limit: { alias: 'n', type: 'number', default: 10 } },
  handler(args, ctx) {
    const limit = intOption('limit', args.limit, 1, MAX_LIST_LIMIT);
    const entries = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query({ limit })).reverse();
    ctx.report(args, entries, entries.map(entryLine));
    return EXIT.OK;
  },
});
