// The Gemini provider under the router's one pipeline (`cplane route`): the wait Google's RetryInfo asks for is the
// wait the retry loop takes, and the EXCHANGE holds the usage of the reply that answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger } from '#kernel/ledger/index.js';
import { loadRouterConfig } from '#router/config.js';
import { Router } from '#router/router.js';
import { GeminiProvider } from '../../providers/gemini/provider.js';
import { GeminiServer, geminiErrors } from './fixtures/gemini-server.js';

const KEY = 'AIzaSyROUTE-gemini-key-0123456789';

test('cplane route on Gemini: a 429 RetryInfo wait is honoured, then one EXCHANGE with the exact usage', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-gemini-route-'));
  const server = await GeminiServer.start(KEY);
  const now = { ms: Date.parse('2026-03-01T12:00:00Z') };
  const clock = (): number => now.ms;
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, clock, synchronous: 'OFF' });
  t.after(async () => {
    ledger.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const sleeps: number[] = [];
  const router = new Router({
    ledger,
    config: loadRouterConfig(undefined, { default_provider: 'gemini', default_model: 'gemini-2.5-flash' }),
    providers: [new GeminiProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock: { now: clock } })],
    devMode: true,
    clock,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
      now.ms += ms;
    },
    spoolDir: join(dir, 'spool'),
  });
  server.push(
    { status: 429, body: geminiErrors.rateLimited('3s') },
    { answer: { text: 'Blue.', usage: { prompt: 30, cached: 20, candidates: 2, thoughts: 8 }, responseId: 'resp-r' } },
  );
  const res = await router.route({
    prompt: 'What colour is the sky?',
    contract_id: 'PRC-TEST-001',
    agent_id: 'AGENT-1',
    session_id: 'SES-1',
    work_order_id: 'WO-1',
    tier: 'hot',
    framework_id: 'FMWK-000',
    prompt_pack_id: 'PRM-TEST-001',
    agent_class: 'ADMIN',
    package_id: 'PKG-TEST',
  });
  assert.equal(res.outcome, 'success');
  assert.deepEqual(sleeps, [3000], "the retry waited exactly Google's RetryInfo delay");
  assert.equal(server.seen.length, 2);
  assert.equal(server.seen[1]?.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  const exchanges = ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchanges.length, 1);
  const md = exchanges[0]?.metadata ?? {};
  assert.equal(md.response, 'Blue.');
  assert.deepEqual(
    [md.input_tokens, md.output_tokens, md.cache_read_tokens, md.cache_write_tokens],
    [30, 10, 20, 0],
    'input with its cached part, output with its thinking, no cache writes',
  );
  assert.deepEqual(
    (md.attempts as Array<{ status: number | null; outcome: string }>).map((a) => [a.status, a.outcome]),
    [
      [429, 'error'],
      [null, 'success'],
    ],
  );
});
