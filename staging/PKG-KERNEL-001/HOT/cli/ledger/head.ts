import { defineCommand, EXIT } from '../command.js';
import { formatAnchor } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'head',
  describe: 'print the anchor SEQ:HASH of the newest entry (pass it to `verify --anchor` later)',
  options: { ...LEDGER_TARGET_OPTIONS, ...storeOption('the head of the chain') },
  async handler(args, ctx) {
    // Only an explicit --store: the root's SQLite file still records this host's governance (config, installs).
    const head =
      args.store === undefined
        ? withLedger(args, ctx, { readonly: true }, (ledger) => ledger.head())
        : await withPgLedger(args.store, (store) => store.headAnchor());
    ctx.report(args, head, formatAnchor(head));
    return EXIT.OK;
  },
});
