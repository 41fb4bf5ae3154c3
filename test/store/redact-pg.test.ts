// `cplane ledger redact --store`: a secret pasted into a prompt, redacted from a PostgreSQL chain through the CLI, is
// gone from every file of the server's data directory but its WAL (and the command says where it stays); the dry
// run changes nothing; the chain verifies and reads show the marker; a block changed behind the command's back (the
// triggers switched off by a superuser) fails verify; and a redaction racing other writers never forks the chain.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { cli as run } from '../gateway/harness.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { filesHolding } from '../../scripts/lib/files-holding.js';

const { Ledger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js')>(
    'HOT/kernel/ledger/ledger.js',
  );
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { selectRedaction } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/redaction.js')
>('HOT/kernel/ledger/redaction.js');
const { parseExportWithContent: parseExport } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/jsonl.js')>(
    'HOT/kernel/ledger/jsonl.js',
  );
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skip = pgSkip();
let server: PgServer | undefined;
let work = '';

before(async () => {
  if (skip !== false) return;
  work = mkdtempSync(join(tmpdir(), 'cp-redact-pg-'));
  server = await startPgServer();
});
after(() => {
  server?.stop();
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

// The store is named only by the flag here, never by the caller's environment.
const cli = (args: string[]) => run(args, { CPLANE_DATABASE_URL: '' });

const secretMessage = (secret: string): string => `{"role":"user","content":"my key is ${secret}"}`;

const exchangeWith = (session: string, messages: string[], answer: string): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: 'anthropic.messages',
  decision: 'SUCCESS',
  reason: 'Exchange completed',
  metadata: { session_id: session, agent_id: 'A1' },
  content: { prompt: ['{"messages":[', ...messages, ']}'], response: [answer] },
});

const outsideWal = (paths: string[]): string[] => paths.filter((p) => !p.startsWith('pg_wal/'));

/** The blocks table and the chain, as a dry run must leave them. */
async function state(url: string): Promise<unknown> {
  const blocks = await pgQuery(
    url,
    "SELECT encode(digest, 'hex') AS d, size, text, redacted_by FROM cplane_content_blocks ORDER BY digest",
  );
  const head = await pgQuery(url, 'SELECT seq, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1');
  return { blocks: blocks.rows, head: head.rows };
}

test('ledger redact --store: the dry run changes nothing; the secret leaves every file of the data directory but pg_wal, and the output says where it stays; verify, query and export show the redaction', {
  skip,
}, async () => {
  const s = server as PgServer;
  const url = await createDatabase(s, 'redact_cli');
  const secret = `sk-live-PGREDACT-${randomBytes(8).toString('hex')}`;
  const kept = `sk-live-PGKEPT-${randomBytes(8).toString('hex')}`;
  const store = await PgLedger.open(url, { create: true });
  let exchange: string;
  let inline: string;
  let other: string;
  try {
    const written = await store.appendBatch([
      exchangeWith('S1', [secretMessage(secret)], 'noted'),
      exchangeWith('S1', [secretMessage(secret), ',{"role":"user","content":"and now?"}'], 'done'),
      exchangeWith('S2', [secretMessage(kept)], 'noted too'),
      { event_type: 'EXCHANGE', submission_id: 's', decision: 'SUCCESS', reason: 'r', metadata: { session_id: 'S1' } },
    ]);
    [exchange, , other, inline] = written.map((e) => e.id) as [string, string, string, string];
  } finally {
    await store.close();
  }
  // Out of shared buffers into the table files: the secret is there before, so its absence after means something.
  await pgQuery(url, 'CHECKPOINT');
  assert.ok(outsideWal(filesHolding(s.dataDir, secret)).length > 0, 'the secret never reached the table files');

  const at = await state(url);
  const dry = cli(['ledger', 'redact', '--store', url, '--exchange', exchange, '--dry-run', '--json']);
  assert.equal(dry.status, 0, dry.stderr);
  const listed = JSON.parse(dry.stdout) as {
    dry_run: boolean;
    exchanges: string[];
    blocks: { digest: string; size: number; redacted_by: string | null; preview: string | null }[];
  };
  assert.deepEqual([listed.dry_run, listed.exchanges, listed.blocks.length], [true, [exchange], 4]);
  const block = listed.blocks.find((b) => b.preview?.includes('my key is'));
  assert.ok(block, dry.stdout);
  assert.equal(block.size, Buffer.byteLength(secretMessage(secret)));
  const humanDry = cli(['ledger', 'redact', '--store', url, '--session', 'S1', '--dry-run']);
  assert.equal(humanDry.status, 0, humanDry.stderr);
  assert.match(humanDry.stdout, /^6 blocks would be redacted/m);
  assert.deepEqual(await state(url), at, 'a dry run writes nothing');

  const refusedInline = cli(['ledger', 'redact', '--store', url, '--exchange', inline, '--reason', 'x']);
  assert.equal(refusedInline.status, 3, refusedInline.stderr);
  assert.match(refusedInline.stderr, /ERR_LEDGER_REDACT_INLINE/);
  const missing = cli(['ledger', 'redact', '--store', url, '--block', 'b'.repeat(64), '--reason', 'x']);
  assert.match(missing.stderr, /ERR_LEDGER_REDACT_NOT_FOUND/);
  assert.equal(
    cli([
      'ledger',
      'redact',
      '--ledger',
      join(work, 'x.sqlite'),
      '--no-vacuum',
      '--block',
      block.digest,
      '--reason',
      'x',
    ]).status,
    2,
  );
  assert.deepEqual(await state(url), at, 'a refusal writes nothing');

  const done = cli(['ledger', 'redact', '--store', url, '--block', block.digest, '--reason', 'pasted key', '--json']);
  assert.equal(done.status, 0, done.stderr);
  const result = JSON.parse(done.stdout) as {
    entry_id: string;
    redacted: number;
    already_redacted: number;
    checkpointed: boolean;
    warnings: string[];
  };
  assert.deepEqual([result.redacted, result.already_redacted, result.checkpointed], [1, 0, true]);
  // Honest about what no command can reach: the WAL, standbys, archives and backups.
  assert.equal(result.warnings.length, 1, JSON.stringify(result.warnings));
  assert.match(result.warnings[0] as string, /pg_wal.*standby.*archive.*backup/);
  assert.deepEqual(outsideWal(filesHolding(s.dataDir, secret)), [], 'the secret is still in the table files');

  // The same --json shape as the SQLite file's redaction.
  const file = join(work, 'same-shape.sqlite');
  const local = Ledger.open(file, { create: true });
  const localExchange = local.append(exchangeWith('S1', [secretMessage(secret)], 'noted')).id;
  local.close();
  const onFile = cli(['ledger', 'redact', '--ledger', file, '--exchange', localExchange, '--reason', 'r', '--json']);
  assert.equal(onFile.status, 0, onFile.stderr);
  assert.deepEqual(Object.keys(JSON.parse(onFile.stdout)).sort(), Object.keys(result).sort());

  // --no-vacuum: committed, and the output says the table files still hold it, which they do.
  const keptBlock = (
    JSON.parse(cli(['ledger', 'redact', '--store', url, '--exchange', other, '--dry-run', '--json']).stdout) as {
      blocks: { digest: string; preview: string | null }[];
    }
  ).blocks.find((b) => b.preview?.includes('my key is')) as { digest: string };
  const lazy = cli([
    'ledger',
    'redact',
    '--store',
    url,
    '--block',
    keptBlock.digest,
    '--reason',
    'later',
    '--no-vacuum',
  ]);
  assert.equal(lazy.status, 0, lazy.stderr);
  assert.match(lazy.stdout, /^warning: the table files still hold the removed text \(--no-vacuum\)/m);
  assert.match(lazy.stdout, /^warning: PostgreSQL still holds the removed text in its write-ahead log/m);
  await pgQuery(url, 'CHECKPOINT');
  assert.ok(outsideWal(filesHolding(s.dataDir, kept)).length > 0, 'without VACUUM FULL the old row version stays');

  const verified = cli(['ledger', 'verify', '--store', url, '--json']);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  const report = JSON.parse(verified.stdout) as { ok: boolean; content: { redacted_blocks: number } };
  assert.deepEqual([report.ok, report.content.redacted_blocks], [true, 2]);
  assert.match(
    cli(['ledger', 'verify', '--store', url]).stdout,
    /^content: \d+ blocks \(2 redacted\), \d+ list nodes, intact$/m,
  );

  const marker = `[REDACTED:${result.entry_id}]`;
  const found = JSON.parse(
    cli(['ledger', 'query', '--store', url, '--session', 'S1', '--event-type', 'EXCHANGE', '--oldest', '--json'])
      .stdout,
  ) as { metadata: { prompt?: string } }[];
  assert.deepEqual(
    found.map((e) => e.metadata.prompt),
    [`{"messages":[${marker}]}`, `{"messages":[${marker},{"role":"user","content":"and now?"}]}`, undefined],
  );
  const exported = cli(['ledger', 'export', '--store', url]).stdout;
  assert.ok(exported.includes(`{"content_block":{"digest":"${block.digest}","redacted_by":"${result.entry_id}"`));
  assert.equal(exported.includes(secret), false);
  assert.ok(cli(['ledger', 'export', '--store', url, '--text']).stdout.includes(marker));

  // A block changed behind the command's back, by a superuser with the triggers off, fails verify and is named.
  const [untouched] = (
    await pgQuery(url, "SELECT encode(digest, 'hex') AS d FROM cplane_content_blocks WHERE text IS NOT NULL LIMIT 1")
  ).rows as { d: string }[];
  await pgQuery(url, 'ALTER TABLE cplane_content_blocks DISABLE TRIGGER ALL');
  await pgQuery(url, 'UPDATE cplane_content_blocks SET text = NULL, redacted_by = $1 WHERE digest = decode($2, $3)', [
    result.entry_id,
    untouched?.d,
    'hex',
  ]);
  await pgQuery(url, 'ALTER TABLE cplane_content_blocks ENABLE TRIGGER ALL');
  const tampered = cli(['ledger', 'verify', '--store', url]);
  assert.equal(tampered.status, 1, tampered.stdout);
  assert.match(tampered.stdout, new RegExp(`content: block ${untouched?.d} has no text and no REDACTED entry`));
  // The redacted block's text put back the same way: its digest still matches, but a REDACTED entry removed it.
  await pgQuery(url, 'ALTER TABLE cplane_content_blocks DISABLE TRIGGER ALL');
  await pgQuery(
    url,
    'UPDATE cplane_content_blocks SET text = convert_to($1, $2), redacted_by = NULL WHERE digest = decode($3, $4)',
    [secretMessage(secret), 'UTF8', block.digest, 'hex'],
  );
  await pgQuery(url, 'ALTER TABLE cplane_content_blocks ENABLE TRIGGER ALL');
  const restored = cli(['ledger', 'verify', '--store', url]);
  assert.equal(restored.status, 1, restored.stdout);
  assert.match(
    restored.stdout,
    new RegExp(`content: block ${block.digest} holds text, but REDACTED entry ${result.entry_id} removed it`),
  );
});

test('a redaction racing other writers (re-storing the very block) lands once, never forks the chain, and verifies', {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'redact_race');
  const redactor = await PgLedger.open(url, { create: true });
  const writers = [await PgLedger.open(url), await PgLedger.open(url), await PgLedger.open(url)];
  try {
    const secrets = Array.from({ length: 4 }, (_, i) =>
      secretMessage(`sk-race-${i}-${randomBytes(4).toString('hex')}`),
    );
    await redactor.appendBatch(secrets.map((m, i) => exchangeWith(`S${i}`, [m], 'ok')));
    const targets: string[] = [];
    for (let i = 0; i < secrets.length; i += 1) {
      const { blocks } = await selectRedaction(redactor, { session: `S${i}` });
      for (const digest of blocks) if ((await redactor.block(digest))?.text === secrets[i]) targets.push(digest);
    }
    assert.equal(targets.length, secrets.length);
    // The redactor's cached head goes stale: its first attempt loses the position and must hash again.
    await writers[0]?.append({ event_type: 'NOTE', submission_id: 's', decision: 'OK', reason: 'r', metadata: {} });
    let stop = false;
    let appended = 1;
    const appending = writers.map(async (w, k) => {
      // Each session's conversation goes on, its history (the secret's block among it) stored again every turn.
      for (let turn = 0; !stop && turn < 200; turn += 1) {
        await w.append(
          exchangeWith(`S${k}`, [secrets[k] as string, `,{"role":"user","content":"turn ${turn}"}`], 'ok'),
        );
        appended += 1;
      }
    });
    const redacting = (async () => {
      try {
        return await Promise.all(
          targets.map((digest) => redactor.redact([digest], { reason: 'race', by: 't', exchanges: [] })),
        );
      } finally {
        stop = true;
      }
    })();
    const [results] = await Promise.all([redacting, ...appending]);
    assert.deepEqual(
      results.map((r) => [r.redacted, r.already]),
      targets.map(() => [1, 0]),
    );
    assert.ok(redactor.stats.conflicts > 0, 'the redaction never lost the head to another writer');
    const verified = await verifyStore(redactor);
    assert.equal(verified.ok, true, JSON.stringify(verified));
    assert.equal(verified.entries, secrets.length + appended + targets.length);
    assert.equal(verified.content?.redacted_blocks, targets.length);
    const records = await pgQuery(url, "SELECT id FROM cplane_entries WHERE event_type = 'REDACTED'");
    assert.deepEqual(records.rows.map((r: { id: string }) => r.id).sort(), results.map((r) => r.entry.id).sort());
    // Turns appended after the redaction read the marker where the secret was.
    const [last] = await redactor.query({ session_id: 'S0', limit: 1 });
    assert.match(String(last?.metadata.prompt), /^\{"messages":\[\[REDACTED:LED-[0-9a-f]{8}\],/);
  } finally {
    for (const l of [redactor, ...writers]) await l.close();
  }
});

test('an export read while a redaction commits is one snapshot: it holds the redaction whole or not at all, and imports', {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'redact_export');
  const secret = `sk-live-PGEXPORT-${randomBytes(8).toString('hex')}`;
  const store = await PgLedger.open(url, { create: true });
  const redactor = await PgLedger.open(url);
  try {
    const [, second] = await store.appendBatch([
      exchangeWith('S1', ['{"role":"user","content":"hello"}'], 'hi'),
      exchangeWith('S2', [secretMessage(secret)], 'noted'),
    ]);
    let head: { seq: number; hash: string } | undefined;
    const lines = store.exportLines((h) => {
      head = h;
    });
    // The export is under way (the first exchange's content sent) when the second one's blocks are redacted.
    const first = await lines.next();
    const taken = [first.value as string];
    const { blocks, exchanges } = await selectRedaction(redactor, { exchange: (second as { id: string }).id });
    const { entry } = await redactor.redact(blocks, { reason: 'r', by: 't', exchanges }, { vacuum: false });
    for await (const line of lines) taken.push(line);
    // Read before the redaction: the text and no REDACTED entry, as the chain was at its head.
    assert.deepEqual(head?.seq, 2);
    const parsed = parseExport(taken, { source: 'the export' });
    assert.deepEqual(
      parsed.entries.map((e) => e.event_type),
      ['EXCHANGE', 'EXCHANGE'],
    );
    assert.ok(taken.join('\n').includes(secret));
    assert.equal(taken.join('\n').includes(entry.id), false);
    // Exported now: the redaction whole.
    const after: string[] = [];
    for await (const line of store.exportLines(() => undefined)) after.push(line);
    assert.equal(after.join('\n').includes(secret), false);
    assert.equal(parseExport(after, { source: 'the export' }).entries.at(-1)?.id, entry.id);
  } finally {
    await redactor.close();
    await store.close();
  }
});
