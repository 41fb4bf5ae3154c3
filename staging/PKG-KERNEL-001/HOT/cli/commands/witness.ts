import { resolve } from 'node:path';
import { readTextBounded } from '../../kernel/bounded-read.js';
import { MAX_NOTE_BYTES } from '../../kernel/ledger/merkle/note.js';
import { openWitness, witness, type WitnessState, witnessVkey } from '../../kernel/ledger/merkle/witness.js';
import { type CliContext, defineCommand, EXIT, type ExitCode } from '../command.js';
import { CpError } from '../../kernel/errors.js';
import { witnessServer } from '../../kernel/ledger/merkle/witness-http.js';
import type { AddressInfo } from 'node:net';

export default defineCommand({
  name: 'witness',
  describe:
    "cosign a log's checkpoints: the first as given, each newer one only with a consistency proof from the one held; a fork or a rollback is refused",
  positionals: {
    checkpoint: {
      type: 'string',
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
    listen: {
      type: 'string',
      conflicts: 'checkpoint',
      describe: 'serve C2SP tlog-witness POST /add-checkpoint on HOST:PORT (port 0: any free one) until SIGTERM',
    },
  },
  check(args) {
    if (args.checkpoint === undefined && args.listen === undefined)
      throw new CpError('ERR_USAGE', 'cplane witness needs a CHECKPOINT file or --listen HOST:PORT', {
        hint: 'cplane witness --key VKEY --state DIR CHECKPOINT | --listen 127.0.0.1:7380',
      });
  },
  async handler(args, ctx) {
    const keyText = readTextBounded(resolve(ctx.cwd, args.key), {
      maxBytes: MAX_NOTE_BYTES,
      what: 'public key',
      unreadableCode: 'ERR_PROOF_KEY_INVALID',
    });
    const state = openWitness(resolve(ctx.cwd, args.state), args.name);
    if (args.listen !== undefined) return listen(state, keyText, args.listen, ctx);
    const files = [args.checkpoint].flat().map((f) => resolve(ctx.cwd, String(f)));
    const results = files.map((file) => witness(state, file, keyText, Date.now()));
    ctx.report(args, { vkey: witnessVkey(state), results }, [
      ...results.map((r) => `${r.accepted ? 'cosigned' : 'cosigned again'}: ${r.source} (tree of ${r.size})`),
      `witness vkey: ${witnessVkey(state)}`,
    ]);
    return EXIT.OK;
  },
});

/** The witness over HTTP until SIGTERM or SIGINT; its URL and vkey printed once it listens. */
async function listen(state: WitnessState, keyText: string, at: string, ctx: CliContext): Promise<ExitCode> {
  const match = /^(.+):([0-9]{1,5})$/.exec(at);
  const port = Number(match?.[2]);
  if (match === null || port > 65535)
    throw new CpError('ERR_USAGE', `--listen ${at} is not HOST:PORT`, { hint: '--listen 127.0.0.1:7380' });
  const signal = new Promise<string>((done) => {
    process.once('SIGTERM', () => done('SIGTERM'));
    process.once('SIGINT', () => done('SIGINT'));
  });
  const server = witnessServer(state, keyText);
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(port, match[1], () => done());
  });
  const address = server.address() as AddressInfo;
  ctx.out(`witness listening on http://${address.address}:${address.port}`);
  ctx.out(`witness vkey: ${witnessVkey(state)}`);
  ctx.err(`cplane witness: ${await signal}: stopped`);
  await new Promise<void>((done) => server.close(() => done()));
  return EXIT.OK;
}
