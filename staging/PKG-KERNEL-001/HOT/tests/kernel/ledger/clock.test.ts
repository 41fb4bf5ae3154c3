import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  DEFAULT_MAX_CLOCK_SKEW_MS,
  Ledger,
  listFutureDated,
  verifyLedger,
  type AppendInput,
} from '../../../kernel/ledger/index.js';
import { tempDir } from './helpers.js';

const REAL = Date.parse('2026-06-01T12:00:00.000Z');
const HOUR = 3_600_000;
const ENTRY: AppendInput = { event_type: 'DISPATCH', submission_id: 'S', decision: 'OK', reason: 'r' };

test('an append whose clock runs more than the allowed skew ahead of real time is refused, and nothing is written', (t) => {
  const path = join(tempDir(t), 'l.sqlite');
  const ahead = Ledger.open(path, {
    create: true,
    clock: () => REAL + DEFAULT_MAX_CLOCK_SKEW_MS + 1,
    realClock: () => REAL,
  });
  t.after(() => ahead.close());
  assert.throws(() => ahead.append(ENTRY), { code: 'ERR_LEDGER_CLOCK_SKEW' });
  assert.throws(() => ahead.appendBatch([ENTRY, ENTRY]), { code: 'ERR_LEDGER_CLOCK_SKEW' });
  assert.equal(ahead.count(), 0);
  // Within the skew it is accepted as it always was.
  const close = Ledger.open(path, { clock: () => REAL + DEFAULT_MAX_CLOCK_SKEW_MS, realClock: () => REAL });
  t.after(() => close.close());
  assert.equal(close.append(ENTRY).timestamp, new Date(REAL + DEFAULT_MAX_CLOCK_SKEW_MS).toISOString());
  // A non-finite clock is refused too.
  const broken = Ledger.open(path, { clock: () => Number.NaN, realClock: () => REAL });
  t.after(() => broken.close());
  assert.throws(() => broken.append(ENTRY), { code: 'ERR_LEDGER_CLOCK_SKEW' });
});

test('the allowed skew is an option with bounds', (t) => {
  const path = join(tempDir(t), 'l.sqlite');
  for (const bad of [0, 999, 24 * HOUR + 1, 1.5, Number.NaN]) {
    assert.throws(
      () => Ledger.open(path, { create: true, maxClockSkewMs: bad }),
      { code: 'ERR_LEDGER_OPTION_INVALID' },
      String(bad),
    );
  }
  const wide = Ledger.open(path, {
    create: true,
    maxClockSkewMs: 2 * HOUR,
    clock: () => REAL + HOUR,
    realClock: () => REAL,
  });
  t.after(() => wide.close());
  assert.equal(wide.append(ENTRY).timestamp, new Date(REAL + HOUR).toISOString());
});

test('a future-dated head does not drag later timestamps with it; time queries still find them; G4/G6 helpers report it', (t) => {
  const path = join(tempDir(t), 'l.sqlite');
  // A writer allowed a wide skew whose clock runs 10 hours ahead leaves one DISPATCH dated in the future.
  const fast = Ledger.open(path, {
    create: true,
    maxClockSkewMs: 24 * HOUR,
    clock: () => REAL + 10 * HOUR,
    realClock: () => REAL,
  });
  const future = fast.append(ENTRY);
  fast.close();
  let now = REAL;
  const honest = Ledger.open(path, { clock: () => (now += 1000), realClock: () => now });
  t.after(() => honest.close());
  const later = honest.appendBatch([ENTRY, ENTRY]);
  assert.deepEqual(
    later.map((e) => e.timestamp),
    [new Date(REAL + 1000).toISOString(), new Date(REAL + 2000).toISOString()],
  );
  const next = honest.append(ENTRY);
  assert.equal(next.timestamp, new Date(REAL + 3000).toISOString());
  assert.equal(verifyLedger(honest).ok, true);
  assert.deepEqual(honest.schemaProblems, [], 'the timestamp index it needed is part of the schema');
  // Time ranges no longer follow chain order: they are served by the timestamp index.
  const range = honest.query({
    since: new Date(REAL).toISOString(),
    until: new Date(REAL + 5000).toISOString(),
    order: 'oldest',
  });
  assert.deepEqual(
    range.map((e) => e.id),
    [...later.map((e) => e.id), next.id],
  );
  assert.deepEqual(
    listFutureDated(honest, { now: REAL }).map((e) => e.id),
    [future.id],
  );
  assert.deepEqual(
    listFutureDated(honest, { now: REAL + 10 * HOUR }),
    [],
    'not future relative to a clock that has caught up',
  );
});
