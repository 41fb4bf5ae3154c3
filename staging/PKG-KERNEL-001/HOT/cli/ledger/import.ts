import { resolve } from 'node:path';
import { defineCommand, EXIT } from '../command.js';
import { canonicalJson } from '../../kernel/canonical.js';
import { CpError } from '../../kernel/errors.js';
import {
  type Anchor,
  entryIdValue,
  GENESIS_HASH,
  idDigits,
  type ImportContent,
  type LedgerEntry,
  formatAnchor,
  parseAnchor,
  parseExportWithContent,
  readExportLines,
} from '../../kernel/ledger/index.js';
import type { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { refuseIllFormed } from '../../kernel/ledger/validate.js';
import { LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'import',
  describe: 'load a JSON Lines export into an empty ledger after re-verifying every entry (all or nothing)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('into an empty chain'),
    from: { type: 'string', demandOption: true, describe: 'the export file' },
    anchor: { type: 'string', describe: 'SEQ:HASH the export must reach' },
  },
  async handler(args, ctx) {
    const anchor = args.anchor === undefined ? undefined : parseAnchor(args.anchor);
    const path = resolve(ctx.cwd, args.from);
    // Verified before the ledger is opened: a tampered file creates and writes nothing.
    const { entries, content } = parseExportWithContent(
      readExportLines(path),
      anchor ? { anchor, source: path } : { source: path },
    );
    const head =
      args.store === undefined
        ? withLedger(args, ctx, { create: true }, (ledger) => ledger.importEntries(entries, content))
        : await withPgLedger(args.store, (store) => importIntoStore(store, entries, content), { create: true });
    ctx.report(
      args,
      { imported: entries.length, head },
      `imported ${entries.length} entries, head ${formatAnchor(head)}`,
    );
    return EXIT.OK;
  },
});

/** All or nothing, into an empty chain: the rows, content first, in one transaction that checks the chain is empty. */
async function importIntoStore(store: PgLedger, entries: LedgerEntry[], content: ImportContent): Promise<Anchor> {
  for (const [index, entry] of entries.entries())
    refuseIllFormed(entry, `imported entry ${index + 1} (${entry.id})`, index + 1);
  const rows = entries.map((entry, index) => ({
    seq: index + 1,
    id: entry.id,
    event_type: entry.event_type,
    submission_id: entry.submission_id,
    decision: entry.decision,
    reason: entry.reason,
    metadata: canonicalJson(entry.metadata),
    timestamp: entry.timestamp,
    previous_hash: entry.previous_hash,
    entry_hash: entry.entry_hash,
  }));
  if (!(await store.appendRows({ seq: 0, hash: GENESIS_HASH }, rows, content.blocks, content.lists))) {
    const head = await store.headAnchor();
    throw new CpError(
      'ERR_LEDGER_IMPORT_NOT_EMPTY',
      `the store already has ${head.seq} entries; import only fills an empty chain`,
      {
        hint: 'import into a new database; merging two chains would fork history',
        details: { entries: head.seq },
      },
    );
  }
  // Later appends continue from the last imported id, as on SQLite.
  const last = entries[entries.length - 1];
  if (last !== undefined) await store.setIdStart(idDigits(entryIdValue(last.id) - entries.length));
  return store.headAnchor();
}
