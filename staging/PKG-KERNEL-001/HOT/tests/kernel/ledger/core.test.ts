import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpError } from '../../../kernel/errors.js';
import {
  Ledger,
  verifyLedger,
  computeEntryHash,
  entryIdValue,
  exportLedger,
  GENESIS_HASH,
  hashInput,
  importLedger,
  ledgerPathForRoot,
  parseAnchor,
  formatAnchor,
} from '../../../kernel/ledger/index.js';
import { appendN, tamper, tempDir, tempLedger } from './helpers.js';

test('golden vector: a fixed entry hashes to a fixed value', () => {
  const entry = {
    id: 'LED-0000abcd',
    event_type: 'EXCHANGE',
    submission_id: 'SUB-1',
    decision: 'RECORDED',
    reason: 'golden',
    metadata: { b: [1, 2.5, 'x'], a: { z: true, y: null }, é: 'ü' },
    timestamp: '2026-01-02T03:04:05.678Z',
    previous_hash: GENESIS_HASH,
  };
  assert.equal(
    hashInput(entry),
    '{"decision":"RECORDED","event_type":"EXCHANGE","id":"LED-0000abcd","metadata":{"a":{"y":null,"z":true},"b":[1,2.5,"x"],"é":"ü"},"previous_hash":"0000000000000000000000000000000000000000000000000000000000000000","reason":"golden","submission_id":"SUB-1","timestamp":"2026-01-02T03:04:05.678Z"}',
  );
  // Cross-checked with `printf '%s' "$HASH_INPUT" | sha256sum`.
  assert.equal(computeEntryHash(entry), '4990f82fb4ba03bce898d67dedbe829bc92b73a43468d93b3f643ca80cc126bc');
});

test('golden vector: a second entry chained to the first', () => {
  const entry = {
    id: 'LED-00000002',
    event_type: 'DISPATCH',
    submission_id: 'C-1',
    decision: 'DISPATCHED',
    reason: 'Dispatching to mock/m1',
    metadata: { contract_id: 'C-1', agent_id: 'A', session_id: 'S' },
    timestamp: '2026-01-02T03:04:06.000Z',
    previous_hash: '4990f82fb4ba03bce898d67dedbe829bc92b73a43468d93b3f643ca80cc126bc',
  };
  // Input written out by hand (keys sorted); hash from `printf '%s' "$INPUT" | sha256sum`.
  assert.equal(
    hashInput(entry),
    '{"decision":"DISPATCHED","event_type":"DISPATCH","id":"LED-00000002","metadata":{"agent_id":"A","contract_id":"C-1","session_id":"S"},"previous_hash":"4990f82fb4ba03bce898d67dedbe829bc92b73a43468d93b3f643ca80cc126bc","reason":"Dispatching to mock/m1","submission_id":"C-1","timestamp":"2026-01-02T03:04:06.000Z"}',
  );
  assert.equal(computeEntryHash(entry), 'e48ede0f2205604050d250bc0e2b2a6e200e5e06a223e555a42a422c4899a3c9');
});

test('append links each entry to the previous one and verify passes', (t) => {
  const ledger = tempLedger(t);
  const a = ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'first' });
  const b = ledger.append({
    event_type: 'TEST',
    submission_id: 'S',
    decision: 'OK',
    reason: 'second',
    metadata: { session_id: 'X' },
  });
  assert.equal(a.previous_hash, GENESIS_HASH);
  assert.equal(b.previous_hash, a.entry_hash);
  assert.match(a.id, /^LED-[a-f0-9]{8}$/);
  assert.equal(a.timestamp, '2026-01-01T00:00:01.000Z');
  assert.deepEqual(a.metadata, {});
  assert.deepEqual(ledger.head(), { seq: 2, hash: b.entry_hash });
  assert.deepEqual(ledger.get(b.id), b);
  assert.deepEqual(ledger.getBySeq(1), a);
  assert.equal(ledger.get('LED-ffffffff'), undefined);
  assert.equal(computeEntryHash(b), b.entry_hash);
  assert.deepEqual(verifyLedger(ledger), { ok: true, entries: 2, head: { seq: 2, hash: b.entry_hash } });
});

test('an empty ledger has the genesis anchor and verifies', (t) => {
  const ledger = tempLedger(t);
  assert.deepEqual(ledger.head(), { seq: 0, hash: GENESIS_HASH });
  assert.deepEqual(verifyLedger(ledger, { anchor: { seq: 0, hash: GENESIS_HASH } }), {
    ok: true,
    entries: 0,
    head: { seq: 0, hash: GENESIS_HASH },
  });
});

test('an id collision is regenerated, and an id source that only collides is refused', (t) => {
  const ids = ['LED-00000001', 'LED-00000001', 'LED-00000001', 'LED-00000002'];
  const ledger = tempLedger(t, { idSource: () => ids.shift() ?? 'LED-00000001' });
  const first = ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' });
  const second = ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' });
  assert.equal(first.id, 'LED-00000001');
  assert.equal(second.id, 'LED-00000002');
  assert.equal(ids.length, 0, 'the colliding ids were drawn and skipped');
  assert.throws(() => ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' }), {
    code: 'ERR_LEDGER_ID_EXHAUSTED',
  });
  assert.equal(ledger.count(), 2);
});

test('ids follow the chain from a random per-ledger start, so the id index grows at its right edge', (t) => {
  const values = (entries: { id: string }[]): number[] => entries.map((e) => entryIdValue(e.id));
  const a = tempLedger(t);
  const b = tempLedger(t);
  const first = values([
    a.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' }),
    ...appendN(a, 4),
  ]);
  for (const id of [...a.query()].map((e) => e.id)) assert.match(id, /^LED-[a-f0-9]{8}$/);
  assert.deepEqual(
    first,
    [0, 1, 2, 3, 4].map((k) => ((first[0] as number) + k) >>> 0),
    'consecutive, across appends and batches',
  );
  const other = values(appendN(b, 1))[0];
  assert.notEqual(other, first[0], 'each ledger draws its own start');
  const reopened = Ledger.open(a.path);
  t.after(() => {
    reopened.close();
  });
  assert.equal(
    entryIdValue(reopened.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' }).id),
    ((first[4] as number) + 1) >>> 0,
    'the start is stored in the ledger, so another process continues the same sequence',
  );
});

test('after an import, appends continue the imported ids; a taken id falls back to a random draw', (t) => {
  const source = tempLedger(t, {
    idSource: (
      (ids) => () =>
        ids.shift() ?? 'LED-ffffffff'
    )(['LED-00000005', 'LED-00000004']),
  });
  appendN(source, 2);
  const file = join(tempDir(t), 'chain.jsonl');
  exportLedger(source, file);
  const target = tempLedger(t);
  importLedger(target, file);
  // Continuing from LED-00000004 at seq 2 makes seq 3 LED-00000005: taken by seq 1, so that draw is random.
  const [third, fourth] = appendN(target, 2);
  assert.notEqual(third?.id, 'LED-00000005');
  assert.match(third?.id ?? '', /^LED-[a-f0-9]{8}$/);
  assert.equal(fourth?.id, 'LED-00000006');
  assert.equal(verifyLedger(target).ok, true);
});

test('ids colliding inside one batch are regenerated too', (t) => {
  const ids = ['LED-0000000a', 'LED-0000000a', 'LED-0000000b'];
  const ledger = tempLedger(t, { idSource: () => ids.shift() ?? 'LED-0000000c' });
  assert.deepEqual(
    appendN(ledger, 2).map((e) => e.id),
    ['LED-0000000a', 'LED-0000000b'],
  );
});

test('triggers refuse UPDATE and DELETE on entries', (t) => {
  const ledger = tempLedger(t);
  appendN(ledger, 2);
  assert.throws(() => ledger.db.prepare("UPDATE entries SET reason = 'x' WHERE seq = 1").run(), /append-only/);
  assert.throws(() => ledger.db.prepare('DELETE FROM entries WHERE seq = 1').run(), /append-only/);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('bad input is refused with a code and nothing is written', (t) => {
  const ledger = tempLedger(t);
  const cases: [unknown, RegExp][] = [
    [null, /must be an object/],
    [{ event_type: 'TEST', submission_id: 'S', decision: 'OK' }, /non-empty string reason/],
    [{ event_type: 'lower', submission_id: 'S', decision: 'OK', reason: 'r' }, /UPPER_SNAKE_CASE/],
    [
      { event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r', metadata: [1] },
      /metadata must be a JSON object/,
    ],
    [{ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r', extra: 1 }, /unknown ledger entry field/],
    [
      { event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r', metadata: { n: Number.NaN } },
      /non-finite/,
    ],
  ];
  for (const [input, message] of cases) {
    assert.throws(
      () => ledger.append(input as never),
      (error: unknown) => error instanceof CpError && message.test(error.message) && error.code.startsWith('ERR_'),
    );
  }
  const good = { event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' };
  assert.throws(() => ledger.appendBatch([good, good, { ...good, reason: '' }]), /batch item 2/);
  assert.equal(ledger.count(), 0, 'a batch with one bad item writes none');
});

test('opening: a missing ledger is not created unless asked; a foreign file is refused untouched', (t) => {
  const dir = tempDir(t);
  assert.throws(() => Ledger.open(join(dir, 'missing.sqlite')), { code: 'ERR_LEDGER_NOT_FOUND' });
  assert.equal(existsSync(join(dir, 'missing.sqlite')), false);
  const text = join(dir, 'notes.txt');
  writeFileSync(text, 'hello, this is not sqlite at all'.repeat(40));
  assert.throws(() => Ledger.open(text), { code: 'ERR_LEDGER_NOT_A_LEDGER' });
  const other = join(dir, 'other.sqlite');
  const db = new Database(other);
  db.exec('CREATE TABLE things (x)');
  db.close();
  assert.throws(() => Ledger.open(other, { create: true }), { code: 'ERR_LEDGER_NOT_A_LEDGER' });
  assert.throws(() => Ledger.open(join(dir, 'x.sqlite'), { create: true, synchronous: 'SOMETIMES' as never }), {
    code: 'ERR_LEDGER_OPTION_INVALID',
  });
  assert.throws(() => Ledger.open(join(dir, 'missing-dir', 'x.sqlite'), { create: false }), {
    code: 'ERR_LEDGER_NOT_FOUND',
  });
  assert.throws(
    () => Ledger.open(dir, { create: true }),
    { code: 'ERR_LEDGER_OPEN_FAILED' },
    'a directory is not a ledger file',
  );
  assert.equal(ledgerPathForRoot('/r'), join('/r', 'HOT', 'ledger', 'ledger.sqlite'));
});

test('opening a ledger written by another format version is refused', (t) => {
  const ledger = tempLedger(t);
  ledger.close();
  tamper(ledger.path, "UPDATE ledger_meta SET value = '99' WHERE key = 'format_version'", false);
  assert.throws(() => Ledger.open(ledger.path), { code: 'ERR_LEDGER_FORMAT_VERSION', message: /"99"/ });
  tamper(ledger.path, "UPDATE ledger_meta SET value = 'other' WHERE key = 'format'", false);
  assert.throws(() => Ledger.open(ledger.path), { code: 'ERR_LEDGER_NOT_A_LEDGER' });
  tamper(
    ledger.path,
    "UPDATE ledger_meta SET value = 'cplane-ledger' WHERE key = 'format'; UPDATE ledger_meta SET value = '1' WHERE key = 'format_version'; ALTER TABLE entries RENAME TO gone",
    false,
  );
  assert.throws(() => Ledger.open(ledger.path), { code: 'ERR_LEDGER_NOT_A_LEDGER' });
});

test('storage: WAL, synchronous FULL by default and configurable, readonly opens an existing ledger', (t) => {
  const ledger = tempLedger(t);
  assert.equal(ledger.db.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(ledger.db.pragma('synchronous', { simple: true }), 2);
  assert.equal(ledger.db.pragma('page_size', { simple: true }), 2048, 'a new ledger is laid out in 2 KiB pages');
  const normal = Ledger.open(ledger.path, { synchronous: 'NORMAL' });
  t.after(() => {
    normal.close();
  });
  assert.equal(normal.db.pragma('synchronous', { simple: true }), 1);
  appendN(ledger, 1);
  const ro = Ledger.open(ledger.path, { readonly: true });
  t.after(() => {
    ro.close();
  });
  assert.equal(ro.count(), 1);
  assert.throws(() => Ledger.open(join(tempDir(t), 'none.sqlite'), { create: true, readonly: true }), {
    code: 'ERR_LEDGER_NOT_FOUND',
  });
});

test('anchors print as SEQ:HASH and parse back; malformed anchors are refused', () => {
  const anchor = { seq: 42, hash: 'a'.repeat(64) };
  assert.equal(formatAnchor(anchor), `42:${'a'.repeat(64)}`);
  assert.deepEqual(parseAnchor(formatAnchor(anchor)), anchor);
  for (const bad of ['42', '42:abc', `x:${'a'.repeat(64)}`, `-1:${'a'.repeat(64)}`, `1:${'A'.repeat(64)}`]) {
    assert.throws(() => parseAnchor(bad), { code: 'ERR_LEDGER_ANCHOR_INVALID' });
  }
});
