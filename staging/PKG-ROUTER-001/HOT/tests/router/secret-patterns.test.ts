// Secrets pasted into a conversation are found by shape and stored as a marker, counted on the EXCHANGE; the
// upstream still gets the request as sent. Near misses are left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_SECRET_PATTERNS, scrubSecretPatterns, secretPatternsNamed } from '../../router/secret-patterns.js';
import { harness, request } from './harness.js';

const SECRETS: Record<string, string> = {
  anthropic_api_key: `sk-ant-api03-${'A1b2_C3d4-'.repeat(9)}xyz`,
  openai_api_key: `sk-proj-${'Zz09_-Yy'.repeat(6)}`,
  cplane_route_token: `cpt1.eyJzdWIiOiJBR0VOVCJ9.${'m'.repeat(43)}`,
  aws_access_key_id: 'AKIAIOSFODNN7EXAMPLE',
  bearer_token: `Bearer ${'t0k3n.'.repeat(6)}`,
  private_key_pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c+Xv\nabc/def=\n-----END RSA PRIVATE KEY-----',
};
const NEAR_MISSES = [
  'sk-ant-short0123456789',
  `sk-${'a'.repeat(31)}`,
  'AKIAIOSFODNN7EXAMPL',
  'Bearer short-token',
  '-----BEGIN RSA PRIVATE KEY-----\nno end line here',
  'cpt1.abc.def',
  'task-ant-not-a-key-at-all',
];

test('each built-in pattern is scrubbed and counted; near misses are not', () => {
  for (const [name, secret] of Object.entries(SECRETS)) {
    const counts: Record<string, number> = {};
    const out = scrubSecretPatterns(`before ${secret} after`, BUILTIN_SECRET_PATTERNS, counts);
    assert.equal(out, `before [REDACTED:${name}] after`, name);
    assert.deepEqual(counts, { [name]: 1 }, name);
  }
  for (const miss of NEAR_MISSES) {
    const counts: Record<string, number> = {};
    assert.equal(scrubSecretPatterns(miss, BUILTIN_SECRET_PATTERNS, counts), miss);
    assert.deepEqual(counts, {});
  }
  // A pattern left out of the config is not applied.
  const counts: Record<string, number> = {};
  const only = secretPatternsNamed(['aws_access_key_id']);
  assert.equal(scrubSecretPatterns(SECRETS.anthropic_api_key as string, only, counts), SECRETS.anthropic_api_key);
  // Many unterminated PEM headers before one footer: located once each, the text never rescanned (was quadratic).
  const hostile = `${'-----BEGIN PRIVATE KEY-----'.repeat(200_000)}-----END PRIVATE KEY-----`;
  const scrubbed = scrubSecretPatterns(hostile, BUILTIN_SECRET_PATTERNS, {});
  // Only the last header opens a block (empty, then the footer); the others are text.
  assert.ok(scrubbed === `${'-----BEGIN PRIVATE KEY-----'.repeat(199_999)}[REDACTED:private_key_pem]`);
  const unterminated = '-----BEGIN PRIVATE KEY-----'.repeat(200_000);
  assert.ok(scrubSecretPatterns(unterminated, BUILTIN_SECRET_PATTERNS, {}) === unterminated);
});

test('a secret inside JSON, as a message or the arguments of a tool call (JSON in a JSON string) are recorded, is scrubbed', () => {
  for (const [name, secret] of Object.entries(SECRETS)) {
    const message = JSON.stringify({ role: 'user', content: `here: ${secret} thanks` });
    const call = JSON.stringify({ type: 'tool_use', input: { arguments: JSON.stringify({ key: secret, n: 1 }) } });
    for (const [form, json] of [
      ['message', message],
      ['tool call', call],
    ] as const) {
      const counts: Record<string, number> = {};
      const out = scrubSecretPatterns(json, BUILTIN_SECRET_PATTERNS, counts);
      assert.deepEqual(counts, { [name]: 1 }, `${name} in a ${form}: ${out}`);
      assert.ok(out.includes(`[REDACTED:${name}]`), `${name} in a ${form}`);
      // Still JSON: the marker takes the secret's place inside its string.
      assert.doesNotThrow(() => JSON.parse(out), `${name} in a ${form}`);
    }
  }
});

test('a secret at the start of a line, after a tab or a control character, is scrubbed in the JSON a conversation is recorded as', () => {
  for (const [name, secret] of Object.entries(SECRETS)) {
    for (const before of ['\n', '\r\n', '\t', '\u001b', '\n\n']) {
      const json = JSON.stringify({ role: 'user', content: `my key:${before}${secret}\nthanks` });
      const counts: Record<string, number> = {};
      const out = scrubSecretPatterns(json, BUILTIN_SECRET_PATTERNS, counts);
      assert.deepEqual(counts, { [name]: 1 }, `${name} after ${JSON.stringify(before)}: ${out}`);
      assert.doesNotThrow(() => JSON.parse(out));
    }
  }
  // A word that merely ends in a prefix is still not a secret, escaped or not.
  for (const miss of [`task-${'a'.repeat(40)}`, `XAKIAIOSFODNN7EXAMPLE`, `nobearer ${'t'.repeat(30)}`]) {
    for (const text of [miss, JSON.stringify({ content: `x\n${miss}` })]) {
      const counts: Record<string, number> = {};
      assert.equal(scrubSecretPatterns(text, BUILTIN_SECRET_PATTERNS, counts), text);
      assert.deepEqual(counts, {});
    }
  }
});

test('route(): the EXCHANGE stores markers and counts them; the provider got the prompt as sent', async (t) => {
  const h = harness(t, { script: [{ text: `echo ${SECRETS.openai_api_key}` }] });
  const prompt = `keys: ${Object.values(SECRETS).join(' | ')} and ${NEAR_MISSES[0]}`;
  const res = await h.router.route(request({ prompt }));
  assert.equal(res.outcome, 'success', JSON.stringify(res));
  assert.equal(
    JSON.stringify(h.provider.calls[0]?.request).includes(JSON.stringify(prompt).slice(1, -1)),
    true,
    'the upstream request is not altered',
  );
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  const stored = `${exchange?.metadata.prompt} ${exchange?.metadata.response}`;
  for (const [name, secret] of Object.entries(SECRETS)) {
    assert.ok(!stored.includes(secret), name);
    assert.match(stored, new RegExp(`\\[REDACTED:${name}\\]`));
  }
  assert.ok(stored.includes(NEAR_MISSES[0] as string));
  assert.deepEqual(exchange?.metadata.secrets_scrubbed, {
    anthropic_api_key: 1,
    aws_access_key_id: 1,
    bearer_token: 1,
    cplane_route_token: 1,
    openai_api_key: 2,
    private_key_pem: 1,
  });
});
