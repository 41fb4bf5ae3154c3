// A PostgreSQL ledger whose tables were altered outside cplane (by their owner or a superuser): a trigger keeping
// rows append-only disabled or running an edited function, a trigger or rule of someone else's, a column of
// another type, a table shadowed from another schema. Reads still answer; nothing is appended, and verify FAILs
// naming what changed. Each case on a database of its own on one throwaway server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { openSharedStore } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-store.js')
>('HOT/router/pg/shared-store.js');
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skip = pgSkip();
let server: PgServer | undefined;
before(async () => {
  if (skip === false) server = await startPgServer();
});
after(() => server?.stop());

const note = (n: number): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: 'anthropic.messages',
  decision: 'SUCCESS',
  reason: 'r',
  metadata: { session_id: 'S1', n },
});

let databases = 0;

/** A ledger of one entry, then `alter` run on its database behind cplane's back. */
async function altered(alter: string): Promise<{ url: string; id: string }> {
  const url = await createDatabase(server as PgServer, `schema_${(databases += 1)}`);
  const first = await PgLedger.open(url, { create: true });
  let id: string;
  try {
    id = (await first.append(note(0))).id;
  } finally {
    await first.close();
  }
  await pgQuery(url, alter);
  return { url, id };
}

const cases: [string, string, RegExp, { repairedByCreate?: boolean }?][] = [
  [
    'the append-only trigger disabled',
    'ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only',
    /trigger cplane_entries_append_only on cplane_entries is disabled/,
  ],
  [
    'the append-only trigger set to fire only on a replica',
    'ALTER TABLE cplane_content_lists ENABLE REPLICA TRIGGER cplane_lists_append_only',
    /trigger cplane_lists_append_only on cplane_content_lists is disabled/,
  ],
  [
    "the trigger's function edited to let rows change",
    'CREATE OR REPLACE FUNCTION cplane_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$',
    /trigger cplane_entries_append_only on cplane_entries runs "cplane_append_only", which is not cplane's/,
    // Opening with create lays the functions out again (as an upgrade does).
    { repairedByCreate: true },
  ],
  [
    "the Merkle tree's tile writer edited to write tiles that are not the chain's",
    'CREATE OR REPLACE FUNCTION cplane_merkle_push(upto bigint) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RETURN; END $$',
    /function cplane_merkle_push is not cplane's/,
    { repairedByCreate: true },
  ],
  [
    'a trigger rewriting rows as they are written',
    `CREATE FUNCTION rewrite() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.reason := 'x'::bytea; RETURN NEW; END $$;
     CREATE TRIGGER zz_rewrite BEFORE INSERT ON cplane_entries FOR EACH ROW EXECUTE FUNCTION rewrite()`,
    /table cplane_entries has a trigger cplane did not lay out: "zz_rewrite"/,
  ],
  [
    'a rule dropping rows as they are written',
    'CREATE RULE drop_blocks AS ON INSERT TO cplane_content_blocks DO INSTEAD NOTHING',
    /table cplane_content_blocks has a rule cplane did not lay out: "drop_blocks"/,
  ],
  [
    'a column of another type',
    'ALTER TABLE cplane_entries ALTER COLUMN timestamp TYPE varchar(24)',
    /table cplane_entries has columns \(.*timestamp character varying\(24\).*\), not/,
  ],
  [
    "a table shadowed by a same-named one in the role's own schema (first on the search path)",
    'CREATE SCHEMA cplane; CREATE TABLE cplane.cplane_entries (LIKE public.cplane_entries INCLUDING ALL)',
    // Opened with create, the tables not shadowed are laid out again beside it, without their triggers.
    /not all in one schema|trigger cplane_entries_append_only on cplane_entries is missing/,
  ],
];

for (const [name, alter, problem, { repairedByCreate = false } = {}] of cases)
  test(`${name}: reads answer, nothing is appended (ERR_LEDGER_SCHEMA_ALTERED), verify FAILs naming it`, {
    skip,
  }, async () => {
    const { url, id } = await altered(alter);
    // Opened without create (as the CLI reads it) and with it (as serve opens it).
    for (const create of repairedByCreate ? [false] : [false, true]) {
      const ledger = await PgLedger.open(url, { create });
      try {
        await assert.rejects(
          ledger.append(note(1)),
          (e: unknown) =>
            (e as { code?: string }).code === 'ERR_LEDGER_SCHEMA_ALTERED' && problem.test((e as Error).message),
        );
        const verified = await verifyStore(ledger);
        assert.equal(verified.ok, false);
        assert.match(verified.content_problems.join('\n'), problem);
      } finally {
        await ledger.close();
      }
    }
    const rows = await pgQuery(url, 'SELECT id FROM public.cplane_entries');
    assert.deepEqual(
      rows.rows.map((r: { id: string }) => r.id),
      [id],
      'nothing was appended',
    );
  });

test('a ledger as cplane lays it out has no schema problems and takes appends', { skip }, async () => {
  const url = await createDatabase(server as PgServer, 'schema_intact');
  const ledger = await PgLedger.open(url, { create: true });
  try {
    await ledger.appendBatch([note(0), note(1)]);
    const verified = await verifyStore(ledger);
    assert.deepEqual(verified.content_problems, []);
    assert.equal(verified.ok, true);
  } finally {
    await ledger.close();
  }
});

test("a gateway's shared store on an altered ledger reports the host not ready (readyz), naming the change", {
  skip,
}, async () => {
  const budgetConfig = {
    schema_version: '1',
    mode: 'enforce',
    currency: 'USD',
    pricing: {},
    limits: {},
    rate_limits: {},
  };
  const { url } = await altered('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
  const shared = await openSharedStore(url, { budgetConfig });
  try {
    assert.match(shared.problem() ?? '', /altered schema.*cplane_entries_append_only on cplane_entries is disabled/);
  } finally {
    await shared.close();
  }
  const intact = await openSharedStore(await createDatabase(server as PgServer, 'schema_ready'), { budgetConfig });
  try {
    assert.equal(intact.problem(), null);
  } finally {
    await intact.close();
  }
});
