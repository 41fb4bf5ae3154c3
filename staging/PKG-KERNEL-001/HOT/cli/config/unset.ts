import { changeConfig, type ConfigChangeResult } from '../../kernel/config/change.js';
import { parseKeyPath } from '../../kernel/config/key-path.js';
import { defineCommand, EXIT } from '../command.js';
import { CONFIG_ROOT, configRoot } from './target.js';

export function changeLine(result: ConfigChangeResult): string {
  if (!result.changed) return `config ${result.key}: unchanged`;
  const keys = result.changed_keys.length > 0 ? ` (${result.changed_keys.join(', ')})` : '';
  return `config ${result.op} ${result.key}: ${result.before_digest ?? 'none'} -> ${result.after_digest ?? 'none'}${keys}, recorded as ${result.entry_id ?? '?'}`;
}

export default defineCommand({
  name: 'unset',
  describe: 'remove an override: the key takes the package default again (a section name removes all its overrides)',
  positionals: { key: { type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms' } },
  options: CONFIG_ROOT,
  handler(args, ctx) {
    const root = configRoot(args, ctx);
    const result = changeConfig(root, { op: 'unset', path: parseKeyPath(args.key) });
    ctx.report(args, result, changeLine(result));
    return EXIT.OK;
  },
});
