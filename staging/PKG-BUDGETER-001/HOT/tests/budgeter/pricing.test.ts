import { test } from 'node:test';
import assert from 'node:assert/strict';
import { priceFor, readUsage, reservationCost, totalTokens, usageCost } from '../../budgeter/pricing.js';
import { testConfig } from './helpers.js';

const config = testConfig();
const price = priceFor(config, 'm1');

test('each usage bucket is priced at its own per-million rate, in integer nano-units', () => {
  const reading = readUsage({ input_tokens: 1000, output_tokens: 500, cache_read_tokens: 10_000, cache_write_5m_tokens: 2000, cache_write_1h_tokens: 3000 });
  assert.ok(reading.known);
  // 1000*2 + 500*10 + 10000*0.2 + 2000*2.5 + 3000*4 = 2000+5000+2000+5000+12000 = 26000 per-million units = $0.026
  assert.equal(usageCost(price, reading.usage), 26_000_000);
  assert.equal(totalTokens(reading.usage), 16_500);
});

test('a cache write without a TTL split is priced as a 5-minute write', () => {
  const reading = readUsage({ input_tokens: 0, output_tokens: 0, cache_write_tokens: 1_000_000 });
  assert.ok(reading.known);
  assert.equal(reading.usage.cache_write_5m_tokens, 1_000_000);
  assert.equal(usageCost(price, reading.usage), 2_500_000_000);
});

test('an unpriced model has an unknown cost, never 0', () => {
  const reading = readUsage({ input_tokens: 10, output_tokens: 10 });
  assert.ok(reading.known);
  assert.equal(priceFor(config, 'nobody-priced-me'), null);
  assert.equal(usageCost(priceFor(config, 'nobody-priced-me'), reading.usage), null);
  assert.equal(priceFor(config, 'constructor'), null, 'prototype names are not models');
});

test('usage that is missing, negative, fractional or not a number is unknown, with the reason', () => {
  assert.deepEqual(readUsage(null), { known: false, problems: ['usage missing'] });
  assert.deepEqual(readUsage({ output_tokens: 3 }), { known: false, problems: ['input_tokens missing'] });
  assert.deepEqual(readUsage({ input_tokens: -1, output_tokens: 3 }), { known: false, problems: ['input_tokens not a token count'] });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2.5 }), { known: false, problems: ['output_tokens not a token count'] });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2, cache_read_tokens: '7' }), { known: false, problems: ['cache_read_tokens not a token count'] });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2, cache_read_tokens: null }).known, true);
});

test('a reservation prices estimated input at the uncached rate, or the highest input-side rate when configured', () => {
  assert.equal(reservationCost(config, price, 1000, 100), 1000 * 2 * 1000 + 100 * 10 * 1000);
  assert.equal(reservationCost({ ...config, reserve_input_price: 'highest' }, price, 1000, 100), 1000 * 4 * 1000 + 100 * 10 * 1000);
  assert.equal(reservationCost(config, null, 1000, 100), null);
});
