// `cplane ledger migrate --to postgres://…` on a bootstrapped root with exchanges and a redaction: the copy
// verifies to the same head hash (so the root's signed checkpoints hold), a rerun copies nothing, and a target
// holding another chain, or a URL holding a password, is refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { cli } from '../gateway/harness.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { canonicalJson } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js')>('HOT/kernel/canonical.js');
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skip = pgSkip();
const havePg = skip === false;

const REVOKED = 'key-stolen-laptop-01';
let server: PgServer | undefined;
let work: string;
let root: string;

before(async () => {
  if (!havePg) return;
  work = mkdtempSync(join(tmpdir(), 'cp-migrate-'));
  root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  // The long prompt is stored compressed on SQLite; PostgreSQL gets its plain text.
  const long = `please review: ${'the ledger keeps every exchange once; '.repeat(12)}`;
  for (const prompt of ['hello', long, 'my password is hunter2-secret']) {
    const r = cli(['route', '--root', root, '--prompt', prompt, '--dev', '--session', 'SES-M']);
    assert.equal(r.status, 0, r.stderr);
  }
  const last = JSON.parse(
    cli(['ledger', 'query', '--root', root, '--event-type', 'EXCHANGE', '--limit', '1', '--json']).stdout,
  ) as { id: string }[];
  const redact = cli([
    'ledger',
    'redact',
    '--root',
    root,
    '--exchange',
    (last[0] as { id: string }).id,
    '--reason',
    'pasted a password',
  ]);
  assert.equal(redact.status, 0, redact.stderr);
  const revoke = cli(['token', 'revoke', '--root', root, '--key-id', REVOKED, '--reason', 'laptop stolen']);
  assert.equal(revoke.status, 0, revoke.stderr);
  server = await startPgServer();
});
after(() => {
  server?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

test('a root ledger migrates to PostgreSQL with the same head; a rerun copies nothing', { skip }, async () => {
  const url = (server as PgServer).url;
  const head = JSON.parse(cli(['ledger', 'head', '--root', root, '--json']).stdout) as { seq: number; hash: string };
  const source = new Database(join(root, 'HOT', 'ledger', 'ledger.sqlite'), { readonly: true });
  const compressed = source
    .prepare("SELECT count(*) FROM content_blocks WHERE typeof(text) = 'blob'")
    .pluck()
    .get() as number;
  source.close();
  assert.ok(compressed > 0, 'the source holds compressed blocks');
  const r = cli(['ledger', 'migrate', '--root', root, '--to', url, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const result = JSON.parse(r.stdout) as {
    entries: number;
    copied: number;
    blocks: number;
    head: { seq: number; hash: string };
    budget: { reservations: number; reservations_present: number; scopes_differing: number } | null;
    revocations: { revoked: number; copied: number } | null;
  };
  assert.deepEqual(result.head, head);
  // So did its revoked keys: revoked before the switch, revoked on every host after it.
  assert.deepEqual(result.revocations, { revoked: 1, copied: 1 });
  // The root's budget went with it: every reservation its routes made, with totals that agree with them.
  const budgetFile = new Database(join(root, 'HOT', 'registries', 'budget.sqlite'), { readonly: true });
  const made = budgetFile.prepare('SELECT COUNT(*) FROM reservations').pluck().get() as number;
  budgetFile.close();
  assert.ok(made >= 3, `the routes reserved budget (${made})`);
  assert.deepEqual(result.budget, {
    ...(result.budget ?? {}),
    reservations: made,
    reservations_present: 0,
    scopes_differing: 0,
  });
  const pgBudget = new pg.Client({ connectionString: url });
  await pgBudget.connect();
  try {
    const n = await pgBudget.query('SELECT COUNT(*)::int AS n FROM cplane_budget_reservations');
    assert.equal(n.rows[0]?.n, made);
    const revoked = await pgBudget.query('SELECT key_id, reason FROM cplane_revoked_keys');
    assert.deepEqual(revoked.rows, [{ key_id: REVOKED, reason: 'laptop stolen' }]);
  } finally {
    await pgBudget.end();
  }
  assert.equal(result.copied, head.seq);
  assert.ok(result.blocks > 0, 'content was copied');
  const target = await PgLedger.open(url);
  try {
    const check = await verifyStore(target);
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.deepEqual(check.head, head);
    // A read on PostgreSQL shows what the root shows, the redaction marker included.
    const exchanges = JSON.parse(
      cli(['ledger', 'query', '--root', root, '--event-type', 'EXCHANGE', '--json']).stdout,
    ) as {
      id: string;
      metadata: { prompt: string };
    }[];
    for (const e of exchanges) assert.equal((await target.get(e.id))?.metadata.prompt, e.metadata.prompt);
    assert.ok(exchanges.some((e) => e.metadata.prompt.includes('[REDACTED:')));
    // `ledger export` of either store writes the same bytes (content lines, the redacted block and all), to a file
    // and to stdout, and `--text` shows the same reads; the export of PostgreSQL imports and verifies to the head.
    const local = JSON.parse(cli(['ledger', 'head', '--root', root, '--json']).stdout);
    assert.deepEqual(local, head, 'the migration left the root file as it was');
    const fromFile = join(work, 'export-sqlite.jsonl');
    const fromStore = join(work, 'export-pg.jsonl');
    assert.equal(cli(['ledger', 'export', '--root', root, '--out', fromFile]).status, 0);
    const exported = cli(['ledger', 'export', '--store', url, '--out', fromStore, '--json']);
    assert.equal(exported.status, 0, exported.stderr);
    assert.deepEqual(JSON.parse(exported.stdout), { path: fromStore, head });
    const bytes = readFileSync(fromStore, 'utf8');
    assert.equal(bytes, readFileSync(fromFile, 'utf8'));
    assert.match(bytes, /"content_block":\{"digest":"[0-9a-f]{64}","redacted_by":"LED-/);
    assert.equal(cli(['ledger', 'export', '--store', url]).stdout, bytes);
    assert.equal(
      cli(['ledger', 'export', '--store', url, '--text']).stdout,
      cli(['ledger', 'export', '--root', root, '--text']).stdout,
    );
    // The file's export imports into an empty PostgreSQL database (all or nothing, only once) and appends there go on.
    const fresh = await createDatabase(server as PgServer, 'imported');
    const into = cli(['ledger', 'import', '--store', fresh, '--from', fromFile, '--json']);
    assert.equal(into.status, 0, into.stderr);
    assert.deepEqual(JSON.parse(into.stdout), { imported: head.seq, head });
    assert.equal(cli(['ledger', 'export', '--store', fresh]).stdout, bytes, 'the same chain and content');
    const again = cli(['ledger', 'import', '--store', fresh, '--from', fromFile]);
    assert.notEqual(again.status, 0);
    assert.match(again.stderr, /ERR_LEDGER_IMPORT_NOT_EMPTY/);
    const appended = cli([
      ...['ledger', 'append', '--store', fresh, '--event-type', 'NOTE', '--submission-id', 's'],
      ...['--decision', 'OK', '--reason', 'after the import', '--json'],
    ]);
    assert.equal(appended.status, 0, appended.stderr);
    assert.equal((JSON.parse(appended.stdout) as { previous_hash: string }).previous_hash, head.hash);
    const checked = cli(['ledger', 'verify', '--store', fresh, '--json']);
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    const reimported = join(work, 'reimported.sqlite');
    const imported = cli(['ledger', 'import', '--ledger', reimported, '--from', fromStore, '--json']);
    assert.equal(imported.status, 0, imported.stderr);
    assert.deepEqual(JSON.parse(cli(['ledger', 'head', '--ledger', reimported, '--json']).stdout), head);
    // New appends on PostgreSQL continue the chain.
    const next = await target.append({
      event_type: 'NOTE',
      submission_id: 'after',
      decision: 'OK',
      reason: 'r',
      metadata: {},
    });
    assert.equal(next.previous_hash, head.hash);
  } finally {
    await target.close();
  }
  // The root's signed checkpoints hold for the PostgreSQL chain, and verify re-hashes it end to end.
  const verified = cli(['ledger', 'verify', '--root', root, '--store', url, '--json']);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  const report = JSON.parse(verified.stdout) as {
    ok: boolean;
    entries: number;
    checkpoints: { verified: number; ok: boolean };
  };
  assert.equal(report.entries, head.seq + 1);
  assert.ok(report.checkpoints.verified >= 1, 'the root has at least its genesis checkpoint');
  const again = cli(['ledger', 'migrate', '--root', root, '--to', url]);
  assert.notEqual(again.status, 0, 'the target moved on (the NOTE): it is no longer a prefix of the root');
  assert.match(again.stderr, /ERR_LEDGER_MIGRATE_TARGET/);
});

test('an interrupted migration resumes; another chain and a password in the URL are refused', { skip }, async () => {
  const s = server as PgServer;
  const url = await createDatabase(s, 'resume');
  // Half a migration: the first entries only, as a run cut short would leave them.
  const target = await PgLedger.open(url, { create: true });
  try {
    const rows = [];
    for (const line of cli(['ledger', 'export', '--root', root]).stdout.trim().split('\n')) {
      const value = JSON.parse(line) as Record<string, unknown>;
      if ('id' in value) rows.push(value);
      if (rows.length === 3) break;
    }
    assert.equal(rows.length, 3);
    const written = await target.appendRows(
      { seq: 0, hash: '0'.repeat(64) },
      rows.map((e, i) => ({
        seq: i + 1,
        id: e.id as string,
        event_type: e.event_type as string,
        submission_id: e.submission_id as string,
        decision: e.decision as string,
        reason: e.reason as string,
        metadata: canonicalJson(e.metadata),
        timestamp: e.timestamp as string,
        previous_hash: e.previous_hash as string,
        entry_hash: e.entry_hash as string,
      })),
      [],
      [],
    );
    assert.equal(written, true);
  } finally {
    await target.close();
  }
  const first = cli(['ledger', 'migrate', '--root', root, '--to', url, '--json']);
  assert.equal(first.status, 0, first.stderr);
  const resumed = JSON.parse(first.stdout) as { entries: number; copied: number };
  assert.equal(resumed.copied, resumed.entries - 3, 'the three entries already there were not copied again');
  const rerun = cli(['ledger', 'migrate', '--root', root, '--to', url, '--json']);
  assert.equal(rerun.status, 0, rerun.stderr);
  assert.equal((JSON.parse(rerun.stdout) as { copied: number }).copied, 0);
  // A database that is not there, and a server that is not listening: coded, never an internal error.
  for (const target of [s.url.replace(/\/cplane$/, '/no_such_db'), 'postgres://cplane@127.0.0.1:1/cplane']) {
    const away = cli(['ledger', 'migrate', '--root', root, '--to', target]);
    assert.notEqual(away.status, 0);
    assert.match(away.stderr, /ERR_STORE_UNAVAILABLE/, away.stderr);
    assert.doesNotMatch(away.stderr, /ERR_INTERNAL/);
  }
  const secret = cli(['ledger', 'migrate', '--root', root, '--to', url.replace('cplane@', 'cplane:hunter2@')]);
  assert.notEqual(secret.status, 0);
  assert.match(secret.stderr, /ERR_STORE_URL/);
  assert.doesNotMatch(secret.stderr, /hunter2/);
});

test('verify --store catches an entry edited inside PostgreSQL, and names it', { skip }, async () => {
  const s = server as PgServer;
  const url = await createDatabase(s, 'tampered');
  assert.equal(cli(['ledger', 'migrate', '--root', root, '--to', url]).status, 0);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    // As an attacker with the database would: the trigger dropped, a reason rewritten, the trigger put back.
    await db.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
    const { rows } = await db.query(
      "UPDATE cplane_entries SET reason = convert_to('approved by nobody', 'UTF8') WHERE seq = 2 RETURNING id",
    );
    await db.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
    const r = cli(['ledger', 'verify', '--root', root, '--store', url, '--json']);
    assert.equal(r.status, 1, r.stderr);
    const report = JSON.parse(r.stdout) as { ok: boolean; first_bad: { id: string; problem: string } };
    assert.equal(report.ok, false);
    assert.deepEqual([report.first_bad.id, report.first_bad.problem], [(rows[0] as { id: string }).id, 'edited']);
  } finally {
    await db.end();
  }
});

test("ledger redact --store on a root that moved to the store says which of the blocks the root's own file still holds", {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'redact_after_move');
  assert.equal(cli(['ledger', 'migrate', '--root', root, '--to', url]).status, 0);
  const dry = cli(['ledger', 'redact', '--store', url, '--session', 'SES-M', '--dry-run', '--json']);
  assert.equal(dry.status, 0, dry.stderr);
  const { blocks } = JSON.parse(dry.stdout) as { blocks: { digest: string; preview: string | null }[] };
  const long = blocks.find((b) => b.preview?.includes('please review')) as { digest: string };
  assert.ok(long, dry.stdout);
  const args = ['ledger', 'redact', '--store', url, '--block', long.digest, '--reason', 'r', '--json'];
  const r = cli([...args.slice(0, 2), '--root', root, ...args.slice(2)]);
  assert.equal(r.status, 0, r.stderr);
  const { warnings } = JSON.parse(r.stdout) as { warnings: string[] };
  const local = join(root, 'HOT', 'ledger', 'ledger.sqlite');
  assert.ok(
    warnings.some(
      (w) => w.startsWith(`the root's own ledger ${local} still holds 1 of these blocks`) && w.includes(long.digest),
    ),
    JSON.stringify(warnings),
  );
  // Removed there too, as the warning says: a second redaction on the store has nothing left to say of the file.
  const there = cli(['ledger', 'redact', '--ledger', local, '--block', long.digest, '--reason', 'r']);
  assert.equal(there.status, 0, there.stderr);
  const again = cli([...args.slice(0, 2), '--root', root, ...args.slice(2)]);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(
    (JSON.parse(again.stdout) as { warnings: string[] }).warnings.some((w) => w.includes("the root's own ledger")),
    false,
  );
});
