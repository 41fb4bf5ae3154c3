import { changeConfig } from '../../kernel/config/change.js';
import { CpError } from '../../kernel/errors.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../../kernel/json-depth.js';
import { parseKeyPath } from '../../kernel/config/key-path.js';
import { defineCommand, EXIT } from '../command.js';
import { changeLine } from './unset.js';
import { CONFIG_ROOT, configRoot } from './target.js';

/** A value is JSON when it parses as JSON (`5000`, `true`, `["a"]`, `null` = unset the default), else a string. */
export function parseValue(text: string, forceString: boolean): unknown {
  if (forceString) return text;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return text;
  }
  // JSON.parse takes any depth, but the merge, the secret check and the file write all recurse: one argument
  // of 65k brackets (under the 128 KiB argv limit) overflowed the stack after it.
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new CpError('ERR_USAGE', `the config value nests deeper than ${MAX_JSON_DEPTH} levels`, {
      hint: 'no config is nested that deep: check the value (or pass --string to store it as text)',
      details: { max_depth: MAX_JSON_DEPTH },
    });
  }
  return value;
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
