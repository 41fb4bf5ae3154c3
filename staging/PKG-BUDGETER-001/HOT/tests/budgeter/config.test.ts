import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBudgetConfig, parseBudgetConfig } from '../../budgeter/index.js';
import { tempDir, testConfig } from './helpers.js';

const SHIPPED = new URL('../../config/budget.json', import.meta.url);

function configError(value: unknown): { code: string; pointer: unknown; message: string } {
  try {
    parseBudgetConfig(value, 'test');
  } catch (error) {
    const e = error as { code: string; details: { pointer: unknown }; message: string };
    return { code: e.code, pointer: e.details.pointer, message: e.message };
  }
  assert.fail('config was accepted');
}

test('the shipped default config validates, prices the mock model and enforces', () => {
  const config = parseBudgetConfig(JSON.parse(readFileSync(SHIPPED, 'utf8')));
  assert.equal(config.mode, 'enforce');
  assert.ok(config.pricing.mock, 'mock model is priced');
  assert.ok((config.limits.session?.default?.max_tokens ?? 0) > 0);
});

test('a negative price is refused with the JSON pointer of the price', () => {
  const bad = testConfig();
  (bad.pricing.m1 as { output_per_mtok: number }).output_per_mtok = -1;
  const e = configError(bad);
  assert.equal(e.code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(e.pointer, '/pricing/m1/output_per_mtok');
  assert.match(e.message, /\/pricing\/m1\/output_per_mtok/);
});

test('an unknown field, a bad mode and a fractional token limit are each refused where they are', () => {
  assert.equal(configError({ ...testConfig(), surprise: 1 }).pointer, '/');
  assert.match(configError({ ...testConfig(), surprise: 1 }).message, /unknown field "surprise"/);
  assert.equal(configError({ ...testConfig(), mode: 'lenient' }).pointer, '/mode');
  assert.equal(
    configError(testConfig({ limits: { agent: { default: { max_tokens: 1.5 } } } })).pointer,
    '/limits/agent/default/max_tokens',
  );
  assert.equal(
    configError(testConfig({ rate_limits: { session: { window_ms: 0, max_requests: 1 } } })).pointer,
    '/rate_limits/session/window_ms',
  );
  const missingPrice = testConfig();
  delete (missingPrice.pricing.m1 as Partial<{ cache_read_per_mtok: number }>).cache_read_per_mtok;
  assert.equal(configError(missingPrice).pointer, '/pricing/m1');
});

test('a config file that is missing or not JSON is the same coded error', (t) => {
  const dir = tempDir(t);
  assert.throws(() => loadBudgetConfig(join(dir, 'absent.json')), { code: 'ERR_BUDGET_CONFIG_INVALID' });
  writeFileSync(join(dir, 'broken.json'), '{"mode": ');
  assert.throws(() => loadBudgetConfig(join(dir, 'broken.json')), {
    code: 'ERR_BUDGET_CONFIG_INVALID',
    message: /not JSON/,
  });
  writeFileSync(join(dir, 'ok.json'), JSON.stringify(testConfig()));
  assert.equal(loadBudgetConfig(join(dir, 'ok.json')).currency, 'USD');
});

test('a period that is no period, or a 3-day period from a day that does not exist, is refused where it is', () => {
  assert.equal(configError(testConfig({ limits: { key: { period: 'year' as 'day' } } })).pointer, '/limits/key/period');
  assert.equal(
    configError(testConfig({ limits: { key: { by_id: { t: { max_tokens: 1, period: { days: 0 } } } } } })).pointer,
    '/limits/key/by_id/t/period',
  );
  const e = configError(
    testConfig({ limits: { key: { by_id: { t: { max_tokens: 1, period: { days: 3, from: '2026-02-30' } } } } } }),
  );
  assert.equal(e.code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(e.pointer, '/limits/key/by_id/t/period/from');
  assert.match(e.message, /"2026-02-30" is no date/);
});
