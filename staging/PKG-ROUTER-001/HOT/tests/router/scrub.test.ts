// scrubRecords reads each string once for the patterns' anchors and runs the patterns only where one is found:
// the records come out as the patterns alone would leave them, and an untouched record is the same object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AppendInput } from '#kernel/ledger/index.js';
import { scrubRecords } from '../../router/scrub.js';
import { BUILTIN_SECRET_PATTERNS, scrubSecretPatterns, type SecretPattern } from '../../router/secret-patterns.js';

const exchange = (prompt: string): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: 'PRC-1',
  decision: 'SUCCESS',
  reason: 'Exchange completed',
  metadata: { agent_id: 'AGENT-1', outcome: 'success' },
  content: { prompt: ['{"system":"be brief"}', prompt], response: ['ok'] },
});

test('a record holding no anchor and no secret is returned as it is', () => {
  const record = exchange(`${'the quick brown fox jumps over sks- and cpt1 '.repeat(2000)}`);
  const [clean] = scrubRecords([record], ['a-long-caller-secret-0123']);
  assert.equal(clean, record);
});

test('every built-in anchor lets its pattern run, and the result is what the patterns alone give', () => {
  const samples = [
    `key sk-ant-api03-${'A1b2_C3d4-'.repeat(9)}xyz here`,
    `key sk-proj-${'Zz09_-Yy'.repeat(6)} here`,
    `token cpt1.eyJzdWIiOiJBR0VOVCJ9.${'m'.repeat(43)} here`,
    'id AKIAIOSFODNN7EXAMPLE and ASIAIOSFODNN7EXAMPLE here',
    `auth: Bearer ${'t0k3n.'.repeat(6)} and bearer ${'t0k3n.'.repeat(6)}`,
    '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c+Xv\nabc/def=\n-----END RSA PRIVATE KEY-----',
  ];
  for (const sample of samples) {
    const expected: Record<string, number> = {};
    const want = scrubSecretPatterns(sample, BUILTIN_SECRET_PATTERNS, expected);
    assert.notEqual(want, sample, sample);
    const [clean] = scrubRecords([exchange(sample)], []);
    assert.equal(clean?.content?.prompt[1], want);
    assert.deepEqual(clean?.metadata?.secrets_scrubbed, expected);
  }
});

test('anchors are searched as literal text, whatever characters they hold', () => {
  const odd: SecretPattern = {
    name: 'odd',
    anchors: ['a.b(c)[d]*+?^$|\\/-'],
    scrub: (text, mark) => text.split('a.b(c)[d]*+?^$|\\/-').join(mark()),
  };
  const patterns = [odd];
  const [hit] = scrubRecords([exchange('x a.b(c)[d]*+?^$|\\/- y')], [], patterns);
  assert.equal(hit?.content?.prompt[1], 'x [REDACTED:odd] y');
  const near = exchange('x aXb(c)[d]*+?^$|\\/- y');
  assert.equal(scrubRecords([near], [], patterns)[0], near);
  const none = exchange('x a.b(c)[d]*+?^$|\\/- y');
  assert.equal(scrubRecords([none], [], [])[0], none);
});

test('secrets are redacted and lone surrogates made well-formed wherever no anchor is', () => {
  const [clean] = scrubRecords(
    [exchange('pasted a-long-caller-secret-0123 and \ud800 half')],
    ['a-long-caller-secret-0123'],
  );
  assert.equal(clean?.content?.prompt[1], 'pasted [REDACTED] and \ufffd half');
  assert.equal(clean?.metadata?.secrets_scrubbed, undefined);
});
