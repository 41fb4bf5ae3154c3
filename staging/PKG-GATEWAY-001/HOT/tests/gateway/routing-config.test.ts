// gateway.routing at the edge: what the schema cannot say is refused when the gateway opens, with a coded error
// naming the offending values and never a credential's value; the defaults filled in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { isCpError } from '#kernel/errors.js';
import { validateSection } from '#kernel/config/section-schema.js';
import { parseRouting } from '../../gateway/routing.js';

const ENV = { KEY_A: 'sk-secret-value-A-0123456789', KEY_B: 'sk-secret-value-B-0123456789' };
const dep = (id: string, credential = 'KEY_A') => ({
  id,
  provider: 'anthropic',
  base_url: `http://127.0.0.1:9/${id}/`,
  credential_env: credential,
  model: `model-${id}`,
});

function refused(value: unknown, env: NodeJS.ProcessEnv = ENV): { message: string; details: unknown } {
  try {
    parseRouting(value, env);
  } catch (error) {
    assert.ok(isCpError(error));
    assert.equal(error.code, 'ERR_ROUTING_CONFIG_INVALID');
    assert.doesNotMatch(error.message, /sk-secret/);
    return { message: error.message, details: error.details };
  }
  assert.fail('accepted');
}

test('no routing section: no routing (the gateway behaves as without it)', () => {
  assert.equal(parseRouting(undefined, ENV), null);
});

test('defaults: weight 1, no limits, weighted, every fallback class, 5 s cooldown; a lone id is a group of one', () => {
  const config = parseRouting(
    { deployments: [dep('a'), dep('b', 'KEY_B')], aliases: { m: { targets: ['a', ['b']] } } },
    ENV,
  );
  assert.ok(config);
  assert.deepEqual(config.aliases.m, { targets: [['a'], ['b']], strategy: 'weighted' });
  assert.equal(config.deployments[0]?.weight, 1);
  assert.equal(config.deployments[0]?.rpm, null);
  assert.equal(config.deployments[0]?.base_url, 'http://127.0.0.1:9/a', 'no trailing slash');
  assert.equal(config.cooldown_ms, 5000);
  assert.deepEqual(config.fallback_on, [
    'overloaded',
    'server_error',
    'timeout',
    'rate_limited',
    'network',
    'breaker_open',
    'context_too_long',
  ]);
});

test('refused: a deployment id twice, a target that is no deployment, a deployment twice in an alias, an unset credential', () => {
  assert.match(refused({ deployments: [dep('a'), dep('a')], aliases: {} }).message, /deployment id "a" is used twice/);
  const unknown = refused({ deployments: [dep('a')], aliases: { m: { targets: ['a', 'zz'] } } });
  assert.match(unknown.message, /alias "m" names deployment "zz"/);
  assert.deepEqual((unknown.details as { deployments: string[] }).deployments, ['a']);
  assert.match(refused({ deployments: [dep('a')], aliases: { m: { targets: ['a', ['a']] } } }).message, /twice/);
  const unset = refused({ deployments: [dep('a', 'KEY_NOT_SET')], aliases: {} });
  assert.match(unset.message, /credential_env "KEY_NOT_SET", which is not set/);
});

test('the gateway schema refuses a key in place of a credential name, an unknown class, a weight of 0', () => {
  // The dev root this test runs from holds the installed schemas.
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
  const base = { host: '127.0.0.1', port: 0, body_limit_bytes: 1048576, drain_timeout_ms: 1000 };
  const ok = { deployments: [dep('a')], aliases: { m: { targets: ['a'] } } };
  assert.deepEqual(validateSection(root, 'gateway', { ...base, routing: ok }), { ok: true });
  const cases: Array<[unknown, RegExp]> = [
    [{ ...ok, deployments: [{ ...dep('a'), credential_env: 'sk-ant-api03-abc' }] }, /credential_env/],
    [{ ...ok, fallback_on: ['teapot'] }, /fallback_on/],
    [{ ...ok, deployments: [{ ...dep('a'), weight: 0 }] }, /weight/],
    [{ ...ok, deployments: [{ ...dep('a'), base_url: 'ftp://x' }] }, /base_url/],
  ];
  for (const [routing, where] of cases) {
    const verdict = validateSection(root, 'gateway', { ...base, routing });
    assert.equal(verdict.ok, false);
    assert.match(verdict.ok ? '' : verdict.pointer, where);
  }
});
