// `ledger prove --store` and `ledger export-tiles --store` on a real PostgreSQL chain: the proofs verify offline with
// the exported vkey, and the files are the very files a SQLite ledger of the same chain exports (same tiles, same
// bundles, the same signed checkpoint), its proofs the same proofs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';

const { runCli } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/cli/main.js')>('HOT/cli/main.js');
const { createRoot } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/installer/genesis.js')>(
  'HOT/kernel/installer/genesis.js',
);
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);

const skip = pgSkip();
let server: PgServer | undefined;
let work = '';
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-pg-proofs-'));
  if (skip === false) server = await startPgServer();
});
after(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

interface Run {
  code: number;
  out: string;
  err: string;
}

async function cli(...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}

async function ok(...argv: string[]): Promise<Run> {
  const run = await cli(...argv);
  assert.equal(run.code, 0, `${argv.join(' ')}: ${run.err}${run.out}`);
  return run;
}

const input = (n: number): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: `SUB-${n}`,
  decision: 'SUCCESS',
  reason: `exchange ${n}`,
  metadata: { session_id: `S${n % 5}`, n },
});

/** Every file under `dir` by its path, with its bytes. */
function filesOf(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.set(relative(dir, path), readFileSync(path));
    }
  };
  walk(dir);
  return out;
}

test('prove and export-tiles read a PostgreSQL chain: proofs verify, tiles match a SQLite ledger of the same chain', {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'merkle_proofs');
  const root = join(work, 'root');
  createRoot(root);
  const store = await PgLedger.open(url, { create: true });
  const ids: string[] = [];
  try {
    let n = 0;
    // Batches of every shape, so tiles fill across statements: 1301 entries, 5 level-1 hashes and a partial tile.
    for (const size of [1, 255, 300, 1, 700, 44])
      for (const e of await store.appendBatch(Array.from({ length: size }, () => input((n += 1))))) ids.push(e.id);
  } finally {
    await store.close();
  }
  assert.equal(ids.length, 1301);

  const pgTiles = join(work, 'pg-tiles');
  const exported = JSON.parse(
    (await ok('ledger', 'export-tiles', '--root', root, '--store', url, pgTiles, '--json')).out,
  );
  assert.equal(exported.size, 1301);
  const vkey = join(pgTiles, 'vkey');
  assert.match(readFileSync(join(pgTiles, 'checkpoint'), 'utf8'), /^cplane\.ledger\/[0-9a-f]{32}\n1301\n/);
  const files = filesOf(pgTiles);
  for (const path of ['tile/0/005.p/21', 'tile/1/000.p/5', 'tile/entries/005.p/21', 'tile/0/004'])
    assert.ok(files.has(path), `${path} in ${[...files.keys()].join(' ')}`);
  assert.equal(files.get('tile/0/004')?.length, 256 * 32);

  const inclusion = join(work, 'pg-inclusion.json');
  await ok('ledger', 'prove', '--root', root, '--store', url, '--entry', ids[600] as string, '--out', inclusion);
  const proof = JSON.parse(readFileSync(inclusion, 'utf8'));
  assert.equal(proof.leaf_index, 600);
  assert.equal(proof.tree_size, 1301);
  assert.equal(proof.audit_path.length, 11);
  const checked = JSON.parse((await ok('ledger', 'verify-proof', inclusion, '--key', vkey, '--json')).out);
  assert.equal(checked.entry_id, ids[600]);

  const consistency = join(work, 'pg-consistency.json');
  await ok('ledger', 'prove', '--root', root, '--store', url, '--from', '257', '--to', '1300', '--out', consistency);
  await ok('ledger', 'verify-proof', consistency, '--key', vkey);

  // The chain grows; a proof against the exported checkpoint still proves the tree it signs.
  const grown = await PgLedger.open(url);
  try {
    await grown.appendBatch(Array.from({ length: 3 }, (_, i) => input(5000 + i)));
  } finally {
    await grown.close();
  }
  const against = join(work, 'pg-against.json');
  await ok(
    'ledger',
    'prove',
    '--root',
    root,
    '--store',
    url,
    '--entry',
    ids[1300] as string,
    '--checkpoint',
    join(pgTiles, 'checkpoint'),
    '--out',
    against,
  );
  assert.equal(JSON.parse(readFileSync(against, 'utf8')).tree_size, 1301);
  await ok('ledger', 'verify-proof', against, '--key', vkey);
  const grownProof = join(work, 'pg-grown.json');
  await ok(
    'ledger',
    'prove',
    '--root',
    root,
    '--store',
    url,
    '--from',
    join(pgTiles, 'checkpoint'),
    '--out',
    grownProof,
  );
  assert.equal(JSON.parse(readFileSync(grownProof, 'utf8')).new_size, 1304);
  await ok('ledger', 'verify-proof', grownProof, '--key', vkey);

  const missing = await cli('ledger', 'prove', '--root', root, '--store', url, '--entry', 'LED-ffffffff', '--json');
  assert.notEqual(missing.code, 0);
  assert.match(missing.out + missing.err, /ERR_PROOF_ENTRY_UNKNOWN/);

  // The same chain in a SQLite file (export → import keeps every entry as it is): the same files, the same proof.
  const lines = join(work, 'chain.jsonl');
  writeFileSync(lines, (await ok('ledger', 'export', '--store', url)).out);
  const file = join(work, 'copy.sqlite');
  await ok('ledger', 'import', '--ledger', file, '--from', lines);
  const pgAgain = join(work, 'pg-tiles-again');
  await ok('ledger', 'export-tiles', '--root', root, '--store', url, pgAgain);
  const { Ledger } =
    await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
      'HOT/kernel/ledger/index.js',
    );
  const { exportTiles } = await fromDevRoot<
    typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/export-tiles.js')
  >('HOT/kernel/ledger/merkle/export-tiles.js');
  const { proveInclusion } = await fromDevRoot<
    typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/ledger-proofs.js')
  >('HOT/kernel/ledger/merkle/ledger-proofs.js');
  const { rootSigner } =
    await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/cli/ledger/proof-key.js')>(
      'HOT/cli/ledger/proof-key.js',
    );
  const sqliteTiles = join(work, 'sqlite-tiles');
  const ledger = Ledger.open(file);
  let sqliteProof: unknown;
  try {
    ledger.ensureTree();
    exportTiles(ledger, sqliteTiles, rootSigner(root));
    sqliteProof = proveInclusion(
      ledger,
      ids[1300] as string,
      rootSigner(root),
      readFileSync(join(pgTiles, 'checkpoint'), 'utf8'),
    );
  } finally {
    ledger.close();
  }
  const fromPg = filesOf(pgAgain);
  const fromSqlite = filesOf(sqliteTiles);
  assert.deepEqual([...fromPg.keys()].sort(), [...fromSqlite.keys()].sort());
  for (const [path, bytes] of fromPg) assert.ok(bytes.equals(fromSqlite.get(path) as Buffer), `${path} differs`);
  assert.deepEqual(JSON.parse(readFileSync(against, 'utf8')), sqliteProof);
});

interface VerifyReport {
  tree: {
    ok: boolean;
    tiles: number;
    root: string;
    problems: { code: string; path: string; problem: string; message: string }[];
  };
  checkpoints: { verified: number; checked: number; findings: unknown[] };
}

test('ledger verify --store re-checks the PostgreSQL tiles against the chain and names a damaged one', {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'merkle_verify');
  const root = join(work, 'verify-root');
  createRoot(root);
  // The root's checkpoints sign the chain its gateway records into: the PostgreSQL one.
  rmSync(join(root, 'HOT', 'ledger', 'checkpoints'), { recursive: true, force: true });
  const store = await PgLedger.open(url, { create: true });
  try {
    await store.appendBatch(Array.from({ length: 1301 }, (_, i) => input(i)));
  } finally {
    await store.close();
  }
  await ok('ledger', 'checkpoint', '--root', root, '--store', url);
  const tiles = join(work, 'verify-tiles');
  await ok('ledger', 'export-tiles', '--root', root, '--store', url, tiles);
  const note = join(tiles, 'checkpoint');
  const verify = async (): Promise<{ code: number; report: VerifyReport }> => {
    const run = await cli('ledger', 'verify', '--root', root, '--store', url, '--checkpoint', note, '--json');
    return { code: run.code, report: JSON.parse(run.out) };
  };
  const intact = await verify();
  assert.equal(intact.code, 0, JSON.stringify(intact.report.checkpoints));
  assert.equal(intact.report.tree.ok, true);
  assert.equal(intact.report.tree.tiles, 1);
  assert.equal(intact.report.tree.root, readFileSync(note, 'utf8').split('\n')[2]);
  assert.equal(intact.report.checkpoints.verified, intact.report.checkpoints.checked);

  const [row] = (await pgQuery(url, 'SELECT hashes FROM cplane_merkle_tiles WHERE level = 1 AND idx = 0')).rows as {
    hashes: Buffer;
  }[];
  const edited = Buffer.from(row?.hashes as Buffer);
  edited[2 * 32 + 7] = (edited[2 * 32 + 7] as number) ^ 0x80;
  await pgQuery(url, 'UPDATE cplane_merkle_tiles SET hashes = $1 WHERE level = 1 AND idx = 0', [edited]);
  const damaged = await verify();
  assert.equal(damaged.code, 1);
  assert.deepEqual(
    damaged.report.tree.problems.map((p) => [p.code, p.path, p.problem]),
    [['ERR_LEDGER_TREE_DAMAGED', 'tile/1/000.p/5', 'edited']],
  );
  assert.match(damaged.report.tree.problems[0]?.message ?? '', /hash 2 \(over entries #513…#768\)/);
  // The chain still has the signed root, the tiles do not: the note names the tiles, not a rewrite.
  assert.equal(damaged.report.checkpoints.findings.length, 1);
  assert.match(JSON.stringify(damaged.report.checkpoints.findings), /stored Merkle tiles do not give the root/);

  await pgQuery(url, 'DELETE FROM cplane_merkle_tiles');
  const missing = await verify();
  assert.equal(missing.code, 1);
  assert.deepEqual(
    missing.report.tree.problems.map((p) => [p.path, p.problem]),
    [['tile/1/000.p/5', 'missing']],
  );
});
