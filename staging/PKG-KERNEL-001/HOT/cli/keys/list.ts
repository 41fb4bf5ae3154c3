import { readTrustStore, trustStorePath } from '../../kernel/signing/index.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'list',
  describe: "list a root's trusted keys",
  options: rootOption('the root whose trust store to use'),
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const keys = readTrustStore(root);
    ctx.report(
      args,
      { trust_store: trustStorePath(root), keys },
      keys.length === 0
        ? `no trusted keys in ${trustStorePath(root)}`
        : keys.map(
            (k) =>
              `${k.key_id}  added ${k.added_at}${k.role === 'checkpoint' ? '  (root key: checkpoints only)' : ''}${k.may_replace?.length ? `  may replace ${k.may_replace.join(', ')}` : ''}`,
          ),
    );
    return EXIT.OK;
  },
});
