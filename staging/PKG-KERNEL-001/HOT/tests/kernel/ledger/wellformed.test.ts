import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isCpError, show } from '../../../kernel/errors.js';
import {
  computeEntryHash,
  GENESIS_HASH,
  importLedger,
  Ledger,
  verifyLedger,
  type LedgerEntry,
} from '../../../kernel/ledger/index.js';
import { recordInstallFailed } from '../../../kernel/installer/ledger-records.js';
import { sliceText, truncateText } from '../../../kernel/text.js';
import { runCli } from '../../../cli/main.js';
import { tempDir, tempLedger } from './helpers.js';

const LONE_HIGH = '\ud83d';
const LONE_LOW = '\ude00';
const EMOJI = '\ud83d\ude00';
/** An emoji cut in half the way `text.slice(0, n)` cuts it. */
const HALF_EMOJI = `provider said: ${EMOJI}${EMOJI}`.slice(0, 18);

function refusedWith(code: string): (error: unknown) => boolean {
  return (error) => isCpError(error) && error.code === code;
}

test('lone surrogates and half emojis in every string field, key and nested value leave a chain that verifies', (t) => {
  const ledger = tempLedger(t);
  const written = ledger.appendBatch([
    {
      event_type: 'EXCHANGE',
      submission_id: `S-${LONE_HIGH}`,
      decision: `ERR${LONE_LOW}`,
      reason: HALF_EMOJI,
      metadata: { error_message: HALF_EMOJI, [`key${LONE_HIGH}`]: [LONE_LOW, { deep: `x${LONE_HIGH}y` }], fine: EMOJI },
    },
    {
      event_type: 'INSTALL_FAILED',
      submission_id: 'PKG-X-001',
      decision: 'REJECTED',
      reason: `member ${LONE_LOW}.js`,
      metadata: { member: `a${LONE_HIGH}` },
    },
  ]);
  const result = verifyLedger(ledger);
  assert.equal(result.ok, true, JSON.stringify(result.first_bad));
  const stored = ledger.get((written[0] as LedgerEntry).id) as LedgerEntry;
  // What append returned is exactly what SQLite gives back, U+FFFD where the broken unit was, emojis intact.
  assert.deepEqual(stored, written[0]);
  assert.equal(stored.reason, `provider said: ${EMOJI}\ufffd`);
  assert.equal(stored.submission_id, 'S-\ufffd');
  assert.deepEqual(stored.metadata, {
    error_message: `provider said: ${EMOJI}\ufffd`,
    'key\ufffd': ['\ufffd', { deep: 'x\ufffdy' }],
    fine: EMOJI,
  });
  assert.equal(computeEntryHash(stored), stored.entry_hash);
  // Still verifies after a fresh open, i.e. from the bytes on disk.
  const again = Ledger.open(ledger.path, { readonly: true });
  t.after(() => {
    again.close();
  });
  assert.equal(verifyLedger(again).ok, true);
});

test('two metadata keys that become the same key once repaired are refused, and nothing is written', (t) => {
  const ledger = tempLedger(t);
  assert.throws(
    () =>
      ledger.append({
        event_type: 'TEST',
        submission_id: 'S',
        decision: 'OK',
        reason: 'r',
        metadata: { [`k${LONE_HIGH}`]: 1, [`k${LONE_LOW}`]: 2 },
      }),
    refusedWith('ERR_LEDGER_ENTRY_INVALID'),
  );
  assert.equal(ledger.count(), 0);
});

test('an INSTALL_FAILED message cut at 500 units inside an emoji still verifies', (t) => {
  const ledger = tempLedger(t);
  const message = `${'m'.repeat(498)}${EMOJI}${EMOJI} member name`;
  const entry = recordInstallFailed(ledger, 'PKG-X-001', 'ERR_ARCHIVE_UNSAFE_PATH', message, {
    archive: `x${LONE_HIGH}.tar.gz`,
  });
  assert.ok(entry.reason.isWellFormed());
  assert.ok(entry.reason.length <= 500);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('show(), truncateText and sliceText never cut a surrogate pair', () => {
  for (let max = 2; max < 12; max += 1) {
    const shown = show(`${EMOJI.repeat(10)}`, max);
    assert.ok(shown.isWellFormed(), `show(…, ${max}) = ${JSON.stringify(shown)}`);
    assert.ok(shown.length <= max);
    assert.ok(truncateText(EMOJI.repeat(10), max).isWellFormed());
  }
  assert.equal(truncateText(`ab${EMOJI}c`, 3, ''), 'ab');
  assert.equal(truncateText(`ab${EMOJI}c`, 4, ''), `ab${EMOJI}`);
  assert.equal(truncateText(`ab${LONE_HIGH}`, 10), 'ab\ufffd');
  assert.equal(sliceText(`a${EMOJI}b`, 2), 'b');
  assert.equal(sliceText(`a${EMOJI}b`, 0, 2), 'a');
  assert.equal(sliceText(`a${EMOJI}b`, 1, 3), EMOJI);
});

/** An export line a hand could make: hashed over the lone surrogate, so the chain itself is consistent. */
function handMadeLine(reason: string): string {
  const entry = {
    id: 'LED-00000001',
    event_type: 'TEST',
    submission_id: 'S',
    decision: 'OK',
    reason,
    metadata: {},
    timestamp: '2026-01-01T00:00:00.000Z',
    previous_hash: GENESIS_HASH,
  };
  return JSON.stringify({ ...entry, entry_hash: computeEntryHash(entry) });
}

test('an import holding "\\ud83d" is refused with a coded error and the ledger is untouched', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'export.jsonl');
  // JSON.stringify writes the lone surrogate as the escape \ud83d.
  writeFileSync(file, `${handMadeLine(`cut ${LONE_HIGH}`)}\n`);
  assert.match(readFileSync(file, 'utf8'), /cut \\ud83d/);
  const target = join(dir, 'new.sqlite');
  let err = '';
  const code = await runCli({
    argv: ['ledger', 'import', '--ledger', target, '--from', file],
    stdout: () => {},
    stderr: (text) => {
      err += text;
    },
  });
  assert.equal(code, 3);
  assert.match(err, /ERR_LEDGER_IMPORT_INVALID.*line 1.*\/reason/);
  assert.equal(existsSync(target), false, 'nothing created');

  const ledger = tempLedger(t);
  assert.throws(() => importLedger(ledger, file), refusedWith('ERR_LEDGER_IMPORT_INVALID'));
  assert.equal(ledger.count(), 0);
  // Bytes that are not UTF-8 are refused as such, not as a confusing hash mismatch.
  writeFileSync(
    file,
    Buffer.concat([Buffer.from(handMadeLine('x').replace('"x"', '"')), Buffer.from([0xff, 0x22]), Buffer.from('\n')]),
  );
  assert.throws(
    () => importLedger(ledger, file),
    (e) => refusedWith('ERR_LEDGER_IMPORT_INVALID')(e) && /not UTF-8/.test((e as Error).message),
  );
  // The well-formed version of the same hand-made line imports.
  writeFileSync(file, `${handMadeLine(`cut ${EMOJI}`)}\n`);
  importLedger(ledger, file);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('cplane ledger append with a lone surrogate in --reason and --metadata (JSON escapes) leaves a ledger that verifies', async (t) => {
  const path = join(tempDir(t), 'l.sqlite');
  const argv = [
    'ledger',
    'append',
    '--ledger',
    path,
    '--event-type',
    'TEST',
    '--submission-id',
    `S${LONE_LOW}`,
    '--decision',
    'OK',
    '--reason',
    HALF_EMOJI,
    '--metadata',
    '{"error_message":"cut \\ud83d","\\udc00key":["\\ud83d"]}',
  ];
  assert.equal(await runCli({ argv, stdout: () => {}, stderr: () => {} }), 0);
  let out = '';
  assert.equal(
    await runCli({
      argv: ['ledger', 'verify', '--ledger', path],
      stdout: (text) => {
        out += text;
      },
      stderr: () => {},
    }),
    0,
    out,
  );
  assert.match(out, /ledger intact: 1 entries/);
});

test("metadata nested deeper than SQLite's JSON parser accepts is a coded refusal, not an internal error", (t) => {
  const ledger = tempLedger(t);
  let deep: unknown = {};
  for (let i = 0; i < 1200; i += 1) deep = [deep];
  assert.throws(
    () =>
      ledger.append({
        event_type: 'TEST',
        submission_id: 'S',
        decision: 'OK',
        reason: 'r',
        metadata: { usage_raw: deep },
      }),
    refusedWith('ERR_LEDGER_ENTRY_INVALID'),
  );
  assert.equal(ledger.count(), 0);
  ledger.append({
    event_type: 'TEST',
    submission_id: 'S',
    decision: 'OK',
    reason: 'r',
    metadata: { usage_raw: [[[{ a: 1 }]]] },
  });
  assert.equal(verifyLedger(ledger).ok, true);
});
