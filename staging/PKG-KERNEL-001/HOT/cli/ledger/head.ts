import { defineCommand, EXIT } from '../command.js';
import { formatAnchor } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'head',
  describe: 'print the anchor SEQ:HASH of the newest entry (pass it to `verify --anchor` later)',
  options: LEDGER_TARGET_OPTIONS,
  handler(args, ctx) {
    const head = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.head());
    ctx.report(args, head, formatAnchor(head));
    return EXIT.OK;
  },
});
