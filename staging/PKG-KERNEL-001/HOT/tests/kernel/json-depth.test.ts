import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonDepth, MAX_JSON_DEPTH, parseJsonBounded } from '../../kernel/json-depth.js';

test('jsonDepth counts nesting outside strings, escaped quotes included', () => {
  assert.equal(jsonDepth('1'), 0);
  assert.equal(jsonDepth('{"a":[1,{"b":[]}]}'), 4);
  assert.equal(jsonDepth('["[[[[", "\\"[[[", {}]'), 2);
  assert.equal(jsonDepth('"\\\\"'), 0);
});

test('parseJsonBounded parses to the bound and refuses past it with a RangeError, before any recursion', () => {
  const nested = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  assert.deepEqual(parseJsonBounded('{"a":[1]}'), { a: [1] });
  assert.ok(Array.isArray(parseJsonBounded(nested(MAX_JSON_DEPTH))));
  assert.throws(() => parseJsonBounded(nested(MAX_JSON_DEPTH + 1)), RangeError);
  // Deep enough that JSON.stringify of the parsed value would overflow the stack.
  assert.throws(() => parseJsonBounded(nested(1_000_000)), /nested deeper than 128 levels/);
  assert.throws(() => parseJsonBounded('{"a":'), SyntaxError);
});
