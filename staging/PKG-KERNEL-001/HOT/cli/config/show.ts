import { configSections, effectiveConfig } from '../../kernel/config/effective.js';
import { formatKeyPath } from '../../kernel/config/key-path.js';
import { changedPaths, getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand } from '../command.js';
import { configRoot, showValue, withConfigRoot, type ConfigRootArgs } from './target.js';

interface ShowArgs extends ConfigRootArgs {
  effective?: boolean;
}

export default defineCommand<ShowArgs>({
  command: 'show',
  describe: 'print the operator overrides (--effective: every section as the root reads it)',
  builder: (y) => withConfigRoot(y.option('effective', {
    type: 'boolean', default: false, describe: 'print the effective config of every section',
  })) as never,
  run(args, ctx) {
    const root = configRoot(args, ctx);
    const file = readOverrides(root);
    if (args.effective) {
      const sections = Object.fromEntries(configSections(root)
        .map((s) => [s, effectiveConfig(root, s, undefined, file.value)]));
      ctx.report(args, { digest: file.digest, sections }, JSON.stringify(sections, null, 2));
      return 0;
    }
    const lines = changedPaths({}, file.value.overrides)
      .map((p) => `${formatKeyPath(p)} = ${showValue(getAt(file.value.overrides, p))}`);
    const human = lines.length > 0 ? lines : ['no overrides: every section is its package default'];
    ctx.report(args, { digest: file.digest, ...file.value }, human);
    return 0;
  },
});
