import { changeConfig } from '../../kernel/config/change.js';
import { parseKeyPath } from '../../kernel/config/key-path.js';
import { defineCommand, EXIT } from '../command.js';
import { changeLine } from './unset.js';
import { CONFIG_ROOT, configRoot } from './target.js';

/** A value is JSON when it parses as JSON (`5000`, `true`, `["a"]`, `null` = unset the default), else a string. */
export function parseValue(text: string, forceString: boolean): unknown {
  if (forceString) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export default defineCommand({
  name: 'set',
  describe: 'override a key (VALUE is JSON when it parses, else a string; null unsets the package default)',
  positionals: {
    key: { type: 'string', demandOption: true, describe: 'e.g. router.timeout_ms or budget.pricing["gpt-4.1"]' },
    value: { type: 'string', demandOption: true, describe: 'e.g. 5000, "\\"text\\"", {"max_tokens": 100}' },
  },
  options: {
    ...CONFIG_ROOT,
    string: { type: 'boolean', default: false, describe: 'take VALUE as a string even when it parses as JSON' },
  },
  handler(args, ctx) {
    const root = configRoot(args, ctx);
    const result = changeConfig(root, {
      op: 'set',
      path: parseKeyPath(args.key),
      value: parseValue(String(args.value), args.string === true),
    });
    ctx.report(args, result, changeLine(result));
    return EXIT.OK;
  },
});
