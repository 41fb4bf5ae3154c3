// `ledger verify` re-checks the Merkle tiles against the tree recomputed from the chain: an intact tree is
// reported with its root (the one the exported checkpoint signs), a tile edited, cut, removed or added is named by
// its tlog-tiles path with ERR_LEDGER_TREE_DAMAGED and a hint, a checkpoint note is judged against the chain's own
// root (a damaged tile neither hides nor fakes a rewrite), and a tree too damaged to read is diagnosed, not a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cli, type Run } from './run-cli.js';
import { createRoot } from '../../kernel/installer/genesis.js';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';

interface TreeReport {
  present: boolean;
  ok: boolean;
  size: number;
  root: string;
  tiles: number;
  problems: {
    code: string;
    level: number;
    index: number;
    path: string;
    problem: string;
    message: string;
    hint: string;
  }[];
}

async function verify(
  root: string,
  ...extra: string[]
): Promise<{
  run: Run;
  tree: TreeReport;
  checkpoints: { ok: boolean; findings: { problem: string; message: string }[] };
}> {
  const run = await cli('ledger', 'verify', '--root', root, '--json', ...extra);
  const report = JSON.parse(run.out);
  return { run, tree: report.tree, checkpoints: report.checkpoints };
}

/** A root whose ledger holds its genesis entries and `entries` more: 66,000 reach a level-2 tile (65,536 entries). */
function rootWith(t: { after: (fn: () => void) => void }, entries: number): { dir: string; root: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cp-verify-tree-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'root');
  createRoot(root);
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    for (let done = 0; done < entries; done += 5000)
      ledger.appendBatch(
        Array.from({ length: Math.min(5000, entries - done) }, (_, i) => ({
          event_type: 'EXCHANGE',
          submission_id: `SUB-${done + i}`,
          decision: 'OK',
          reason: 'r',
          metadata: { n: done + i },
        })),
      );
  } finally {
    ledger.close();
  }
  return { dir, root };
}

function edit(root: string, sql: string, ...params: unknown[]): void {
  const db = new Database(ledgerPathForRoot(root));
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

function tile(root: string, level: number, idx: number): Buffer {
  const db = new Database(ledgerPathForRoot(root), { readonly: true });
  try {
    return db.prepare('SELECT hashes FROM merkle_tiles WHERE level = ? AND idx = ?').pluck().get(level, idx) as Buffer;
  } finally {
    db.close();
  }
}

test('an intact tree verifies with the root its exported checkpoint signs; each damaged tile is named', async (t) => {
  const { dir, root } = rootWith(t, 66_000);
  const tiles = join(dir, 'tiles');
  assert.equal((await cli('ledger', 'export-tiles', '--root', root, tiles)).code, 0);
  const note = join(tiles, 'checkpoint');
  const [, size, signedRoot] = readFileSync(note, 'utf8').split('\n');

  const intact = await verify(root, '--checkpoint', note);
  assert.equal(intact.run.code, 0, intact.run.err);
  assert.equal(intact.tree.ok, true);
  assert.equal(intact.tree.size, Number(size));
  assert.equal(intact.tree.root, signedRoot);
  // Level 1: 257 hashes (tile 000 full, 001 partial), level 2: one partial tile of 1 hash.
  assert.equal(intact.tree.tiles, 3);
  assert.equal(intact.checkpoints.ok, true);

  // One hash of a full level-1 tile changed: the tile, the hash and the entries it covers are named.
  const original = tile(root, 1, 0);
  const edited = Buffer.from(original);
  edited[5 * 32] = (edited[5 * 32] as number) ^ 1;
  edit(root, 'UPDATE merkle_tiles SET hashes = ? WHERE level = 1 AND idx = 0', edited);
  const damaged = await verify(root, '--checkpoint', note);
  assert.equal(damaged.run.code, 1);
  assert.equal(damaged.tree.ok, false);
  assert.deepEqual(
    damaged.tree.problems.map((p) => [p.code, p.path, p.problem, p.level, p.index]),
    [['ERR_LEDGER_TREE_DAMAGED', 'tile/1/000', 'edited', 1, 0]],
  );
  const first = 5 * 256 + 1;
  assert.match(
    damaged.tree.problems[0]?.message ?? '',
    new RegExp(`hash 5 \\(over entries #${first}…#${first + 255}\\)`),
  );
  assert.match(damaged.tree.problems[0]?.hint ?? '', /restore the ledger/);
  // The chain still has the signed root; the tiles proofs are read from do not: the note names them.
  assert.deepEqual(
    damaged.checkpoints.findings.map((f) => f.problem),
    ['mismatch'],
  );
  assert.match(
    damaged.checkpoints.findings[0]?.message ?? '',
    /stored Merkle tiles do not give the root .*\(the chain's own tree does\)/,
  );
  const human = await cli('ledger', 'verify', '--root', root, '--checkpoint', note);
  assert.equal(human.code, 1);
  assert.match(human.out, /ERR_LEDGER_TREE_DAMAGED tile\/1\/000: Merkle tile tile\/1\/000 was edited/);
  assert.match(human.out, /merkle tree DAMAGED: 1 of 3 tiles/);

  // The partial edge cut short, a full tile removed, a tile added past the tree: each named.
  edit(root, 'UPDATE merkle_tiles SET hashes = ? WHERE level = 1 AND idx = 0', original);
  const edge = tile(root, 2, 0);
  edit(root, 'UPDATE merkle_tiles SET hashes = ? WHERE level = 2 AND idx = 0', edge.subarray(0, 31));
  edit(root, 'DELETE FROM merkle_tiles WHERE level = 1 AND idx = 1');
  edit(root, 'INSERT INTO merkle_tiles (level, idx, hashes) VALUES (3, 0, ?)', Buffer.alloc(32));
  const three = await verify(root);
  assert.equal(three.run.code, 1);
  assert.deepEqual(
    three.tree.problems.map((p) => [p.path, p.problem]).sort(),
    [
      ['tile/1/001.p/1', 'missing'],
      ['tile/2/000.p/1', 'width'],
      ['tile/3/000', 'extra'],
    ].sort(),
  );
});

test('a tree that cannot be read is diagnosed; a ledger from before trees verifies without one', async (t) => {
  const { root } = rootWith(t, 600);
  edit(root, 'DROP TABLE merkle_tiles');
  const dropped = await verify(root);
  assert.equal(dropped.run.code, 1, dropped.run.err);
  assert.deepEqual(
    dropped.tree.problems.map((p) => [p.path, p.problem]),
    [['tile/1/000.p/2', 'missing']],
  );

  edit(root, "DELETE FROM ledger_meta WHERE key = 'merkle_tiles'");
  const legacy = await verify(root);
  assert.equal(legacy.run.code, 0, legacy.run.out);
  assert.equal(legacy.tree.present, false);
  assert.match((await cli('ledger', 'verify', '--root', root)).out, /merkle tree: none yet/);
});
