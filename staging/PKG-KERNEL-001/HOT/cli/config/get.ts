import { CpError, show } from '../../kernel/errors.js';
import { effectiveValue } from '../../kernel/config/change.js';
import { formatKeyPath, parseKeyPath } from '../../kernel/config/key-path.js';
import { getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand, EXIT } from '../command.js';
import { CONFIG_ROOT, configRoot, showValue } from './target.js';

export default defineCommand({
  name: 'get',
  describe: 'print the effective value of a key (a section name prints the whole section)',
  positionals: { key: { type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms' } },
  options: CONFIG_ROOT,
  handler(args, ctx) {
    const root = configRoot(args, ctx);
    const path = parseKeyPath(args.key);
    const value = effectiveValue(root, path);
    const key = formatKeyPath(path);
    if (value === undefined) {
      throw new CpError(
        'ERR_CONFIG_KEY_NOT_SET',
        `config key ${show(key)} is not set (neither a package default nor an override)`,
        {
          hint: `\`cplane config get ${path[0] as string}\` shows the section`,
          details: { key },
        },
      );
    }
    const overridden = getAt(readOverrides(root).value.overrides, path) !== undefined;
    ctx.report(args, { key, value, source: overridden ? 'override' : 'default' }, showValue(value));
    return EXIT.OK;
  },
});
