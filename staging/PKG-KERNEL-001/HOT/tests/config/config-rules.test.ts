// The rules of the operator layer, apart from any root: how keys are written and refused, how overrides merge
// with defaults (objects by key, arrays and scalars whole, null unsets), and which keys and values are secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatKeyPath, parseKeyPath } from '../../kernel/config/key-path.js';
import { changedPaths, mergeConfig, setAt, unsetAt } from '../../kernel/config/merge.js';
import { checkOverrides } from '../../kernel/config/overrides.js';
import { secretPath } from '../../kernel/config/secret-keys.js';

test('keys: dotted names and bracket-quoted segments round-trip', () => {
  assert.deepEqual(parseKeyPath('router.retry.max_attempts'), ['router', 'retry', 'max_attempts']);
  assert.deepEqual(parseKeyPath('budget.pricing["gpt-4.1"].input_per_mtok'), [
    'budget',
    'pricing',
    'gpt-4.1',
    'input_per_mtok',
  ]);
  assert.deepEqual(parseKeyPath('a["x\\"]y"]'), ['a', 'x"]y']);
  for (const key of [
    'router.timeout_ms',
    'budget.pricing["gpt-4.1"].input_per_mtok',
    'budget.limits.agent.by_id["agent one"]',
  ]) {
    assert.equal(formatKeyPath(parseKeyPath(key)), key);
  }
});

test('keys: malformed keys and prototype names are refused with ERR_CONFIG_KEY_INVALID naming the key', () => {
  for (const key of [
    '',
    'router.',
    '.router',
    'router..x',
    'router.a b',
    'router["x"',
    'router[x]',
    'router[""]',
    'a.__proto__.b',
    'a.constructor',
    'a["prototype"]',
    'x'.repeat(600),
    Array.from({ length: 17 }, () => 'a').join('.'),
    'a["\\u0000"]',
  ]) {
    assert.throws(
      () => parseKeyPath(key),
      (e: { code?: string; message?: string }) =>
        e.code === 'ERR_CONFIG_KEY_INVALID' && /config key/.test(e.message ?? ''),
      key,
    );
  }
});

test('merge: objects by key, arrays and scalars replace whole, null unsets the default, defaults are never mutated', () => {
  const defaults = { a: 1, list: [1, 2, 3], nested: { keep: true, drop: 'x', deep: { n: 1 } }, gone: { x: 1 } };
  const merged = mergeConfig(defaults, {
    a: 2,
    list: [9],
    nested: { drop: null, deep: { m: 2 } },
    gone: null,
    fresh: { v: 1, n: null },
  });
  assert.deepEqual(merged, { a: 2, list: [9], nested: { keep: true, deep: { n: 1, m: 2 } }, fresh: { v: 1 } });
  assert.deepEqual(defaults, {
    a: 1,
    list: [1, 2, 3],
    nested: { keep: true, drop: 'x', deep: { n: 1 } },
    gone: { x: 1 },
  });
  assert.deepEqual(mergeConfig(defaults, undefined), defaults);
  assert.deepEqual(
    changedPaths(defaults, merged).map((p) => p.join('.')),
    ['a', 'fresh.v', 'gone.x', 'list', 'nested.deep.m', 'nested.drop'],
  );
});

test('set and unset: unset prunes the objects it empties, so an unset returns to the file before the set', () => {
  const before = { router: { retry: { max_attempts: 2 } } };
  const set = setAt(before, ['router', 'breaker', 'failure_threshold'], 5);
  assert.deepEqual(set, { router: { retry: { max_attempts: 2 }, breaker: { failure_threshold: 5 } } });
  assert.deepEqual(unsetAt(set, ['router', 'breaker', 'failure_threshold']), before);
  assert.deepEqual(unsetAt(before, ['router', 'retry', 'max_attempts']), {});
  assert.deepEqual(unsetAt(before, ['router', 'nothing', 'here']), before);
});

test('secrets: key names that hold secrets are found anywhere in the key or the value; where a secret lives is not one', () => {
  assert.deepEqual(secretPath(['providers', 'anthropic', 'api_key'], 'x'), ['providers', 'anthropic', 'api_key']);
  assert.deepEqual(secretPath(['providers', 'anthropic'], { base_url: 'http://h', apiKey: 'x' }), [
    'providers',
    'anthropic',
    'apiKey',
  ]);
  assert.deepEqual(secretPath(['router', 'auth'], { secret: 'x' }), ['router', 'auth', 'secret']);
  assert.deepEqual(secretPath(['gateway', 'host'], 'sk-ant-api03-abcdefghijkl'), ['gateway', 'host']);
  assert.deepEqual(secretPath(['x', 'list'], ['a', 'cpt1.abc.def']), ['x', 'list']);
  for (const [path, value] of [
    [['providers', 'anthropic', 'api_key_env'], 'MY_KEY'],
    [['router', 'auth', 'secret_file'], '/run/secret'],
    [['router', 'default_max_tokens'], 10],
    [['budget', 'limits', 'agent', 'default', 'max_tokens'], 5],
  ] as const) {
    assert.equal(secretPath([...path], value), null, path.join('.'));
  }
});

test('the override file shape: anything but {schema_version: "1", overrides: {<section>: {…}}} is ERR_CONFIG_OVERRIDES_INVALID', () => {
  assert.deepEqual(checkOverrides({ schema_version: '1', overrides: { router: { timeout_ms: 5 } } }).overrides.router, {
    timeout_ms: 5,
  });
  for (const bad of [
    null,
    [],
    'x',
    {},
    { schema_version: '2', overrides: {} },
    { schema_version: '1' },
    { schema_version: '1', overrides: [] },
    { schema_version: '1', overrides: { router: 5 } },
    { schema_version: '1', overrides: { 'Bad/Name': {} } },
    { schema_version: '1', overrides: {}, extra: 1 },
  ]) {
    assert.throws(() => checkOverrides(bad), { code: 'ERR_CONFIG_OVERRIDES_INVALID' }, JSON.stringify(bad));
  }
});
