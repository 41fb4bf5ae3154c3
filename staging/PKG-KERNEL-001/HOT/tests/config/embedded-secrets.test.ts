// Secrets never live in config values, also when they are not the whole value: a provider key inside a URL's
// query or after "Bearer ", or a header named Authorization, reaches the override file and `config show` as
// surely as a bare one. Ordinary values that merely contain "sk-" inside a word are not secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refuseSecret } from '../../kernel/config/change.js';
import { secretPath } from '../../kernel/config/secret-keys.js';

test('a provider key or route token inside a longer value, or under an Authorization name, is a secret', () => {
  const token = `cpt1.${'A'.repeat(40)}.${'b'.repeat(43)}`;
  for (const [path, value, where] of [
    [['providers', 'openai', 'base_url'], 'https://api.example.com/v1?key=sk-proj-abcdefghijkl', 'base_url'],
    [['gateway', 'note'], 'Bearer sk-ant-api03-abcdefghijkl', 'note'],
    [['gateway', 'note'], ` ${token} `, 'note'],
    [['gateway', 'list'], ['ok', `token=${token}`], 'list'],
    [['providers', 'x', 'headers'], { Authorization: 'Basic dXNlcjpwYXNz' }, 'Authorization'],
    [['providers', 'x', 'headers'], { 'proxy-authorization': 'x' }, 'proxy-authorization'],
  ] as const) {
    const found = secretPath([...path], value);
    assert.ok(found !== null, `${JSON.stringify(value)} at ${path.join('.')} is not found as a secret`);
    assert.equal(found.at(-1), where);
    assert.throws(
      () => refuseSecret([...path], value),
      (e: { code?: string; message: string; details?: unknown }) => {
        assert.equal(e.code, 'ERR_CONFIG_SECRET');
        assert.equal(JSON.stringify([e.message, e.details]).includes('abcdefghijkl'), false, 'the secret is echoed');
        return true;
      },
    );
  }
});

test('values that only contain sk- or cpt1 inside a word are not secrets', () => {
  for (const value of [
    'task-abcdefghijkl',
    'disk-abcdefghijkl',
    'https://h/v1/mask-abcdefghijklm',
    'claude-sonnet-4-5',
    'notcpt1.abc.def',
  ]) {
    assert.equal(secretPath(['gateway', 'x'], value), null, value);
  }
  assert.equal(secretPath(['router', 'authorized_agents'], ['A1']), null);
});
