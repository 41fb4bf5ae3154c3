// Revoked route keys on PostgreSQL, shared by gateway hosts: a revocation on one host is refused on the others
// within a poll, always with its KEY_REVOKED record; a copy of the list that cannot be refreshed refuses every key
// (fail closed); a root's revoked-keys.json is copied in for a migration.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { PgLedger as PgLedgerT } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { CpError } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/errors.js')>('HOT/kernel/errors.js');
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { REVOKED_KEYS_REL } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js')>(
    'HOT/kernel/root/layout.js',
  );
const { issueToken } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/auth.js')>('HOT/router/auth.js');
// The router's own test harness (a router on a SQLite ledger, a mock provider), to check it maps a stale list.
const { harness, request } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/tests/router/harness.js')>(
    'HOT/tests/router/harness.js',
  );
const { PgRevocations, copyRevocations, revokeKeyPg } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/revocations.js')>(
    'HOT/router/pg/revocations.js',
  );

const skip = pgSkip();
const havePg = skip === false;

let server: PgServer | undefined;
let work: string;
let databases = 0;
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-revoked-'));
  if (havePg) server = await startPgServer();
});
after(() => {
  server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const POLL_MS = 50;
const now = { ms: 1_800_000_000_000 };
const clock = (): number => now.ms;
const KEY = 'key_0123456789abcdef';
const OTHER = 'key_fedcba9876543210';

const fresh = async (): Promise<string> => createDatabase(server as PgServer, `revoked_${(databases += 1)}`);
const pool = (url: string): pg.Pool => {
  const p = new pg.Pool({ connectionString: url, max: 2 });
  p.on('error', () => {
    // An idle connection dropped by a stopped server: the next query reconnects.
  });
  return p;
};

/** Poll for a condition (never a fixed sleep): fails with `what` when it does not hold within the bound. */
async function until(what: string, condition: () => boolean, boundMs = 10_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`not within ${boundMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function revokedRecords(ledger: PgLedgerT): Promise<number> {
  let n = 0;
  for await (const row of ledger.rows()) if (row.event_type === 'KEY_REVOKED') n += 1;
  return n;
}

test('a key revoked on one host is refused on another within a poll, with its KEY_REVOKED record; again is a no-op', {
  skip,
}, async () => {
  const url = await fresh();
  const ledger = await PgLedger.open(url, { create: true });
  const otherPool = pool(url);
  const here = await PgRevocations.open(ledger.pool, { pollMs: POLL_MS, clock });
  const there = await PgRevocations.open(otherPool, { pollMs: POLL_MS, clock });
  try {
    assert.equal(there.isRevoked([KEY]), false);
    const result = await revokeKeyPg(ledger.pool, ledger, KEY, 'leaked in a log', clock);
    assert.equal(result.changed, true);
    assert.equal(result.revoked_at, new Date(now.ms).toISOString());
    await until('the other host refuses the key', () => there.isRevoked([OTHER, KEY]));
    assert.equal(there.isRevoked([OTHER]), false, 'other keys still pass');
    await until('this host too', () => here.isRevoked([KEY]));

    const entry = await ledger.get(result.entry_id as string);
    assert.equal(entry?.event_type, 'KEY_REVOKED');
    assert.equal(entry?.submission_id, KEY);
    assert.equal(entry?.reason, 'leaked in a log');
    assert.equal(entry?.metadata.key_id, KEY);
    assert.equal(entry?.metadata.revoked_at, result.revoked_at);
    assert.equal(entry?.metadata.revoked_count, 1);

    now.ms += 1000;
    const again = await revokeKeyPg(otherPool, ledger, KEY, 'twice', clock);
    assert.deepEqual(again, { key_id: KEY, changed: false, entry_id: null, revoked_at: result.revoked_at });
    assert.equal(await revokedRecords(ledger), 1, 'recorded once');

    await assert.rejects(
      revokeKeyPg(ledger.pool, ledger, 'not a key id', null, clock),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_TOKEN_INVALID',
    );
    assert.equal(there.status().ok, true);
    assert.equal(there.status().revoked, 1);
  } finally {
    await here.stop();
    await there.stop();
    await otherPool.end();
    await ledger.close();
  }
});

test('a ledger that refuses the record leaves no revocation behind, and its error is the one thrown', {
  skip,
}, async () => {
  const url = await fresh();
  const p = pool(url);
  const refusing = {
    appendBatch: async (): Promise<never> => {
      throw new Error('the ledger is full');
    },
  };
  try {
    await assert.rejects(revokeKeyPg(p, refusing, KEY, null, clock), /the ledger is full/);
    const rows = await p.query('SELECT key_id FROM cplane_revoked_keys');
    assert.equal(rows.rowCount, 0, 'rolled back');
    const check = await PgRevocations.open(p, { pollMs: POLL_MS, clock });
    assert.equal(check.isRevoked([KEY]), false);
    await check.stop();
  } finally {
    await p.end();
  }
});

test('the database unreachable for longer than maxStaleMs: every key is refused (fail closed) until a read succeeds', {
  skip,
}, async () => {
  const s = server as PgServer;
  const url = await fresh();
  const ledger = await PgLedger.open(url, { create: true });
  await revokeKeyPg(ledger.pool, ledger, KEY, null, clock);
  const p = pool(url);
  const check = await PgRevocations.open(p, { pollMs: POLL_MS, maxStaleMs: 5000, clock });
  let halted = false;
  try {
    s.halt();
    halted = true;
    await until('a failed read is reported', () => check.status().ok === false);
    assert.match(check.status().last_error ?? '', /^ERR_STORE_UNAVAILABLE: /);
    assert.equal(check.isRevoked([OTHER]), false, 'within maxStaleMs the last copy answers');
    assert.equal(check.isRevoked([KEY]), true);
    now.ms += 5001;
    for (const ids of [[OTHER], [KEY]]) {
      assert.throws(
        () => check.isRevoked(ids),
        (e: unknown) => e instanceof CpError && e.code === 'ERR_REVOCATION_LIST_STALE' && /5001 ms ago/.test(e.message),
      );
    }
    s.start();
    halted = false;
    await until('a read succeeds again', () => check.status().ok, 30_000);
    assert.equal(check.isRevoked([OTHER]), false);
    assert.equal(check.isRevoked([KEY]), true);
  } finally {
    if (halted) s.start();
    await check.stop();
    await p.end();
    await ledger.close();
  }
});

test('a read whose reply comes late is as old as when it was sent: it does not make a stale list fresh', {
  skip,
}, async () => {
  const url = await fresh();
  const p = pool(url);
  const check = await PgRevocations.open(p, { pollMs: POLL_MS, maxStaleMs: 5000, clock });
  const q = p as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const real = q.query.bind(q);
  const gates: Array<{ open: () => void; opened: Promise<void> }> = [0, 1].map(() => {
    let open: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { open, opened };
  });
  let asked = 0;
  q.query = async (...args: unknown[]) => {
    const gate = gates[Math.min(asked, 1)];
    asked += 1;
    await gate?.opened;
    return real(...args);
  };
  try {
    await until('a read is waiting for its reply', () => asked === 1);
    now.ms += 5001;
    gates[0]?.open();
    await until('the late reply arrived and the next read was sent', () => asked === 2);
    assert.throws(
      () => check.isRevoked([KEY]),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_REVOCATION_LIST_STALE',
    );
    assert.equal(check.status().ok, false);
    gates[1]?.open();
    await until('a read sent after the clock moved makes it fresh', () => check.status().ok);
    assert.equal(check.isRevoked([KEY]), false);
  } finally {
    for (const gate of gates) gate.open();
    q.query = real;
    await check.stop();
    await p.end();
  }
});

test('copyRevocations copies a root’s revoked-keys.json, keeping ids already there; an absent file copies nothing', {
  skip,
}, async () => {
  const url = await fresh();
  const p = pool(url);
  const root = mkdtempSync(join(work, 'root-'));
  try {
    assert.equal(await copyRevocations(root, p), 0);
    const ledger = { appendBatch: async () => [] };
    await revokeKeyPg(p, ledger, KEY, 'already here', clock);
    const file = join(root, REVOKED_KEYS_REL);
    mkdirSync(dirname(file), { recursive: true });
    const digest = `sha256:${'ab'.repeat(32)}`;
    writeFileSync(
      file,
      JSON.stringify({
        schema_version: '1',
        revoked: [
          { key_id: KEY, revoked_at: '2026-01-01T00:00:00.000Z', reason: 'from the file' },
          { key_id: OTHER, revoked_at: '2026-01-02T00:00:00.000Z', reason: null },
          { key_id: digest, revoked_at: '2026-01-03T00:00:00.000Z', reason: 'a token without jti' },
        ],
      }),
    );
    assert.equal(await copyRevocations(root, p), 2);
    assert.equal(await copyRevocations(root, p), 0, 'again adds nothing');
    const rows = (await p.query('SELECT key_id, revoked_at, reason FROM cplane_revoked_keys ORDER BY key_id')).rows;
    assert.deepEqual(rows, [
      { key_id: KEY, revoked_at: new Date(clock()).toISOString(), reason: 'already here' },
      { key_id: OTHER, revoked_at: '2026-01-02T00:00:00.000Z', reason: null },
      { key_id: digest, revoked_at: '2026-01-03T00:00:00.000Z', reason: 'a token without jti' },
    ]);
    const check = await PgRevocations.open(p, { pollMs: POLL_MS, clock });
    assert.equal(check.isRevoked([digest]), true);
    await check.stop();
  } finally {
    await p.end();
  }
});

test('the router on PgRevocations: a key revoked elsewhere is AUTH_REVOKED, a stale list AUTH_REVOCATION_LIST_INVALID', {
  skip,
}, async (t) => {
  const s = server as PgServer;
  const url = await fresh();
  const ledger = await PgLedger.open(url, { create: true });
  const p = pool(url);
  const check = await PgRevocations.open(p, { pollMs: POLL_MS, maxStaleMs: 5000, clock });
  const keys = { default: 'revocations-pg-test-secret' };
  const h = harness(t, { router: { devMode: false, authKeys: keys, revocations: check } });
  const nowS = Math.floor(h.now.ms / 1000);
  const token = (jti: string): string =>
    issueToken({ sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 600, jti }, keys);
  const revoked = token(KEY);
  const kept = token(OTHER);
  let halted = false;
  try {
    assert.equal((await h.router.route(request({ auth_token: revoked }))).outcome, 'success');
    await revokeKeyPg(ledger.pool, ledger, KEY, 'rotated', clock);
    await until('this router refuses the key', () => check.isRevoked([KEY]));
    assert.equal((await h.router.route(request({ auth_token: revoked }))).error_code, 'AUTH_REVOKED');
    assert.equal((await h.router.route(request({ auth_token: kept }))).outcome, 'success');

    s.halt();
    halted = true;
    await until('a failed read is reported', () => check.status().ok === false);
    now.ms += 5001;
    const refused = await h.router.route(request({ auth_token: kept }));
    assert.equal(refused.error_code, 'AUTH_REVOCATION_LIST_INVALID');
    assert.match(refused.error_message ?? '', /^ERR_REVOCATION_LIST_STALE: /);
    s.start();
    halted = false;
    await until('the list is read again', () => check.status().ok, 30_000);
    assert.equal((await h.router.route(request({ auth_token: kept }))).outcome, 'success');
  } finally {
    if (halted) s.start();
    await check.stop();
    await p.end();
    await ledger.close();
  }
});
