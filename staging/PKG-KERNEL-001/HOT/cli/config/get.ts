import { CpError, show } from '../../kernel/errors.js';
import { effectiveValue } from '../../kernel/config/change.js';
import { formatKeyPath, parseKeyPath } from '../../kernel/config/key-path.js';
import { getAt } from '../../kernel/config/merge.js';
import { readOverrides } from '../../kernel/config/overrides.js';
import { defineCommand } from '../command.js';
import { configRoot, showValue, withConfigRoot, type ConfigRootArgs } from './target.js';

interface GetArgs extends ConfigRootArgs {
  key: string;
}

export default defineCommand<GetArgs>({
  command: 'get <key>',
  describe: 'print the effective value of a key (a section name prints the whole section)',
  builder: (y) => withConfigRoot(y
    .positional('key', { type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms' })) as never,
  run(args, ctx) {
    const root = configRoot(args, ctx);
    const path = parseKeyPath(args.key);
    const value = effectiveValue(root, path);
    const key = formatKeyPath(path);
    if (value === undefined) {
      const what = `config key ${show(key)} is not set (neither a package default nor an override)`;
      throw new CpError('ERR_CONFIG_KEY_NOT_SET', what, {
        hint: `\`cplane config get ${path[0] as string}\` shows the section`, details: { key },
      });
    }
    const overridden = getAt(readOverrides(root).value.overrides, path) !== undefined;
    ctx.report(args, { key, value, source: overridden ? 'override' : 'default' }, showValue(value));
    return 0;
  },
});
