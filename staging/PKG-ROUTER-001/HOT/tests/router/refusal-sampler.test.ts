// Refusals anyone can provoke without a key are recorded at a bounded rate and counted past it; refusals of an
// authentic key are always recorded; the counts reach the ledger in one REFUSALS_SUPPRESSED record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../router/auth.js';
import { RefusalSampler } from '../../router/refusal-sampler.js';
import { verifyLedger } from '#kernel/ledger/index.js';
import { harness, request } from './harness.js';

const KEYS = { default: 'test-secret-0123456789abcdef' };

test('the sampler is a token bucket: a burst of perSecond, then perSecond a second; the rest counted per code', () => {
  const now = { ms: 0 };
  const sampler = new RefusalSampler({ perSecond: 5, clock: () => now.ms });
  const first = Array.from({ length: 8 }, () => sampler.admit('AUTH_MISSING'));
  assert.deepEqual(first, [true, true, true, true, true, false, false, false]);
  now.ms += 400;
  assert.deepEqual(
    [sampler.admit('AUTH_MALFORMED'), sampler.admit('AUTH_MALFORMED'), sampler.admit('AUTH_MALFORMED')],
    [true, true, false],
  );
  const summary = sampler.takeSummary();
  assert.equal(summary?.event_type, 'REFUSALS_SUPPRESSED');
  assert.deepEqual(summary?.metadata?.counts, { AUTH_MALFORMED: 1, AUTH_MISSING: 3 });
  assert.equal(summary?.metadata?.total, 4);
  assert.equal(sampler.takeSummary(), null, 'counts reset once summarised');
});

test('a flood without a key: perSecond refusals recorded, the rest counted; the summary rides with the next record', async (t) => {
  const h = harness(t, { router: { devMode: false, authKeys: KEYS } });
  const sampler = new RefusalSampler({ perSecond: 10, clock: () => h.now.ms });
  const flooded = harness(t, { router: { devMode: false, authKeys: KEYS, refusalSampler: sampler } });
  for (let i = 0; i < 100; i++) {
    await flooded.router.route(request());
    await flooded.router.route(request({ auth_token: 'cpt1.junk.junk' }));
    await flooded.router.recordRefusal(request({ auth_token: 'not-a-key' }), 'VALIDATION_FAILED', 'bad body');
  }
  // route() without a sampler records every refusal (its caller is a local process).
  for (let i = 0; i < 30; i++) await h.router.route(request());
  assert.equal(h.ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 30);
  // Same clock tick: a burst of 10 recorded, 290 counted.
  assert.equal(flooded.ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 10);
  assert.equal(sampler.pending, 290);
  // An authentic key refused (wrong agent) is always recorded, and carries the summary with it.
  const token = issueToken({ sub: 'AGENT-OTHER', scopes: ['route:*'], iat: 0, exp: 4_000_000_000 }, KEYS);
  const res = await flooded.router.route(request({ auth_token: token }));
  assert.equal(res.error_code, 'AUTH_WRONG_AGENT');
  const summaries = flooded.ledger.query({ event_type: 'REFUSALS_SUPPRESSED' });
  assert.equal(summaries.length, 1);
  assert.equal(summaries[0]?.metadata.total, 290);
  const counts = summaries[0]?.metadata.counts as Record<string, number>;
  assert.equal(
    Object.values(counts).reduce((a, b) => a + b, 0),
    290,
  );
  assert.ok((counts.AUTH_MISSING ?? 0) > 0 && (counts.VALIDATION_FAILED ?? 0) > 0, JSON.stringify(counts));
  // A malformed body from an authentic key is its sender's, and recorded even while the bucket is empty.
  for (let i = 0; i < 20; i++)
    await flooded.router.recordRefusal(request({ auth_token: 'x' }), 'AUTH_MISSING', 'no key');
  await flooded.router.recordRefusal(request({ auth_token: token }), 'VALIDATION_FAILED', 'bad body from a key holder');
  assert.ok(
    flooded.ledger
      .query({ event_type: 'PROMPT_REJECTED' })
      .some((e) => e.metadata.error_message === 'bad body from a key holder'),
  );
  // A second later the bucket has refilled; at shutdown what is still counted is flushed.
  h.now.ms += 1000;
  await flooded.router.route(request());
  for (let i = 0; i < 15; i++) await flooded.router.route(request());
  assert.ok(await flooded.router.flushRefusals());
  assert.equal(await flooded.router.flushRefusals(), false, 'nothing left to flush');
  const all = flooded.ledger.query({ event_type: 'REFUSALS_SUPPRESSED' });
  const total = all.reduce((n, e) => n + (e.metadata.total as number), 0);
  const recorded = flooded.ledger.query({ event_type: 'PROMPT_REJECTED' }).length;
  // Every refusal is accounted for: recorded one by one or counted in a summary.
  assert.equal(total + recorded, 300 + 1 + 20 + 1 + 16);
  assert.ok(verifyLedger(flooded.ledger).ok);
});
