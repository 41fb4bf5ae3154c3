// Rate limits through `cplane serve`: a key's 6th request in a minute at 5 requests a minute is answered 429 with
// retry-after while another key is served; a 60-turn agent session of ~100 KB requests completes under a token
// window sized for its real usage, because the window holds each turn's settled usage, not its reservation.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { budgetEntries, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

async function ask(
  served: Served,
  key: string,
  session: string,
  content: string,
  maxTokens = 64,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': session,
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('requests per minute per key', { concurrency: false }, () => {
  let served: Served;
  before(async () => {
    served = await startServed([], (root) => {
      configSet(root, 'budget.rate_limits.key', '{"window_ms": 60000, "max_requests": 5, "max_in_flight": 2}');
    });
  });
  after(async () => {
    await served.cleanup();
  });

  test("a key's 6th request in a minute is 429 with retry-after, another key is served", async () => {
    const a = issueKey('AGENT-RPM-A');
    const b = issueKey('AGENT-RPM-B');
    for (let i = 0; i < 5; i += 1)
      assert.equal((await ask(served, a, 'SES-RPM-A', 'Hi')).status, 200, `request ${i + 1}`);
    const sixth = await ask(served, a, 'SES-RPM-A', 'Hi');
    assert.equal(sixth.status, 429, sixth.text);
    assert.match(sixth.text, /RATE_LIMITED/);
    assert.match(sixth.text, /key key:\S+ max_requests 5/);
    const retry = Number(sixth.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `retry-after ${sixth.headers.get('retry-after')}`);
    assert.equal((await ask(served, b, 'SES-RPM-B', 'Hi')).status, 200, 'another key is served');
  });

  test('with max_in_flight 2 the third concurrent call of a key is 429; a call that ends frees its place', async () => {
    const c = issueKey('AGENT-INFLIGHT');
    let open = (): void => {};
    served.upstream.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const held = [ask(served, c, 'SES-INFLIGHT', 'one'), ask(served, c, 'SES-INFLIGHT', 'two')];
    while (
      served.upstream.requests.filter(
        (r) => JSON.stringify(r.body).includes('"one"') || JSON.stringify(r.body).includes('"two"'),
      ).length < 2
    )
      await new Promise((r) => setTimeout(r, 20));
    const third = await ask(served, c, 'SES-INFLIGHT', 'three');
    assert.equal(third.status, 429, third.text);
    assert.match(third.text, /max_in_flight 2: used 2 in flight/);
    assert.equal(third.headers.get('retry-after'), '1');
    open();
    served.upstream.gate = null;
    for (const r of await Promise.all(held)) assert.equal(r.status, 200, r.text);
    assert.equal((await ask(served, c, 'SES-INFLIGHT', 'four')).status, 200, 'the calls ended: places are free');
  });
});

describe('a token window charged what was used', { concurrency: false }, () => {
  let served: Served;
  const WINDOW = 150_000;
  before(async () => {
    served = await startServed(['--body-limit', String(4 * 1024 * 1024)], (root) => {
      configSet(root, 'budget.rate_limits.session.window_ms', '3600000');
      configSet(root, 'budget.rate_limits.session.max_tokens', String(WINDOW));
    });
  });
  after(async () => {
    await served.cleanup();
  });

  test('60 turns of ~100 KB each complete; the window shows the settled usage', async () => {
    const key = issueKey('AGENT-TURNS');
    const session = 'SES-SIXTY-TURNS';
    // Each turn reserves ~100k tokens (its bytes), and two turns' reservations would not fit the window together.
    for (let turn = 0; turn < 60; turn += 1) {
      const body = `turn ${turn}: ${'x'.repeat(100_000)}`;
      const r = await ask(served, key, session, body);
      assert.equal(r.status, 200, `turn ${turn + 1}: ${r.text.slice(0, 300)}`);
    }
    const exchanges = ledgerEntries(served.root).filter(
      (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
    );
    assert.equal(exchanges.length, 60);
    const settled = budgetEntries(served.root)
      .filter((e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.session_id === session)
      .reduce((n, e) => n + (e.metadata.charged_tokens as number), 0);
    assert.ok(settled > 0 && settled < WINDOW, `settled ${settled}`);
    // A request too large for what is left: its refusal says what the window holds, the settled usage alone.
    const over = await ask(served, key, session, 'x'.repeat(WINDOW - settled));
    assert.equal(over.status, 429, over.text);
    assert.match(over.text, new RegExp(`used ${settled} in this window`));
  });
});
