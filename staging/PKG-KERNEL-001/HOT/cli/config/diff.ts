import {
  configSections,
  effectiveConfig,
  readDefaultConfig,
  defaultConfigPath,
} from '../../kernel/config/effective.js';
import { formatKeyPath } from '../../kernel/config/key-path.js';
import { changedPaths, getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand, EXIT } from '../command.js';
import { CONFIG_ROOT, configRoot, showValue } from './target.js';

export default defineCommand({
  name: 'diff',
  describe: 'every key where the effective config differs from the package defaults: default -> effective',
  positionals: { section: { type: 'string', describe: 'only this section' } },
  options: CONFIG_ROOT,
  handler(args, ctx) {
    const root = configRoot(args, ctx);
    const file = readOverrides(root);
    const sections = configSections(root).filter((s) => args.section === undefined || s === args.section);
    const changes = sections.flatMap((section) => {
      const defaults = readDefaultConfig(defaultConfigPath(root, section));
      const effective = effectiveConfig(root, section, () => defaults, file.value);
      return changedPaths(defaults, effective).map((p) => ({
        key: formatKeyPath([section, ...p]),
        default: getAt(defaults, p),
        effective: getAt(effective, p),
      }));
    });
    const lines = changes.map((c) => `${c.key}: ${showValue(c.default)} -> ${showValue(c.effective)}`);
    // JSON has no undefined: a key absent on one side is null there.
    const json = changes.map((c) => ({ key: c.key, default: c.default ?? null, effective: c.effective ?? null }));
    ctx.report(
      args,
      { digest: file.digest, changes: json },
      lines.length > 0 ? lines : ['no differences from the package defaults'],
    );
    return EXIT.OK;
  },
});
