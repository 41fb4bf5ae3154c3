import { test } from 'node:test';
import assert from 'node:assert/strict';
import { priceFor, readUsage, reservationCost, totalTokens, usageCost } from '../../budgeter/pricing.js';
import { testConfig } from './helpers.js';

const config = testConfig();
const price = priceFor(config, 'm1');

test('each usage bucket is priced at its own per-million rate, in integer nano-units', () => {
  const reading = readUsage({
    input_tokens: 1000,
    output_tokens: 500,
    cache_read_tokens: 10_000,
    cache_write_5m_tokens: 2000,
    cache_write_1h_tokens: 3000,
  });
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

test('usage that is missing, negative, fractional, NaN, a string or too large is unknown, with the reason', () => {
  assert.deepEqual(readUsage(null), { known: false, problems: ['usage missing'] });
  assert.deepEqual(readUsage([1, 2]), { known: false, problems: ['usage missing'] });
  assert.deepEqual(readUsage({ output_tokens: 3 }), { known: false, problems: ['input_tokens missing'] });
  assert.deepEqual(readUsage({ input_tokens: -1, output_tokens: 3 }), {
    known: false,
    problems: ['input_tokens not a token count (-1)'],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2.5 }), {
    known: false,
    problems: ['output_tokens not a token count (2.5)'],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: Number.NaN }), {
    known: false,
    problems: ['output_tokens not a token count (NaN)'],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: Infinity }), {
    known: false,
    problems: ['output_tokens not a token count (Infinity)'],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2 ** 53 }), {
    known: false,
    problems: [`output_tokens not a token count (${2 ** 53})`],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2, cache_read_tokens: '7' }), {
    known: false,
    problems: ['cache_read_tokens not a token count (a string)'],
  });
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 2, cache_read_tokens: null }).known, true);
  assert.deepEqual(readUsage({ input_tokens: 1, output_tokens: 1001 }, 1000), {
    known: false,
    problems: ['output_tokens 1001 beyond the maximum 1000'],
  });
  assert.equal(readUsage({ input_tokens: 1, output_tokens: 1000 }, 1000).known, true, 'the maximum itself is a count');
  const max = Number.MAX_SAFE_INTEGER;
  assert.deepEqual(readUsage({ input_tokens: max, output_tokens: max }), {
    known: false,
    problems: [`total tokens ${max * 2} beyond ${max}`],
  });
  const inherited = Object.create({ input_tokens: 5, output_tokens: 5 }) as object;
  assert.equal(readUsage(inherited).known, false, 'inherited fields are not usage');
});

test('a reservation prices the input bound at the highest input-side rate, plus the rounding of five buckets', () => {
  assert.equal(reservationCost(price, 1000, 100), 1000 * 4 * 1000 + 100 * 10 * 1000 + 5);
  assert.equal(reservationCost(null, 1000, 100), null);
  const free = {
    input_per_mtok: 0,
    output_per_mtok: 0,
    cache_read_per_mtok: 0,
    cache_write_5m_per_mtok: 0,
    cache_write_1h_per_mtok: 0,
  };
  assert.equal(reservationCost(free, 1000, 100), 0);
});

test('no usage within the bound costs more than its reservation, whatever buckets the input tokens land in', () => {
  // A fixed-seed sweep (deterministic): odd prices whose products round in every direction.
  let seed = 42;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const prices = [
    price as NonNullable<typeof price>,
    {
      input_per_mtok: 3.3333,
      output_per_mtok: 15.7,
      cache_read_per_mtok: 0.3001,
      cache_write_5m_per_mtok: 3.75,
      cache_write_1h_per_mtok: 6.0001,
    },
    {
      input_per_mtok: 0.0001,
      output_per_mtok: 0.0003,
      cache_read_per_mtok: 0.00001,
      cache_write_5m_per_mtok: 0.00017,
      cache_write_1h_per_mtok: 0.00013,
    },
  ];
  for (let i = 0; i < 3000; i += 1) {
    const p = prices[i % prices.length] as NonNullable<typeof price>;
    const bound = 1 + next(5_000_000);
    const maxOut = 1 + next(100_000);
    const parts = [next(bound + 1), next(bound + 1), next(bound + 1), next(bound + 1)].sort((a, b) => a - b);
    const [a, b, c, d] = parts as [number, number, number, number];
    const usage = {
      input_tokens: a,
      cache_read_tokens: b - a,
      cache_write_5m_tokens: c - b,
      cache_write_1h_tokens: d - c,
      output_tokens: next(maxOut + 1),
    };
    const reading = readUsage(usage);
    assert.ok(reading.known);
    const cost = usageCost(p, reading.usage) as number;
    const reserved = reservationCost(p, bound, maxOut) as number;
    assert.ok(
      cost <= reserved,
      `usage ${JSON.stringify(usage)} costs ${cost} > reserved ${reserved} (bound ${bound}, max ${maxOut})`,
    );
  }
});
