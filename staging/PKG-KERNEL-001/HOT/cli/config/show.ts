import { configSections, effectiveConfig } from '../../kernel/config/effective.js';
import { formatKeyPath } from '../../kernel/config/key-path.js';
import { changedPaths, getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand, EXIT } from '../command.js';
import { CONFIG_ROOT, configRoot, showValue } from './target.js';

export default defineCommand({
  name: 'show',
  describe: 'print the operator overrides (--effective: every section as the root reads it)',
  options: {
    ...CONFIG_ROOT,
    effective: { type: 'boolean', default: false, describe: 'print the effective config of every section' },
  },
  handler(args, ctx) {
    const root = configRoot(args, ctx);
    const file = readOverrides(root);
    if (args.effective) {
      const sections = Object.fromEntries(
        configSections(root).map((s) => [s, effectiveConfig(root, s, undefined, file.value)]),
      );
      ctx.report(args, { digest: file.digest, sections }, JSON.stringify(sections, null, 2));
      return EXIT.OK;
    }
    const lines = changedPaths({}, file.value.overrides).map(
      (p) => `${formatKeyPath(p)} = ${showValue(getAt(file.value.overrides, p))}`,
    );
    ctx.report(
      args,
      { digest: file.digest, ...file.value },
      lines.length > 0 ? lines : ['no overrides: every section is its package default'],
    );
    return EXIT.OK;
  },
});
