import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../../../kernel/canonical.js';
import { GENESIS_HASH, hashInput, hashInputFromColumns, type LedgerEntry } from '../../../kernel/ledger/index.js';
import { formatEntryId, idDigits, quoted } from '../../../kernel/ledger/entry.js';
import { appendN, tempLedger } from './helpers.js';

// Strings that stress JSON string serialisation: escapes, controls, non-BMP, lone surrogates, DEL, U+2028.
const NASTY = [
  '',
  'plain',
  'quote " and \\ backslash',
  'tab\tnewline\ncr\r',
  '\u0000\u001f\u007f',
  'é ü ß 中文',
  '😀 emoji',
  '\ud800 lone',
  '\u2028\u2029',
  '</script>',
];

function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

function randomValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 2 ? 5 : 7));
  switch (pick) {
    case 0:
      return NASTY[Math.floor(rand() * NASTY.length)];
    case 1:
      return [0, -0, 1, -1.5, 1e21, 1e-7, 123456789.123, Number.MAX_SAFE_INTEGER, 5e-324][Math.floor(rand() * 9)];
    case 2:
      return rand() < 0.5;
    case 3:
      return null;
    case 4:
      return Math.floor(rand() * 1000);
    case 5:
      return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(rand() * 5) }, () => [
          NASTY[Math.floor(rand() * NASTY.length)] as string,
          randomValue(rand, depth + 1),
        ]),
      );
  }
}

test('the column-built hash input equals the canonical JSON of the entry (equivalence of the fast path)', () => {
  const rand = seeded(7);
  for (let i = 0; i < 2000; i += 1) {
    const text = (): string => NASTY[Math.floor(rand() * NASTY.length)] as string;
    const entry: Omit<LedgerEntry, 'entry_hash'> = {
      id: `LED-${(i + 0x10000000).toString(16)}`,
      event_type: 'EXCHANGE',
      submission_id: text(),
      decision: text(),
      reason: text(),
      metadata: { v: randomValue(rand, 0), [text()]: randomValue(rand, 0) },
      timestamp: new Date(1_700_000_000_000 + i).toISOString(),
      previous_hash: GENESIS_HASH,
    };
    const fast = hashInputFromColumns({ ...entry, metadata: canonicalJson(entry.metadata) });
    assert.equal(fast, hashInput(entry), `entry ${i}`);
  }
});

test('quoted writes every string as JSON.stringify does, its fast path included (each UTF-16 code unit, alone and in text)', () => {
  for (let unit = 0; unit <= 0xffff; unit += 1) {
    const char = String.fromCharCode(unit);
    for (const text of [char, `LED-${char}0`, `${char}${char}`])
      assert.equal(quoted(text), JSON.stringify(text), `U+${unit}`);
  }
  for (const text of [...NASTY, '\ud83d\ude00', '\udc00\ud800', 'a\ud83dz', GENESIS_HASH, '2026-01-01T00:00:00.000Z'])
    assert.equal(quoted(text), JSON.stringify(text), JSON.stringify(text));
});

test('ids are a value mod 2^32 as 8 lowercase hex digits', () => {
  const rand = seeded(11);
  const values = [
    0,
    1,
    15,
    16,
    255,
    256,
    0x0fffffff,
    0x10000000,
    0xffffffff,
    2 ** 32,
    2 ** 32 + 7,
    -1,
    -5,
    2 ** 40 + 3,
  ];
  for (let i = 0; i < 5000; i += 1) values.push(Math.floor(rand() * 2 ** 32));
  for (const value of values) {
    assert.equal(idDigits(value), (value >>> 0).toString(16).padStart(8, '0'), String(value));
    assert.match(formatEntryId(value), /^LED-[0-9a-f]{8}$/);
  }
});

test('stored metadata is canonical JSON, so the stored columns rebuild the exact hash input', (t) => {
  const ledger = tempLedger(t);
  const entries = appendN(ledger, 50, (i) => ({ z: i, a: NASTY[i % NASTY.length], nested: { b: [i, 'x'], a: null } }));
  const rows = [...ledger.rows()];
  assert.equal(rows.length, 50);
  rows.forEach((row, i) => {
    const entry = entries[i] as LedgerEntry;
    assert.equal(row.metadata, canonicalJson(entry.metadata));
    assert.equal(hashInputFromColumns(row), hashInput(entry));
  });
});
