import { changeConfig, type ConfigChangeResult } from '../../kernel/config/change.js';
import { parseKeyPath } from '../../kernel/config/key-path.js';
import { defineCommand } from '../command.js';
import { configRoot, withConfigRoot, type ConfigRootArgs } from './target.js';

interface UnsetArgs extends ConfigRootArgs {
  key: string;
}

export function changeLine(result: ConfigChangeResult): string {
  if (!result.changed) return `config ${result.key}: unchanged`;
  const keys = result.changed_keys.length > 0 ? ` (${result.changed_keys.join(', ')})` : '';
  const digests = `${result.before_digest ?? 'none'} -> ${result.after_digest ?? 'none'}`;
  return `config ${result.op} ${result.key}: ${digests}${keys}, recorded as ${result.entry_id ?? '?'}`;
}

export default defineCommand<UnsetArgs>({
  command: 'unset <key>',
  describe: 'remove an override: the key takes the package default again (a section name removes all its overrides)',
  builder: (y) => withConfigRoot(y
    .positional('key', { type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms' })) as never,
  run(args, ctx) {
    const root = configRoot(args, ctx);
    const result = changeConfig(root, { op: 'unset', path: parseKeyPath(args.key) });
    ctx.report(args, result, changeLine(result));
    return 0;
  },
});
