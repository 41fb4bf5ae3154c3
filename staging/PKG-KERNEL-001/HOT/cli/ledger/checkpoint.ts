import { resolve } from 'node:path';
import { writeFileAtomic } from '../../kernel/atomic.js';
import { CpError, show } from '../../kernel/errors.js';
import { checkpointHead, Ledger, ledgerPathForRoot, writeRootCheckpoint } from '../../kernel/ledger/index.js';
import { writeRootCheckpointOf } from '../../kernel/ledger/checkpoint-store.js';
import { refuseLedgerAsOutput } from '../../kernel/ledger/file-check.js';
import { pgCheckpointHead } from '../../kernel/ledger/pg/pg-checks.js';
import { readTrustedRootKey, rootKeyPath } from '../../kernel/signing/index.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { withPgLedger } from './target.js';

type Written = NonNullable<ReturnType<typeof writeRootCheckpoint>>;

const emptyLedger = (root: string): CpError =>
  new CpError('ERR_CHECKPOINT_EMPTY_LEDGER', `the ledger of ${show(root)} has no entries to checkpoint`, {
    hint: "a root's ledger starts with ROOT_CREATED; restore it from a backup",
    details: { root },
  });

export default defineCommand({
  name: 'checkpoint',
  describe: 'sign the ledger head with the root key now (HOT/ledger/checkpoints/); --out keeps a copy elsewhere',
  options: {
    ...rootOption('the cplane root'),
    out: {
      type: 'string',
      describe: 'also write the checkpoint to this file (keep it off the machine: it proves every entry up to it)',
    },
    store: {
      type: 'string',
      describe:
        "sign the head of the chain in this PostgreSQL store instead (postgres://user@host/db, no password): the chain the root's gateway records into",
    },
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const out = args.out === undefined ? null : resolve(ctx.cwd, args.out);
    // Before signing: a copy that would land on the ledger is refused with nothing written.
    if (out) refuseLedgerAsOutput(ledgerPathForRoot(root), out, '--out');
    if (readTrustedRootKey(root) === null) {
      throw new CpError(
        'ERR_CHECKPOINT_NO_ROOT_KEY',
        `root ${show(root)} has no root key (${show(rootKeyPath(root))}): it was bootstrapped before checkpoints`,
        {
          hint: 'bootstrap a new root to get checkpoints; until then keep `cplane ledger head` anchors and pass them to `ledger verify --anchor`',
          details: { root },
        },
      );
    }
    // Read-only: the checkpoint signs what is there; it never appends.
    const written: Written =
      args.store === undefined
        ? signFile(root)
        : await withPgLedger(args.store, async (store) => {
            const head = await pgCheckpointHead(store);
            if (head === null) throw emptyLedger(root);
            return writeRootCheckpointOf(root, () => head) as Written;
          });
    if (out) writeFileAtomic(out, `${JSON.stringify(written.checkpoint)}\n`);
    const cp = written.checkpoint;
    ctx.report(args, { ...written, out }, [
      `checkpoint #${cp.seq} ${cp.entry_id} ${cp.hash} signed by ${cp.key_id} at ${cp.time}${written.written ? '' : ' (already there)'}`,
      `  ${written.path}`,
      ...(out ? [`  copy: ${out} (keep it elsewhere; \`ledger verify --checkpoint ${out}\`)`] : []),
    ]);
    return EXIT.OK;
  },
});

function signFile(root: string): Written {
  const ledger = Ledger.open(ledgerPathForRoot(root), { readonly: true });
  try {
    if (checkpointHead(ledger) === null) throw emptyLedger(root);
    return writeRootCheckpoint(root, ledger) as Written;
  } finally {
    ledger.close();
  }
}
