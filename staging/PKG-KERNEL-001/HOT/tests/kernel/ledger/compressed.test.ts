// Content blocks stored compressed (raw DEFLATE BLOBs in content_blocks.text): what is read, verified, exported
// and redacted is the text itself, byte for byte; a compressed block that was tampered with is a verify FAIL,
// never a crash; and a file laid out before compression (text TEXT) reads, verifies and exports the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import {
  blockDigest,
  CONTENT_DDL,
  EMPTY_LIST,
  exportLedger,
  importLedger,
  LEGACY_BLOCKS_DDL,
  Ledger,
  listDigest,
  verifyLedger,
  type AppendInput,
} from '../../../kernel/ledger/index.js';
import { PACK_MIN_BYTES, packBlock, unpackBlock, BlockDamage } from '../../../kernel/ledger/block-text.js';
import { CpError } from '../../../kernel/errors.js';
import { tempDir } from './helpers.js';

/** Pieces that exercise the stored forms: short and long, just under and at the threshold, astral, NUL, noise. */
function pieces(): string[] {
  // Printable ASCII from xorshift32: DEFLATE's fixed codes spend 8 bits on each, so it cannot save an eighth.
  let x = 2463534242;
  const noise = Array.from({ length: 200 }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return String.fromCharCode(33 + ((x >>> 0) % 94));
  });
  return [
    'short',
    'u'.repeat(PACK_MIN_BYTES - 1),
    'v'.repeat(PACK_MIN_BYTES),
    `emoji 😀🧪 and astral \u{10FFFF} ${'wörld 😀 '.repeat(60)}`,
    `nul\u0000inside\u0000${'zero '.repeat(50)}\u0000`,
    `tool output: ${'the budget ledger returns a value; '.repeat(120)}`,
    noise.join(''),
  ];
}

function exchange(n: number, prompt: string[]): AppendInput {
  return {
    event_type: 'EXCHANGE',
    submission_id: 'anthropic.messages',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S1', outcome: 'success' },
    content: { prompt, response: [`answer ${n}: ${'done. '.repeat(40)}`] },
  };
}

/** A ledger with a deterministic clock and ids, so two files written alike hold the same chain. */
function openAt(path: string): Ledger {
  let now = Date.parse('2026-01-01T00:00:00Z');
  return Ledger.open(path, {
    create: true,
    clock: () => (now += 1000),
    idSource: (seq) => `LED-${String(seq).padStart(8, '0')}`,
  });
}

/** The same three exchanges written to `path`; `legacy` lays content_blocks out as before compression first. */
function write(path: string, legacy: boolean): string[] {
  const ledger = openAt(path);
  if (legacy) ledger.db.exec(`${LEGACY_BLOCKS_DDL}${CONTENT_DDL}`);
  const all = pieces();
  const prompts = [all.slice(0, 3), all, [...all, 'and one more turn']];
  for (const [n, prompt] of prompts.entries()) ledger.append(exchange(n, prompt));
  ledger.close();
  return prompts.map((p) => p.join(''));
}

/** Raw write access to the file, content triggers dropped and put back, as an attacker with the file would. */
function tamper(path: string, edit: (db: Database.Database) => void): void {
  const db = new Database(path);
  try {
    db.exec('DROP TRIGGER content_blocks_no_delete; DROP TRIGGER content_blocks_redact_only;');
    edit(db);
    db.exec(CONTENT_DDL);
  } finally {
    db.close();
  }
}

function storedForms(path: string): Map<string, string> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT lower(hex(digest)) AS d, typeof(text) AS t FROM content_blocks').all() as {
      d: string;
      t: string;
    }[];
    return new Map(rows.map((r) => [r.d, r.t]));
  } finally {
    db.close();
  }
}

test('blocks worth compressing are stored as DEFLATE BLOBs and read back byte for byte; the rest stay TEXT', (t) => {
  const path = join(tempDir(t), 'ledger.sqlite');
  const sent = write(path, false);
  const forms = storedForms(path);
  const all = pieces();
  const formOf = (piece: string): string | undefined => forms.get(blockDigest(piece));
  assert.equal(formOf('short'), 'text');
  assert.equal(formOf(all[1] as string), 'text', 'one byte under the threshold');
  assert.equal(formOf(all[2] as string), 'blob', 'at the threshold, compressible');
  assert.equal(formOf(all[3] as string), 'blob', 'astral characters');
  assert.equal(formOf(all[4] as string), 'blob', 'NUL characters');
  assert.equal(formOf(all[6] as string), 'text', 'noise DEFLATE cannot shrink by an eighth');
  const ledger = Ledger.open(path, { readonly: true });
  t.after(() => ledger.close());
  const read = ledger.history('S1');
  assert.deepEqual(
    read.map((e) => e.metadata.prompt),
    sent,
  );
  for (const piece of all) assert.equal(ledger.content.block(blockDigest(piece))?.text, piece);
  const head = all.reduce((list, piece) => listDigest(list, blockDigest(piece)), EMPTY_LIST);
  const pieceView = ledger.content.readPieces(head);
  assert.deepEqual(pieceView.pieces, all);
  assert.equal(pieceView.missing, false);
  const verified = verifyLedger(ledger);
  assert.equal(verified.ok, true, JSON.stringify(verified));
});

test('packBlock/unpackBlock: only savings are kept, and inflation is bounded by the recorded size', () => {
  const text = `${'abc'.repeat(100)}😀`;
  const size = Buffer.byteLength(text);
  const packed = packBlock(text, size);
  assert.ok(Buffer.isBuffer(packed));
  assert.equal(unpackBlock(packed, size), text);
  assert.equal(packBlock('x'.repeat(PACK_MIN_BYTES - 1), PACK_MIN_BYTES - 1), 'x'.repeat(PACK_MIN_BYTES - 1));
  const why = (stored: unknown, recorded: unknown): string => {
    const out = unpackBlock(stored, recorded);
    assert.ok(out instanceof BlockDamage, `expected damage, got ${String(out)}`);
    return out.why;
  };
  assert.match(why(packed, size - 1), /inflate past its recorded size/);
  assert.match(why(packed, size + 1), /inflate to \d+ bytes, not its recorded size/);
  assert.match(why(packed.subarray(0, 10), size), /do not inflate/);
  // A bomb: 64 MiB of zeros in a few dozen KiB, recorded as a small block, stops at the recorded size.
  assert.match(why(deflateRawSync(Buffer.alloc(64 << 20)), size), /inflate past its recorded size/);
  assert.match(why(deflateRawSync(Buffer.from([0xff, 0xfe, 0xfd])), 3), /not UTF-8/);
  assert.match(why(42, size), /holds a number/);
  assert.match(why(packed, -1), /recorded size -1 is not a byte count/);
  assert.match(why(packed, 1.5), /is not a byte count/);
});

test('a block is packed with a window sized to it: it reads back, and is as small as with the default window', () => {
  // Sizes around each window's edge (2^n - 262 bytes of the block fit a 2^n window) and past the largest one.
  let x = 7;
  const words = Array.from({ length: 64 }, (_, i) => `word${i} `);
  const text = (bytes: number): string => {
    let out = '';
    while (out.length < bytes) {
      x = (x * 1103515245 + 12345) >>> 0;
      out += words[(x >>> 16) % words.length];
    }
    return out.slice(0, bytes);
  };
  for (const bytes of [
    PACK_MIN_BYTES,
    249,
    250,
    251,
    762,
    763,
    4096 - 262,
    4096 - 261,
    32_768 - 262,
    40_000,
    200_000,
  ]) {
    const block = text(bytes);
    const packed = packBlock(block, bytes);
    assert.ok(Buffer.isBuffer(packed), `${bytes} bytes: compressible text is packed`);
    assert.equal(unpackBlock(packed, bytes), block, `${bytes} bytes read back`);
    const usual = deflateRawSync(Buffer.from(block)).length;
    assert.ok(packed.length <= usual + Math.ceil(usual / 100), `${bytes} bytes: ${packed.length} against ${usual}`);
  }
});

test('a compressed block whose bytes were edited, or that inflates to other text or another length, FAILS verify', (t) => {
  const dir = tempDir(t);
  const target = pieces()[5] as string;
  const digest = blockDigest(target);
  const size = Buffer.byteLength(target);
  const cases: [string, (db: Database.Database) => void, RegExp][] = [
    [
      'a byte flipped',
      (db) => {
        const blob = db
          .prepare('SELECT text FROM content_blocks WHERE digest = unhex(?)')
          .pluck()
          .get(digest) as Buffer;
        const edited = Buffer.from(blob);
        const at = Math.floor(edited.length / 2);
        edited[at] = (edited[at] as number) ^ 0x55;
        db.prepare('UPDATE content_blocks SET text = ? WHERE digest = unhex(?)').run(edited, digest);
      },
      /is damaged|does not hash to its digest/,
    ],
    [
      'other text of the same length',
      (db) => {
        const other = target.replace('budget', 'BUDGET');
        db.prepare('UPDATE content_blocks SET text = ? WHERE digest = unhex(?)').run(deflateRawSync(other), digest);
      },
      /does not hash to its digest/,
    ],
    [
      'longer text',
      (db) => {
        db.prepare('UPDATE content_blocks SET text = ? WHERE digest = unhex(?)').run(
          deflateRawSync(`${target}!`),
          digest,
        );
      },
      /inflate past its recorded size/,
    ],
    [
      'shorter text',
      (db) => {
        db.prepare('UPDATE content_blocks SET text = ? WHERE digest = unhex(?)').run(
          deflateRawSync(target.slice(1)),
          digest,
        );
      },
      new RegExp(`inflate to ${size - 1} bytes, not its recorded size`),
    ],
    [
      'a zip bomb',
      (db) => {
        db.prepare('UPDATE content_blocks SET text = ? WHERE digest = unhex(?)').run(
          deflateRawSync(Buffer.alloc(32 << 20, 0x61)),
          digest,
        );
      },
      /inflate past its recorded size/,
    ],
  ];
  for (const [name, edit, message] of cases) {
    const path = join(dir, `${name.replaceAll(' ', '-')}.sqlite`);
    write(path, false);
    assert.equal(storedForms(path).get(digest), 'blob', name);
    tamper(path, edit);
    const ledger = Ledger.open(path, { readonly: true });
    try {
      const result = verifyLedger(ledger);
      assert.equal(result.ok, false, name);
      const problems = result.content?.problems ?? [];
      assert.deepEqual(
        problems.map((p) => [p.kind, p.digest]),
        [['block_edited', digest]],
        name,
      );
      assert.match(problems[0]?.message ?? '', message, name);
      // Reads mark the block rather than throw; an export, which must carry the text, refuses with a code.
      const prompt = String(ledger.history('S1')[1]?.metadata.prompt);
      if (/inflate|damaged/.test(problems[0]?.message ?? '')) {
        assert.ok(prompt.includes(`[DAMAGED:${digest}]`), name);
        const head = pieces().reduce((list, piece) => listDigest(list, blockDigest(piece)), EMPTY_LIST);
        const view = ledger.content.readPieces(head);
        assert.equal(view.missing, true, name);
        assert.equal(view.pieces[5], '[DAMAGED]', name);
        assert.throws(
          () => exportLedger(ledger, join(dir, `${name}.jsonl`)),
          (e: unknown) => e instanceof CpError && e.code === 'ERR_LEDGER_DAMAGED' && e.message.includes(digest),
          name,
        );
      }
    } finally {
      ledger.close();
    }
  }
});

test('a file laid out before compression (text TEXT) reads, verifies and exports exactly as a compressed one', (t) => {
  const dir = tempDir(t);
  const compressed = join(dir, 'compressed.sqlite');
  const legacy = join(dir, 'legacy.sqlite');
  const sent = write(compressed, false);
  assert.deepEqual(write(legacy, true), sent);
  assert.ok([...storedForms(compressed).values()].includes('blob'));
  assert.deepEqual(new Set(storedForms(legacy).values()), new Set(['text']), 'an old layout is written as TEXT');
  const files: string[] = [];
  for (const path of [compressed, legacy]) {
    const ledger = Ledger.open(path);
    try {
      assert.deepEqual(ledger.schemaProblems, [], path);
      const verified = verifyLedger(ledger);
      assert.equal(verified.ok, true, JSON.stringify(verified));
      assert.deepEqual(
        ledger.history('S1').map((e) => e.metadata.prompt),
        sent,
      );
      const file = `${path}.jsonl`;
      exportLedger(ledger, file);
      files.push(readFileSync(file, 'utf8'));
    } finally {
      ledger.close();
    }
  }
  assert.equal(files[0], files[1], 'the exports are the same bytes');
  // An export carries text, never compressed bytes: every block line's text hashes to its digest.
  for (const line of (files[0] as string).trimEnd().split('\n')) {
    const block = (JSON.parse(line) as { content_block?: { digest: string; text: string } }).content_block;
    if (block !== undefined) assert.equal(blockDigest(block.text), block.digest);
  }
  // Importing the export into a new file compresses it.
  const imported = openAt(join(dir, 'imported.sqlite'));
  try {
    importLedger(imported, `${legacy}.jsonl`);
    assert.equal(verifyLedger(imported).ok, true);
    assert.deepEqual(
      imported.history('S1').map((e) => e.metadata.prompt),
      sent,
    );
  } finally {
    imported.close();
  }
  assert.ok([...storedForms(join(dir, 'imported.sqlite')).values()].includes('blob'));
});

test('content_blocks altered beyond the two known layouts is still a schema problem', (t) => {
  const path = join(tempDir(t), 'ledger.sqlite');
  write(path, false);
  tamper(path, (db) => {
    db.exec(
      'DROP TABLE content_blocks; CREATE TABLE content_blocks (digest BLOB PRIMARY KEY, size INTEGER NOT NULL, text BLOB, redacted_by TEXT) STRICT;',
    );
  });
  const ledger = Ledger.open(path, { readonly: true });
  t.after(() => ledger.close());
  assert.deepEqual(
    ledger.schemaProblems.map((p) => [p.kind, p.name]),
    [['altered', 'content_blocks']],
  );
});

const SECRET = 'hunter2-correct-horse-battery-staple';

function filesHold(path: string, needle: Buffer): string[] {
  return ['', '-wal', '-shm'].filter((suffix) => {
    try {
      return readFileSync(path + suffix).includes(needle);
    } catch {
      return false;
    }
  });
}

test('redact: a secret inside a compressed block is gone from every file, in plain and in compressed form', (t) => {
  const path = join(tempDir(t), 'ledger.sqlite');
  const pasted = `$ cat .env\n${'LOG_LEVEL=debug\n'.repeat(40)}PASSWORD=${SECRET}\n${'FEATURE_FLAG=on\n'.repeat(40)}`;
  const ledger = openAt(path);
  t.after(() => ledger.close());
  ledger.append(exchange(0, ['read the env file', pasted]));
  const next = ledger.append(exchange(1, ['read the env file', pasted, 'now fix the config']));
  const digest = blockDigest(pasted);
  const stored = ledger.db.prepare('SELECT text FROM content_blocks WHERE digest = unhex(?)').pluck().get(digest);
  assert.ok(Buffer.isBuffer(stored), 'the block holding the secret is stored compressed');
  const middle = stored.subarray(Math.floor(stored.length / 2) - 16, Math.floor(stored.length / 2) + 16);
  ledger.db.pragma('wal_checkpoint(TRUNCATE)');
  assert.deepEqual(filesHold(path, stored), [''], 'the compressed bytes are on disk before');
  assert.deepEqual(filesHold(path, Buffer.from(SECRET)), [], 'the secret is not on disk in plain');
  // Read once, so the inflated text is among the store's recent ones when the redaction comes.
  assert.ok(String(ledger.get(next.id)?.metadata.prompt).includes(SECRET));
  const recent = (ledger.content as unknown as { inflated: Map<string, string> }).inflated;
  assert.equal(recent.has(digest), true);
  const result = ledger.redact([digest], { reason: 'a password pasted', by: 'tester', exchanges: [next.id] });
  assert.equal(recent.has(digest), false, 'the redacted text is dropped from memory too');
  assert.equal(result.redacted, 1);
  assert.equal(result.checkpointed, true);
  for (const needle of [stored, middle, Buffer.from(SECRET)])
    assert.deepEqual(filesHold(path, needle), [], `no file holds ${needle.toString('hex').slice(0, 16)}…`);
  const verified = verifyLedger(ledger);
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal(verified.content?.redacted_blocks, 1);
  assert.equal(
    ledger.get(next.id)?.metadata.prompt,
    `read the env file[REDACTED:${result.entry.id}]now fix the config`,
  );
});
