import { defineCommand } from '../command.js';
import { formatAnchor } from '../../kernel/ledger/index.js';
import { withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

export default defineCommand<LedgerTargetArgs>({
  command: 'head',
  describe: 'print the anchor SEQ:HASH of the newest entry (pass it to `verify --anchor` later)',
  builder: (y) => withLedgerTarget(y),
  run(args, ctx) {
    const head = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.head());
    ctx.report(args, head, formatAnchor(head));
    return 0;
  },
});
