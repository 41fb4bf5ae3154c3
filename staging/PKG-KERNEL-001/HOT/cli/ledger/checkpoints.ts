import { resolve } from 'node:path';
import { exportRootCheckpoints, readRootCheckpoints } from '../../kernel/ledger/index.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'checkpoints',
  describe: "list the root's signed checkpoints; --export FILE copies them all (JSON Lines) to keep elsewhere",
  options: {
    ...rootOption('the cplane root'),
    export: { type: 'string', describe: 'write every checkpoint to this file as JSON Lines (atomically)' },
  },
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const found = readRootCheckpoints(root);
    const exported =
      args.export === undefined
        ? null
        : { path: resolve(ctx.cwd, args.export), count: exportRootCheckpoints(root, resolve(ctx.cwd, args.export)) };
    const list = found.map((item) =>
      'checkpoint' in item
        ? { source: item.source, ...item.checkpoint }
        : { source: item.source, error: item.error.toJSON() },
    );
    const lines = found.map((item) =>
      'checkpoint' in item
        ? `#${item.checkpoint.seq}  ${item.checkpoint.entry_id}  ${item.checkpoint.hash}  ${item.checkpoint.time}  ${item.checkpoint.key_id}`
        : `INVALID  ${item.source}: ${item.error.message}`,
    );
    if (lines.length === 0) lines.push(`no checkpoints in ${root}`);
    if (exported) lines.push(`exported ${exported.count} checkpoint(s) to ${exported.path}`);
    ctx.report(args, { root, checkpoints: list, exported }, lines);
    return found.every((item) => 'checkpoint' in item) ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});
