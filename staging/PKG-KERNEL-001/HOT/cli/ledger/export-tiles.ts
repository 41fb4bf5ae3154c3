import { resolve } from 'node:path';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';
import { exportTiles } from '../../kernel/ledger/merkle/export-tiles.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { rootSigner } from './proof-key.js';

export default defineCommand({
  name: 'export-tiles',
  describe: 'write the ledger as static C2SP tlog-tiles files: DIR/checkpoint (signed note), DIR/vkey, DIR/tile/…',
  positionals: { dir: { type: 'string', demandOption: true, describe: 'the directory to write (created if missing)' } },
  options: rootOption('the cplane root (its ledger and root key)'),
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const dir = resolve(ctx.cwd, args.dir);
    const signer = rootSigner(root);
    const ledger = Ledger.open(ledgerPathForRoot(root));
    try {
      ledger.ensureTree();
      const done = exportTiles(ledger, dir, signer);
      ctx.report(args, { dir, ...done }, [
        `exported the tree of ${done.size} entries: ${done.tiles} tiles and bundles (${done.unchanged} unchanged) under ${dir}`,
        `  vkey: ${done.vkey}`,
      ]);
      return EXIT.OK;
    } finally {
      ledger.close();
    }
  },
});
