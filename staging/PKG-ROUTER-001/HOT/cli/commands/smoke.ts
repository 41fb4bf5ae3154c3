import { defineCommand, EXIT } from '#cli/command.js';
import { resolveRoot, rootOption } from '#cli/root-option.js';
import { runSmoke } from '../../router/smoke.js';

export default defineCommand({
  name: 'smoke',
  describe: 'one exchange through the installed router with the mock provider, checked in the ledger',
  options: rootOption('the root to smoke-test'),
  async handler(args, ctx) {
    const result = await runSmoke(resolveRoot(args.root, ctx));
    ctx.report(args, result, result.message);
    return result.ok ? EXIT.OK : EXIT.CHECK_FAILED;
  },
});
