// Each append commits at the level it asks for: a lazy one under synchronous=NORMAL, a durable one under the
// connection's FULL, however lazy and durable appends interleave (the level is switched only when it changes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { levelNote as note, recordLevels, tempLedger } from './helpers.js';

test('lazy appends commit under NORMAL and durable ones under FULL, in any order, and are counted apart', (t) => {
  const ledger = tempLedger(t);
  const levels = recordLevels(ledger);
  const plan: [string, boolean][] = [
    ['lazy-1', false],
    ['lazy-2', false],
    ['durable-1', true],
    ['lazy-3', false],
    ['durable-2', true],
    ['durable-3', true],
    ['lazy-4', false],
  ];
  for (const [id, durable] of plan) ledger.appendBatch([note(id)], { durable });
  assert.deepEqual(
    levels(),
    plan.map(([id, durable]) => [id, durable ? 2 : 1]),
  );
  assert.deepEqual(ledger.commitCount, { durable: 3, lazy: 4 });
  ledger.append(note('durable-4'));
  assert.equal(ledger.db.pragma('synchronous', { simple: true }), 2, 'a durable append leaves the connection at FULL');
});

test('a connection opened at NORMAL commits every append under NORMAL', (t) => {
  const ledger = tempLedger(t, { synchronous: 'NORMAL' });
  const levels = recordLevels(ledger);
  ledger.appendBatch([note('a')], { durable: false });
  ledger.append(note('b'));
  assert.deepEqual(levels(), [
    ['a', 1],
    ['b', 1],
  ]);
});
