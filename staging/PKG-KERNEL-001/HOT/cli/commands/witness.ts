import { resolve } from 'node:path';
import { readTextBounded } from '../../kernel/bounded-read.js';
import { MAX_NOTE_BYTES } from '../../kernel/ledger/merkle/note.js';
import { openWitness, witness, witnessVkey } from '../../kernel/ledger/merkle/witness.js';
import { defineCommand, EXIT } from '../command.js';

export default defineCommand({
  name: 'witness',
  describe:
    "cosign a log's checkpoints: the first as given, each newer one only with a consistency proof from the one held; a fork or a rollback is refused",
  positionals: {
    checkpoint: {
      type: 'string',
      demandOption: true,
      describe: 'a checkpoint note, or a consistency proof from the held one (`cplane ledger prove --from HELD`)',
    },
  },
  options: {
    key: {
      type: 'string',
      demandOption: true,
      describe: "the log's public key: its vkey, or a PEM Ed25519 public key",
    },
    state: {
      type: 'string',
      demandOption: true,
      describe: "the witness's directory: its key and the newest checkpoint it accepted",
    },
    name: { type: 'string', default: 'cplane.witness', describe: 'the witness key name in its cosignatures' },
  },
  handler(args, ctx) {
    const keyText = readTextBounded(resolve(ctx.cwd, args.key), {
      maxBytes: MAX_NOTE_BYTES,
      what: 'public key',
      unreadableCode: 'ERR_PROOF_KEY_INVALID',
    });
    const state = openWitness(resolve(ctx.cwd, args.state), args.name);
    const files = [args.checkpoint].flat().map((f) => resolve(ctx.cwd, String(f)));
    const results = files.map((file) => witness(state, file, keyText, Date.now()));
    ctx.report(args, { vkey: witnessVkey(state), results }, [
      ...results.map((r) => `${r.accepted ? 'cosigned' : 'cosigned again'}: ${r.source} (tree of ${r.size})`),
      `witness vkey: ${witnessVkey(state)}`,
    ]);
    return EXIT.OK;
  },
});
