import { resolve } from 'node:path';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';
import { exportPgTiles, exportTiles, type TilesExport } from '../../kernel/ledger/merkle/export-tiles.js';
import type { NoteSigner } from '../../kernel/ledger/merkle/note.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { rootSigner } from './proof-key.js';
import { storeOption, withPgLedger } from './target.js';

export default defineCommand({
  name: 'export-tiles',
  describe: 'write the ledger as static C2SP tlog-tiles files: DIR/checkpoint (signed note), DIR/vkey, DIR/tile/…',
  positionals: { dir: { type: 'string', demandOption: true, describe: 'the directory to write (created if missing)' } },
  options: { ...rootOption('the cplane root (its ledger and root key)'), ...storeOption('export the chain') },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const dir = resolve(ctx.cwd, args.dir);
    const signer = rootSigner(root);
    const done =
      args.store !== undefined
        ? await withPgLedger(args.store, (store) => exportPgTiles(store, dir, signer))
        : exportSqlite(ledgerPathForRoot(root), dir, signer);
    ctx.report(args, { dir, ...done }, [
      `exported the tree of ${done.size} entries: ${done.tiles} tiles and bundles (${done.unchanged} unchanged) under ${dir}`,
      `  vkey: ${done.vkey}`,
    ]);
    return EXIT.OK;
  },
});

function exportSqlite(file: string, dir: string, signer: (origin: string) => NoteSigner): TilesExport {
  const ledger = Ledger.open(file);
  try {
    // A ledger from before trees gains its tree here, once, from its chain.
    ledger.ensureTree();
    return exportTiles(ledger, dir, signer);
  } finally {
    ledger.close();
  }
}
