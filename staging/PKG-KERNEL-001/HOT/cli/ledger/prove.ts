import { resolve } from 'node:path';
import { writeFileAtomic } from '../../kernel/atomic.js';
import { readTextBounded } from '../../kernel/bounded-read.js';
import { CpError } from '../../kernel/errors.js';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';
import {
  type ConsistencyProofFile,
  consistencyProof,
  type InclusionProofFile,
  inclusionProof,
  proveConsistency,
  proveInclusion,
  type TreeRef,
} from '../../kernel/ledger/merkle/ledger-proofs.js';
import { MAX_NOTE_BYTES, type NoteSigner } from '../../kernel/ledger/merkle/note.js';
import { PgTreeSnapshot } from '../../kernel/ledger/merkle/pg-tree.js';
import type { PgLedger } from '../../kernel/ledger/pg/pg-ledger.js';
import { refuseLedgerAsOutput } from '../../kernel/ledger/file-check.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { rootSigner } from './proof-key.js';
import { storeOption, withPgLedger } from './target.js';

export default defineCommand({
  name: 'prove',
  describe:
    'write a proof anyone can check with the public key alone: --entry ID (inclusion in a signed tree) or --from OLD [--to NEW] (consistency of two signed trees)',
  options: {
    ...rootOption('the cplane root (its ledger and root key)'),
    entry: { type: 'string', describe: 'the entry id to prove (LED-…)', conflicts: ['from', 'to'] },
    checkpoint: {
      type: 'string',
      describe: 'with --entry: prove against this checkpoint note (its tree size) instead of a fresh one of the head',
    },
    from: { type: 'string', describe: 'the older tree: a size, or a checkpoint note file' },
    to: { type: 'string', describe: 'the newer tree: a size, or a checkpoint note file (default: the head)' },
    out: { type: 'string', describe: 'write the proof to this file (default: standard output)' },
    ...storeOption('prove from the chain'),
  },
  async handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const out = args.out === undefined ? null : resolve(ctx.cwd, args.out);
    if (out) refuseLedgerAsOutput(ledgerPathForRoot(root), out, '--out');
    if (args.entry === undefined && args.from === undefined)
      throw new CpError('ERR_USAGE', 'ledger prove needs --entry ID or --from OLD', {
        hint: 'cplane ledger prove --entry LED-… | --from 100 --to 200',
      });
    const signer = rootSigner(root);
    const note = (path: string): string =>
      readTextBounded(resolve(ctx.cwd, path), {
        maxBytes: MAX_NOTE_BYTES,
        what: 'checkpoint note',
        unreadableCode: 'ERR_PROOF_INVALID',
      });
    const request: ProofRequest =
      args.entry !== undefined
        ? { entry: args.entry, ...(args.checkpoint === undefined ? {} : { note: note(args.checkpoint) }) }
        : {
            from: treeRef(args.from as string, note),
            ...(args.to === undefined ? {} : { to: treeRef(args.to, note) }),
          };
    const proof =
      args.store !== undefined
        ? await withPgLedger(args.store, (store) => provePg(store, request, signer))
        : proveSqlite(ledgerPathForRoot(root), request, signer);
    const text = `${JSON.stringify(proof, null, 2)}\n`;
    if (out) writeFileAtomic(out, text);
    const summary =
      proof.kind === 'cplane-inclusion-proof'
        ? `entry ${proof.entry.id} is leaf ${proof.leaf_index} of the tree of ${proof.tree_size}: ${proof.audit_path.length} hashes`
        : `the tree of ${proof.old_size} is a prefix of the tree of ${proof.new_size}: ${proof.consistency_path.length} hashes`;
    if (out)
      ctx.report(args, { proof, out }, [summary, `  ${out} (check it: cplane ledger verify-proof ${out} --key VKEY)`]);
    else ctx.report(args, proof, text.trimEnd());
    return EXIT.OK;
  },
});

type ProofRequest = { entry: string; note?: string } | { from: TreeRef; to?: TreeRef };
type Signer = (origin: string) => NoteSigner;

function proveSqlite(file: string, request: ProofRequest, signer: Signer): InclusionProofFile | ConsistencyProofFile {
  const ledger = Ledger.open(file);
  try {
    // A ledger from before trees gains its tree here, once, from its chain.
    ledger.ensureTree();
    return 'entry' in request
      ? proveInclusion(ledger, request.entry, signer, request.note)
      : proveConsistency(ledger, request.from, request.to, signer);
  } finally {
    ledger.close();
  }
}

/** The proof from a PostgreSQL store's tree (kept by its trigger), read in one snapshot. */
function provePg(
  store: PgLedger,
  request: ProofRequest,
  signer: Signer,
): Promise<InclusionProofFile | ConsistencyProofFile> {
  return PgTreeSnapshot.open(store, async (snapshot) => {
    if (!('entry' in request))
      return snapshot.compute((tree) => consistencyProof(tree, request.from, request.to, signer));
    const row = await snapshot.entryRow(request.entry);
    return snapshot.compute((tree) => inclusionProof(tree, request.entry, row, signer, request.note));
  });
}

/** A tree size given as a number, or a checkpoint note file (prove checks its signature and root). */
function treeRef(value: string, note: (path: string) => string): TreeRef {
  return /^[0-9]{1,15}$/.test(value) ? Number(value) : { note: note(value) };
}
