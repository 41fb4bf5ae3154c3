import { resolve } from 'node:path';
import { defineCommand } from '../command.js';
import { exportLedger, exportLines, formatAnchor } from '../../kernel/ledger/index.js';
import { withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface ExportArgs extends LedgerTargetArgs {
  out?: string | undefined;
}

export default defineCommand<ExportArgs>({
  command: 'export',
  describe: 'write the ledger as JSON Lines (one canonical entry per line, chain order)',
  builder: (y) =>
    withLedgerTarget(y).option('out', { type: 'string', describe: 'file to write atomically (default: stdout)' }),
  run(args, ctx) {
    if (args.out === undefined) {
      withLedger(args, ctx, { readonly: true }, (ledger) =>
        ledger.snapshot(() => {
          for (const line of exportLines(ledger)) ctx.out(line);
        }),
      );
      return 0;
    }
    const path = resolve(ctx.cwd, args.out);
    const head = withLedger(args, ctx, { readonly: true }, (ledger) => exportLedger(ledger, path));
    ctx.report(args, { path, head }, `exported ${head.seq} entries to ${path}, head ${formatAnchor(head)}`);
    return 0;
  },
});
