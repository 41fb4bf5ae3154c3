import {
  configSections, defaultConfigPath, effectiveConfig, readDefaultConfig,
} from '../../kernel/config/effective.js';
import { formatKeyPath } from '../../kernel/config/key-path.js';
import { changedPaths, getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand } from '../command.js';
import { configRoot, showValue, withConfigRoot, type ConfigRootArgs } from './target.js';

interface DiffArgs extends ConfigRootArgs {
  section?: string;
}

export default defineCommand<DiffArgs>({
  command: 'diff [section]',
  describe: 'every key where the effective config differs from the package defaults: default -> effective',
  builder: (y) => withConfigRoot(y.positional('section', { type: 'string', describe: 'only this section' })) as never,
  run(args, ctx) {
    const root = configRoot(args, ctx);
    const file = readOverrides(root);
    const sections = configSections(root).filter((s) => args.section === undefined || s === args.section);
    const changes = sections.flatMap((section) => {
      const defaults = readDefaultConfig(defaultConfigPath(root, section));
      const effective = effectiveConfig(root, section, () => defaults, file.value);
      return changedPaths(defaults, effective).map((p) => ({
        key: formatKeyPath([section, ...p]), default: getAt(defaults, p), effective: getAt(effective, p),
      }));
    });
    const lines = changes.map((c) => `${c.key}: ${showValue(c.default)} -> ${showValue(c.effective)}`);
    // JSON has no undefined: a key absent on one side is null there.
    const json = changes.map((c) => ({ key: c.key, default: c.default ?? null, effective: c.effective ?? null }));
    const human = lines.length > 0 ? lines : ['no differences from the package defaults'];
    ctx.report(args, { digest: file.digest, changes: json }, human);
    return 0;
  },
});
