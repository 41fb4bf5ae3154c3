// Each append commits at the level it asks for: a lazy one under synchronous=NORMAL, a durable one under the
// connection's FULL, however lazy and durable appends interleave (the level is switched only when it changes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Ledger } from '../../../kernel/ledger/index.js';
import { tempLedger } from './helpers.js';

/** The synchronous level each inserted entry was written under, read inside its own transaction by a temp trigger. */
function recordLevels(ledger: Ledger): () => [string, number][] {
  ledger.db.exec(`CREATE TEMP TABLE levels (submission_id TEXT, level INTEGER);
    CREATE TEMP TRIGGER level_at_insert AFTER INSERT ON main.entries BEGIN
      INSERT INTO levels VALUES (NEW.submission_id, (SELECT synchronous FROM pragma_synchronous()));
    END;`);
  return () => ledger.db.prepare('SELECT submission_id, level FROM levels').raw().all() as [string, number][];
}

const note = (id: string) => ({
  event_type: 'NOTE',
  submission_id: id,
  decision: 'NOTED',
  reason: 'test',
  metadata: {},
});

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
