// `config set KEY VALUE` with a VALUE of valid JSON nested ~65k levels (130 KB, one argv string): a usage error
// naming the depth, never a stack overflow in the merge or the secret check after JSON.parse accepted it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseValue } from '../../cli/config/set.js';

test('a config value nested deeper than 128 levels is ERR_USAGE; text that is not JSON stays a string', () => {
  const depth = 65_000;
  const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  assert.throws(
    () => parseValue(deep, false),
    (e: { code?: string; message: string; hint?: string }) => {
      assert.equal(e.code, 'ERR_USAGE', e.message);
      assert.match(e.message, /deeper than 128 levels/);
      assert.ok((e.hint ?? '').length > 0);
      return true;
    },
  );
  // Brackets that are not JSON are a string value, as before; --string keeps any text a string.
  assert.equal(parseValue('[[[[', false), '[[[[');
  assert.equal(parseValue(deep, true), deep);
  assert.deepEqual(parseValue('{"a":[[1]]}', false), { a: [[1]] });
});
