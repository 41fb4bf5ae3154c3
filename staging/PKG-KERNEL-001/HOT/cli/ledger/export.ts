import { resolve } from 'node:path';
import { defineCommand, EXIT } from '../command.js';
import { canonicalJson } from '../../kernel/canonical.js';
import { PRIVATE_FILE_MODE, writeFileAtomicWithAsync } from '../../kernel/atomic.js';
import { type Anchor, exportLedger, exportLines, formatAnchor, rowToEntry } from '../../kernel/ledger/index.js';
import type { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import type { CliContext } from '../command.js';
import { LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'export',
  describe: 'write the ledger as JSON Lines (one canonical entry per line, chain order)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('the chain'),
    out: { type: 'string', describe: 'file to write atomically (default: stdout)' },
    text: {
      type: 'boolean',
      conflicts: 'out',
      describe: 'each entry as `ledger query` shows it, prompt and response text inline (for reading; not importable)',
    },
  },
  async handler(args, ctx) {
    if (args.store !== undefined) {
      const out = args.out === undefined ? undefined : resolve(ctx.cwd, args.out);
      const head = await withPgLedger(args.store, (store) => exportStore(store, ctx, out, args.text === true));
      if (out !== undefined)
        ctx.report(args, { path: out, head }, `exported ${head.seq} entries to ${out}, head ${formatAnchor(head)}`);
      return EXIT.OK;
    }
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

/** The chain of a PostgreSQL store up to its head when the export began, as the file's export writes it. */
async function exportStore(store: PgLedger, ctx: CliContext, out: string | undefined, text: boolean): Promise<Anchor> {
  if (text) {
    const head = await store.headAnchor();
    for await (const row of store.rows()) {
      if (row.seq > head.seq) break;
      ctx.out(canonicalJson(await store.readEntry(row)));
    }
    return head;
  }
  // The head of the export's own snapshot, told before its first line.
  let head: Anchor = { seq: 0, hash: '' };
  const lines = () =>
    store.exportLines((at) => {
      head = at;
    });
  if (out === undefined) {
    for await (const line of lines()) ctx.out(line);
    return head;
  }
  return writeFileAtomicWithAsync(
    out,
    async (write) => {
      let buffer = '';
      for await (const line of lines()) {
        buffer += `${line}\n`;
        if (buffer.length > 1 << 20) {
          write(buffer);
          buffer = '';
        }
      }
      write(buffer);
      return head;
    },
    { mode: PRIVATE_FILE_MODE },
  );
}
