import { resolve } from 'node:path';
import { defineCommand, EXIT } from '../command.js';
import { canonicalJson } from '../../kernel/canonical.js';
import { exportLedger, exportLines, formatAnchor, rowToEntry } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'export',
  describe: 'write the ledger as JSON Lines (one canonical entry per line, chain order)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    out: { type: 'string', describe: 'file to write atomically (default: stdout)' },
    text: {
      type: 'boolean',
      conflicts: 'out',
      describe: 'each entry as `ledger query` shows it, prompt and response text inline (for reading; not importable)',
    },
  },
  handler(args, ctx) {
    if (args.text === true) {
      withLedger(args, ctx, { readonly: true }, (ledger) =>
        ledger.snapshot(() => {
          for (const row of ledger.rows()) ctx.out(canonicalJson(ledger.withContent(rowToEntry(row))));
        }),
      );
      return EXIT.OK;
    }
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
