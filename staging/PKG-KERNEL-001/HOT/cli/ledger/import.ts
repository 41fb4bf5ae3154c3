import { resolve } from 'node:path';
import { defineCommand, EXIT } from '../command.js';
import { formatAnchor, parseAnchor, parseExportWithContent, readExportLines } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'import',
  describe: 'load a JSON Lines export into an empty ledger after re-verifying every entry (all or nothing)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    from: { type: 'string', demandOption: true, describe: 'the export file' },
    anchor: { type: 'string', describe: 'SEQ:HASH the export must reach' },
  },
  handler(args, ctx) {
    const anchor = args.anchor === undefined ? undefined : parseAnchor(args.anchor);
    const path = resolve(ctx.cwd, args.from);
    // Verified before the ledger is opened: a tampered file creates and writes nothing.
    const { entries, content } = parseExportWithContent(
      readExportLines(path),
      anchor ? { anchor, source: path } : { source: path },
    );
    const head = withLedger(args, ctx, { create: true }, (ledger) => ledger.importEntries(entries, content));
    ctx.report(
      args,
      { imported: entries.length, head },
      `imported ${entries.length} entries, head ${formatAnchor(head)}`,
    );
    return EXIT.OK;
  },
});
