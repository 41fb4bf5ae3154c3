import { defineCommand } from '#cli/command.js';
import { resolveRoot } from '#cli/root-option.js';
import { runSmoke } from '../../router/smoke.js';

export default defineCommand({
  command: 'smoke',
  describe: 'one exchange through the installed router with the mock provider, checked in the ledger',
  builder: (y) => y.option('root', { type: 'string', describe: 'the root to smoke-test' }),
  async run(args, ctx) {
    const result = await runSmoke(resolveRoot(args.root, ctx));
    ctx.report(args, result, result.message);
    return result.ok ? 0 : 1;
  },
});
