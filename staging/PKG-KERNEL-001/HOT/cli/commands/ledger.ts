import { defineGroup } from '../command.js';
import append from '../ledger/append.js';
import checkpoint from '../ledger/checkpoint.js';
import checkpoints from '../ledger/checkpoints.js';
import exportCommand from '../ledger/export.js';
import head from '../ledger/head.js';
import importCommand from '../ledger/import.js';
import migrate from '../ledger/migrate.js';
import orphans from '../ledger/orphans.js';
import query from '../ledger/query.js';
import redact from '../ledger/redact.js';
import tail from '../ledger/tail.js';
import verify from '../ledger/verify.js';
import exportTiles from '../ledger/export-tiles.js';
import prove from '../ledger/prove.js';
import verifyProof from '../ledger/verify-proof.js';

export default defineGroup({
  name: 'ledger',
  describe:
    'the kernel ledger: append, verify, query, tail, head, export, import, orphans, checkpoint(s), redact, migrate, prove, verify-proof, export-tiles',
  subcommands: [
    append,
    verify,
    query,
    tail,
    head,
    exportCommand,
    importCommand,
    orphans,
    checkpoint,
    checkpoints,
    redact,
    migrate,
    prove,
    verifyProof,
    exportTiles,
  ],
});
