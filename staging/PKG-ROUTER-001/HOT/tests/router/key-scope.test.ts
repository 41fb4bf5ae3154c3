// Every verified key is a budget scope: its budget_scope, else its own id. A per-key rate limit therefore holds
// however many session ids a client invents, and keys sharing a budget_scope share its limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { drawKeyId, issueToken, KEY_ID } from '../../router/auth.js';
import { harness, request } from './harness.js';

const shipped = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'config', 'budget.json'), 'utf8'),
) as Record<string, unknown>;
const KEYS = { default: 'test-secret-0123456789abcdef' };

test('rate_limits.key: a key rotating session ids is still held to its rate; another key is not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-keyscope-'));
  const budget = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...shipped, rate_limits: { key: { window_ms: 60_000, max_requests: 3 } } } as never,
  });
  t.after(() => {
    budget.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const h = harness(t, { router: { budget, devMode: false, authKeys: KEYS } });
  const now = Math.floor(h.now.ms / 1000);
  const mint = (jti: string, extra: Record<string, unknown> = {}) =>
    issueToken({ sub: 'AGENT-1', scopes: ['route:*'], iat: now, exp: now + 3600, jti, ...extra }, KEYS);
  const a = mint('key-a-0123456789abcdef');
  const outcomes: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await h.router.route(
      request({ auth_token: a, session_id: `SES-ROTATE-${i}`, model_id: 'mock-model-1' }),
    );
    outcomes.push(res.error_code ?? res.outcome);
  }
  assert.deepEqual(outcomes, ['success', 'success', 'success', 'RATE_LIMITED']);
  const b = mint('key-b-0123456789abcdef');
  const other = await h.router.route(request({ auth_token: b, session_id: 'SES-ROTATE-9', model_id: 'mock-model-1' }));
  assert.equal(other.outcome, 'success');
  const scopes = budget.status().scopes.filter((s) => s.scope === 'key');
  assert.deepEqual(scopes.map((s) => [s.scope_id, s.requests]).sort(), [
    ['key:key-a-0123456789abcdef', 3],
    ['key:key-b-0123456789abcdef', 1],
  ]);
});

test('a new key id never starts with "-" or "_" (a `--key-id -…` would be read as an option): such a draw is drawn again', () => {
  const draws = [
    Buffer.from([0xf8, ...Array(15).fill(1)]),
    Buffer.from([0xfc, ...Array(15).fill(2)]),
    Buffer.alloc(16, 7),
  ];
  assert.equal(draws[0]?.toString('base64url')[0], '-');
  assert.equal(draws[1]?.toString('base64url')[0], '_');
  let n = 0;
  const id = drawKeyId(() => draws[n++] as Buffer);
  assert.equal(n, 3);
  assert.equal(id, Buffer.alloc(16, 7).toString('base64url'));
  assert.match(id, KEY_ID);
});
