import { resolve } from 'node:path';
import { readTextBounded } from '../../kernel/bounded-read.js';
import { MAX_NOTE_BYTES } from '../../kernel/ledger/merkle/note.js';
import { MAX_PROOF_BYTES, verifyProofText } from '../../kernel/ledger/merkle/verify-proof.js';
import { defineCommand, EXIT } from '../command.js';

export default defineCommand({
  name: 'verify-proof',
  describe: 'check a proof written by `ledger prove` offline, with nothing but the file and the public key',
  positionals: { file: { type: 'string', demandOption: true, describe: 'the proof file' } },
  options: {
    key: {
      type: 'string',
      demandOption: true,
      describe: 'the public key: the vkey file of `ledger export-tiles` (name+hash+base64) or a PEM Ed25519 public key',
    },
  },
  handler(args, ctx) {
    const text = readTextBounded(resolve(ctx.cwd, args.file), {
      maxBytes: MAX_PROOF_BYTES,
      what: 'proof',
      unreadableCode: 'ERR_PROOF_INVALID',
    });
    const key = readTextBounded(resolve(ctx.cwd, args.key), {
      maxBytes: MAX_NOTE_BYTES,
      what: 'public key',
      unreadableCode: 'ERR_PROOF_KEY_INVALID',
    });
    const result = verifyProofText(text, key);
    ctx.report(
      args,
      { ok: true, ...result },
      result.kind === 'inclusion'
        ? `ok: entry ${result.entry_id} is leaf ${result.leaf_index} of ${result.origin}'s tree of ${result.tree_size} (root ${result.root})`
        : `ok: ${result.origin}'s tree of ${result.new_size} extends its tree of ${result.old_size}`,
    );
    return EXIT.OK;
  },
});
