import { test } from 'node:test';
import assert from 'node:assert/strict';
import { periodAt } from '../../budgeter/periods.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const span = (p: Parameters<typeof periodAt>[0], at: string): [string, string, string] => {
  const s = periodAt(p, Date.parse(at));
  return [iso(s.start), iso(s.end), s.label];
};

test('months follow the UTC calendar: 28, 29, 30 and 31 days, the last millisecond still in the month', () => {
  assert.deepEqual(span('month', '2026-02-28T23:59:59.999Z'), [
    '2026-02-01T00:00:00.000Z',
    '2026-03-01T00:00:00.000Z',
    '2026-02-01',
  ]);
  assert.deepEqual(span('month', '2028-02-29T12:00:00.000Z').slice(0, 2), [
    '2028-02-01T00:00:00.000Z',
    '2028-03-01T00:00:00.000Z',
  ]);
  assert.deepEqual(span('month', '2026-12-31T23:00:00.000Z').slice(0, 2), [
    '2026-12-01T00:00:00.000Z',
    '2027-01-01T00:00:00.000Z',
  ]);
  assert.equal(span('month', '2027-01-01T00:00:00.000Z')[2], '2027-01-01');
});

test('weeks start on Monday (ISO), days at UTC midnight', () => {
  // 2026-01-04 is a Sunday, 2026-01-05 a Monday.
  assert.deepEqual(span('week', '2026-01-04T23:59:59.000Z').slice(0, 2), [
    '2025-12-29T00:00:00.000Z',
    '2026-01-05T00:00:00.000Z',
  ]);
  assert.equal(span('week', '2026-01-05T00:00:00.000Z')[0], '2026-01-05T00:00:00.000Z');
  assert.deepEqual(span('day', '2026-03-10T05:00:00.000Z').slice(0, 2), [
    '2026-03-10T00:00:00.000Z',
    '2026-03-11T00:00:00.000Z',
  ]);
});

test('every N days counts from its date (the epoch by default), before it too', () => {
  assert.deepEqual(span({ days: 14, from: '2026-01-05' }, '2026-01-19T00:00:00.000Z').slice(0, 2), [
    '2026-01-19T00:00:00.000Z',
    '2026-02-02T00:00:00.000Z',
  ]);
  assert.deepEqual(span({ days: 14, from: '2026-01-05' }, '2026-01-04T10:00:00.000Z').slice(0, 2), [
    '2025-12-22T00:00:00.000Z',
    '2026-01-05T00:00:00.000Z',
  ]);
  assert.equal(span({ days: 1 }, '2026-03-10T05:00:00.000Z')[0], '2026-03-10T00:00:00.000Z');
  assert.equal(periodAt({ days: 30 }, Date.parse('2026-03-10T05:00:00.000Z')).every, '30 days');
});
