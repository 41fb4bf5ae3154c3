import { resolve } from 'node:path';
import { writeFileAtomic } from '../../kernel/atomic.js';
import { readTextBounded } from '../../kernel/bounded-read.js';
import { CpError } from '../../kernel/errors.js';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';
import { proveConsistency, proveInclusion, type TreeRef } from '../../kernel/ledger/merkle/ledger-proofs.js';
import { MAX_NOTE_BYTES } from '../../kernel/ledger/merkle/note.js';
import { refuseLedgerAsOutput } from '../../kernel/ledger/file-check.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';
import { rootSigner } from './proof-key.js';

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
  },
  handler(args, ctx) {
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
    const ledger = Ledger.open(ledgerPathForRoot(root));
    try {
      // A ledger from before trees gains its tree here, once, from its chain.
      ledger.ensureTree();
      const proof =
        args.entry !== undefined
          ? proveInclusion(
              ledger,
              args.entry,
              signer,
              args.checkpoint === undefined ? undefined : note(args.checkpoint),
            )
          : proveConsistency(
              ledger,
              treeRef(args.from as string, note),
              args.to === undefined ? undefined : treeRef(args.to, note),
              signer,
            );
      const text = `${JSON.stringify(proof, null, 2)}\n`;
      if (out) writeFileAtomic(out, text);
      const summary =
        proof.kind === 'cplane-inclusion-proof'
          ? `entry ${proof.entry.id} is leaf ${proof.leaf_index} of the tree of ${proof.tree_size}: ${proof.audit_path.length} hashes`
          : `the tree of ${proof.old_size} is a prefix of the tree of ${proof.new_size}: ${proof.consistency_path.length} hashes`;
      if (out)
        ctx.report(args, { proof, out }, [
          summary,
          `  ${out} (check it: cplane ledger verify-proof ${out} --key VKEY)`,
        ]);
      else ctx.report(args, proof, text.trimEnd());
      return EXIT.OK;
    } finally {
      ledger.close();
    }
  },
});

/** A tree size given as a number, or a checkpoint note file (prove checks its signature and root). */
function treeRef(value: string, note: (path: string) => string): TreeRef {
  return /^[0-9]{1,15}$/.test(value) ? Number(value) : { note: note(value) };
}
