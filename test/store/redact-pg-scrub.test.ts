// The scrub after `cplane ledger redact --store` (VACUUM FULL of the blocks table, then CHECKPOINT) when it cannot
// run: a role that may append and redact but does not own the table and may not checkpoint, and a table another
// transaction holds locked. The redaction is committed either way, the chain verifies, and the output says what
// was not done, truthfully: the text is still in the table files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { cli as run } from '../gateway/harness.js';
import { filesHolding } from '../../scripts/lib/files-holding.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { PG_RESIDUE } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-scrub.js')
>('HOT/kernel/ledger/pg/pg-scrub.js');
const { selectRedaction } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/redaction.js')
>('HOT/kernel/ledger/redaction.js');

const skip = pgSkip();
let server: PgServer | undefined;

before(async () => {
  if (skip !== false) return;
  server = await startPgServer();
});
after(() => server?.stop());

// The store is named only by the flag here, never by the caller's environment.
const cli = (args: string[]) => run(args, { CPLANE_DATABASE_URL: '' });

const VACUUM_ASK =
  'the table files still hold the removed text until the table owner runs `VACUUM (FULL) cplane_content_blocks`';

/** A database laid out and written by the superuser `cplane`, holding one exchange; the secret's block digest. */
async function storeWithSecret(name: string, secret: string): Promise<{ url: string; digest: string }> {
  const url = await createDatabase(server as PgServer, name);
  const message = `{"role":"user","content":"my key is ${secret}"}`;
  const store = await PgLedger.open(url, { create: true });
  try {
    await store.append({
      event_type: 'EXCHANGE',
      submission_id: 'anthropic.messages',
      decision: 'SUCCESS',
      reason: 'Exchange completed',
      metadata: { session_id: 'S1', agent_id: 'A1' },
      content: { prompt: ['{"messages":[', message, ']}'], response: ['noted'] },
    });
    const { blocks } = await selectRedaction(store, { session: 'S1' });
    for (const digest of blocks) if ((await store.block(digest))?.text === message) return { url, digest };
  } finally {
    await store.close();
  }
  throw new Error('the secret has no block');
}

interface Redacted {
  entry_id: string;
  redacted: number;
  checkpointed: boolean;
  warnings: string[];
}

/** The redaction committed and the chain verifies as `url`'s role sees it. */
function assertCommitted(url: string, result: Redacted): void {
  assert.equal(result.redacted, 1);
  const verified = cli(['ledger', 'verify', '--store', url, '--json']);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  const report = JSON.parse(verified.stdout) as { ok: boolean; entries: number; content: { redacted_blocks: number } };
  assert.deepEqual([report.ok, report.entries, report.content.redacted_blocks], [true, 2, 1]);
}

test('ledger redact --store as a role that neither owns the blocks table nor may checkpoint: committed, verifies, and warns of both', {
  skip,
}, async () => {
  const s = server as PgServer;
  const secret = `sk-live-PGROLE-${randomBytes(8).toString('hex')}`;
  const { url, digest } = await storeWithSecret('redact_role', secret);
  // What `ledger redact --store` needs and no more: read the ledger (its Merkle tiles too: `ledger verify` re-checks
  // them), append the entry, empty a block's text.
  await pgQuery(url, 'CREATE ROLE cplane_redactor LOGIN');
  await pgQuery(
    url,
    'GRANT SELECT ON cplane_entries, cplane_content_blocks, cplane_content_lists, cplane_ledger_meta, cplane_merkle_tiles TO cplane_redactor',
  );
  await pgQuery(url, 'GRANT INSERT ON cplane_entries TO cplane_redactor');
  await pgQuery(url, 'GRANT UPDATE (text, redacted_by) ON cplane_content_blocks TO cplane_redactor');
  const asRole = new URL(url);
  asRole.username = 'cplane_redactor';
  const roleUrl = asRole.toString();
  const roles = await pgQuery(
    url,
    `SELECT r.rolsuper, pg_has_role('cplane_redactor', 'pg_checkpoint', 'USAGE') AS checkpoint,
       pg_get_userbyid(c.relowner) AS owner, pg_get_userbyid(d.datdba) AS dba
     FROM pg_roles r, pg_class c, pg_database d
     WHERE r.rolname = 'cplane_redactor' AND c.relname = 'cplane_content_blocks' AND d.datname = 'redact_role'`,
  );
  assert.deepEqual(roles.rows, [{ rolsuper: false, checkpoint: false, owner: 'cplane', dba: 'cplane' }]);

  const done = cli(['ledger', 'redact', '--store', roleUrl, '--block', digest, '--reason', 'pasted key', '--json']);
  assert.equal(done.status, 0, done.stderr);
  const result = JSON.parse(done.stdout) as Redacted;
  assert.equal(result.checkpointed, false);
  assert.equal(result.warnings.length, 3, JSON.stringify(result.warnings));
  const [vacuum, checkpoint, residue] = result.warnings as [string, string, string];
  // The server's own words for the skip are quoted; they name the table.
  assert.match(vacuum, /^VACUUM FULL did not run \([^)]*cplane_content_blocks[^)]*\): /);
  assert.ok(vacuum.endsWith(`): ${VACUUM_ASK}`), vacuum);
  assert.equal(
    checkpoint,
    'this role may not run CHECKPOINT (superuser or pg_checkpoint): the emptied table files go, and the WAL holding the text becomes recyclable, at the server’s next checkpoint',
  );
  assert.equal(residue, PG_RESIDUE);

  assertCommitted(roleUrl, result);
  const [row] = (
    await pgQuery(url, "SELECT text, redacted_by FROM cplane_content_blocks WHERE digest = decode($1, 'hex')", [digest])
  ).rows as { text: Buffer | null; redacted_by: string }[];
  assert.deepEqual(row, { text: null, redacted_by: result.entry_id });
  // The warning is true: the old row version, text included, is still in the table files.
  await pgQuery(url, 'CHECKPOINT');
  assert.ok(
    filesHolding(s.dataDir, secret).filter((p) => !p.startsWith('pg_wal/')).length > 0,
    'the text left the table files though VACUUM did not run',
  );
});

test('ledger redact --store while another transaction holds the blocks table: VACUUM FULL gives up on its lock timeout with a warning; the redaction is committed', {
  skip,
}, async () => {
  const s = server as PgServer;
  const secret = `sk-live-PGLOCK-${randomBytes(8).toString('hex')}`;
  const { url, digest } = await storeWithSecret('redact_locked', secret);
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    // A reader's lock: the redaction's UPDATE goes through it, VACUUM FULL's exclusive lock cannot.
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE cplane_content_blocks IN ACCESS SHARE MODE');
    const done = cli(['ledger', 'redact', '--store', url, '--block', digest, '--reason', 'pasted key', '--json']);
    assert.equal(done.status, 0, done.stderr);
    const result = JSON.parse(done.stdout) as Redacted;
    assert.equal(result.checkpointed, false);
    assert.deepEqual(result.warnings, [
      `VACUUM FULL could not lock cplane_content_blocks within 10s (a long transaction holds it): ${VACUUM_ASK}`,
      PG_RESIDUE,
    ]);
    // Committed while the lock is still held.
    const [row] = (
      await holder.query("SELECT text, redacted_by FROM cplane_content_blocks WHERE digest = decode($1, 'hex')", [
        digest,
      ])
    ).rows as { text: Buffer | null; redacted_by: string }[];
    assert.deepEqual(row, { text: null, redacted_by: result.entry_id });
    await holder.query('ROLLBACK');
    assertCommitted(url, result);
    await pgQuery(url, 'CHECKPOINT');
    assert.ok(
      filesHolding(s.dataDir, secret).filter((p) => !p.startsWith('pg_wal/')).length > 0,
      'the text left the table files though VACUUM did not run',
    );
  } finally {
    await holder.end();
  }
});
