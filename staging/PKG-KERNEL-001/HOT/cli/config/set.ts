import { changeConfig } from '../../kernel/config/change.js';
import { parseKeyPath } from '../../kernel/config/key-path.js';
import { defineCommand } from '../command.js';
import { changeLine } from './unset.js';
import { configRoot, withConfigRoot, type ConfigRootArgs } from './target.js';

interface SetArgs extends ConfigRootArgs {
  key: string;
  value: string;
  string?: boolean;
}

/** A value is JSON when it parses as JSON (`5000`, `true`, `["a"]`, `null` = unset the default), else a string. */
export function parseValue(text: string, forceString: boolean): unknown {
  if (forceString) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export default defineCommand<SetArgs>({
  command: 'set <key> <value>',
  describe: 'override a key (VALUE is JSON when it parses, else a string; null unsets the package default)',
  builder: (y) => withConfigRoot(y
    .positional('key', {
      type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms or budget.pricing["gpt-4.1"]',
    })
    .positional('value', {
      type: 'string', demandOption: true, describe: 'e.g. 5000, "\\"text\\"", {"max_tokens": 100}',
    })
    .option('string', {
      type: 'boolean', default: false, describe: 'take VALUE as a string even when it parses as JSON',
    })) as never,
  run(args, ctx) {
    const root = configRoot(args, ctx);
    const value = parseValue(String(args.value), args.string === true);
    const result = changeConfig(root, { op: 'set', path: parseKeyPath(args.key), value });
    ctx.report(args, result, changeLine(result));
    return 0;
  },
});
