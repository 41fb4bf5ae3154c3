import { resolve } from 'node:path';
import { defineCommand } from '../command.js';
import { formatAnchor, parseAnchor, parseExport, readExportLines } from '../../kernel/ledger/index.js';
import { withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface ImportArgs extends LedgerTargetArgs {
  from: string;
  anchor?: string | undefined;
}

export default defineCommand<ImportArgs>({
  command: 'import',
  describe: 'load a JSON Lines export into an empty ledger after re-verifying every entry (all or nothing)',
  builder: (y) =>
    withLedgerTarget(y)
      .option('from', { type: 'string', demandOption: true, describe: 'the export file' })
      .option('anchor', { type: 'string', describe: 'SEQ:HASH the export must reach' }),
  run(args, ctx) {
    const anchor = args.anchor === undefined ? undefined : parseAnchor(args.anchor);
    const path = resolve(ctx.cwd, args.from);
    // Verified before the ledger is opened: a tampered file creates and writes nothing.
    const entries = parseExport(readExportLines(path), anchor ? { anchor, source: path } : { source: path });
    const head = withLedger(args, ctx, { create: true }, (ledger) => ledger.importEntries(entries));
    ctx.report(
      args,
      { imported: entries.length, head },
      `imported ${entries.length} entries, head ${formatAnchor(head)}`,
    );
    return 0;
  },
});
