import { resolve } from 'node:path';
import { defineCommand, EXIT } from '../command.js';
import { exportLedger, exportLines, formatAnchor } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'export',
  describe: 'write the ledger as JSON Lines (one canonical entry per line, chain order)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    out: { type: 'string', describe: 'file to write atomically (default: stdout)' },
  },
  handler(args, ctx) {
    if (args.out === undefined) {
      withLedger(args, ctx, { readonly: true }, (ledger) =>
        ledger.snapshot(() => {
          for (const line of exportLines(ledger)) ctx.out(line);
        }),
      );
      return EXIT.OK;
    }
    const path = resolve(ctx.cwd, args.out);
    const head = withLedger(args, ctx, { readonly: true }, (ledger) => exportLedger(ledger, path));
    ctx.report(args, { path, head }, `exported ${head.seq} entries to ${path}, head ${formatAnchor(head)}`);
    return EXIT.OK;
  },
});
