import { quote } from '../../kernel/errors.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot } from '../root-option.js';
import { readRevocations } from '../../router/revocations.js';

interface ListArgs {
  root?: string;
}

export default defineCommand<ListArgs>({
  command: 'list-revoked',
  describe: 'print the revoked key ids of a root',
  builder: (y) => y.option('root', { type: 'string', describe: 'the cplane root' }) as never,
  run(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const { entries } = readRevocations(root);
    const lines = entries.map((e) => `${e.key_id}  ${e.revoked_at}${e.reason === null ? '' : `  ${quote(e.reason)}`}`);
    ctx.report(args, { revoked: entries }, lines.length > 0 ? lines : ['no revoked keys']);
    return EXIT.OK;
  },
});
