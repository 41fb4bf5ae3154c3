import { defineCommand } from '../command.js';
import { DEFAULT_ORPHAN_TIMEOUT_MS, listOrphans } from '../../kernel/ledger/index.js';
import { entryLine, withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface OrphansArgs extends LedgerTargetArgs {
  'timeout-ms': number;
}

export default defineCommand<OrphansArgs>({
  command: 'orphans',
  describe: 'DISPATCH markers that no EXCHANGE links to after the timeout (sends lost in a crash)',
  builder: (y) => withLedgerTarget(y)
    .option('timeout-ms', { type: 'number', default: DEFAULT_ORPHAN_TIMEOUT_MS, describe: 'how long a DISPATCH may wait for its EXCHANGE' }),
  run(args, ctx) {
    const orphans = withLedger(args, ctx, { readonly: true }, (ledger) => listOrphans(ledger, { timeoutMs: args.timeoutMs }));
    ctx.report(args, orphans, orphans.length === 0 ? 'no orphaned dispatches' : orphans.map(entryLine));
    return 0;
  },
});
