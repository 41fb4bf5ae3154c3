import { defineCommand, EXIT } from '../command.js';
import { formatAnchor } from '../../kernel/ledger/index.js';
import { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { LEDGER_TARGET_OPTIONS, withLedger } from './target.js';

export default defineCommand({
  name: 'head',
  describe: 'print the anchor SEQ:HASH of the newest entry (pass it to `verify --anchor` later)',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    store: {
      type: 'string',
      conflicts: ['ledger'],
      describe: 'the head of the chain in this PostgreSQL store instead (postgres://user@host/db, no password)',
    },
  },
  async handler(args, ctx) {
    // Only an explicit --store: the root's SQLite file still records this host's governance (config, installs).
    const head =
      args.store === undefined
        ? withLedger(args, ctx, { readonly: true }, (ledger) => ledger.head())
        : await pgHead(args.store);
    ctx.report(args, head, formatAnchor(head));
    return EXIT.OK;
  },
});

async function pgHead(url: string): Promise<{ seq: number; hash: string }> {
  const store = await PgLedger.open(url, { poolSize: 1 });
  try {
    return await store.headAnchor();
  } finally {
    await store.close();
  }
}
