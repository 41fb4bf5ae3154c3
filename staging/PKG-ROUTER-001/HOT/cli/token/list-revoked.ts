import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { readRevocations } from '../../router/revocations.js';

export default defineCommand({
  name: 'list-revoked',
  describe: 'print the revoked key ids of a root',
  options: { ...rootOption('the cplane root') },
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const { entries } = readRevocations(root);
    const lines = entries.map(
      (e) => `${e.key_id}  ${e.revoked_at}${e.reason === null ? '' : `  ${JSON.stringify(e.reason)}`}`,
    );
    ctx.report(args, { revoked: entries }, lines.length > 0 ? lines : ['no revoked keys']);
    return EXIT.OK;
  },
});
