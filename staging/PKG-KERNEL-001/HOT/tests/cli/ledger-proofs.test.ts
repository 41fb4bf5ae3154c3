// `ledger prove`, `ledger verify-proof` and `ledger export-tiles` end to end on a real root: proofs verify offline
// with the vkey or the PEM public key alone, and every tampering the issue names is refused with its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { cli, type Run } from './run-cli.js';
import { createRoot } from '../../kernel/installer/genesis.js';
import { Ledger, ledgerPathForRoot, type LedgerEntry } from '../../kernel/ledger/index.js';
import { readRootKey } from '../../kernel/signing/index.js';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-proofs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function rootWith(dir: string, name: string, entries: number): { root: string; ids: string[] } {
  const root = join(dir, name);
  createRoot(root);
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    const appended = ledger.appendBatch(
      Array.from({ length: entries }, (_, i) => ({
        event_type: 'EXCHANGE',
        submission_id: `SUB-${i}`,
        decision: 'OK',
        reason: `exchange ${i}`,
        metadata: { session_id: `S${i % 7}`, n: i },
      })),
    );
    return { root, ids: appended.map((e: LedgerEntry) => e.id) };
  } finally {
    ledger.close();
  }
}

async function ok(...argv: string[]): Promise<Run> {
  const run = await cli(...argv);
  assert.equal(run.code, 0, `${argv.join(' ')}: ${run.err}`);
  return run;
}

async function refused(file: string, key: string, reason: RegExp): Promise<void> {
  const run = await cli('ledger', 'verify-proof', file, '--key', key, '--json');
  assert.notEqual(run.code, 0, `${file} verified`);
  assert.match(run.out + run.err, /ERR_PROOF_INVALID/);
  assert.match(run.out + run.err, reason);
}

test('an inclusion proof verifies offline with the vkey and with the PEM key; tampered ones are refused with the reason', async (t) => {
  const dir = tempDir(t);
  const { root, ids } = rootWith(dir, 'root', 700);
  await ok('ledger', 'export-tiles', '--root', root, join(dir, 'tiles'));
  const vkey = join(dir, 'tiles', 'vkey');
  const pem = join(dir, 'root.pub.pem');
  const key = readRootKey(root);
  writeFileSync(
    pem,
    createPublicKey(key?.private_key as never)
      .export({ type: 'spki', format: 'pem' })
      .toString(),
  );
  const proofFile = join(dir, 'proof.json');
  await ok('ledger', 'prove', '--root', root, '--entry', ids[300] as string, '--out', proofFile);
  const proof = JSON.parse(readFileSync(proofFile, 'utf8'));
  assert.equal(proof.leaf_index, 301);
  assert.equal(proof.tree_size, 701);
  // 32 × ⌈log2 n⌉ bytes at most: 10 hashes for 701 leaves.
  assert.equal(proof.audit_path.length, 10);
  const checked = JSON.parse((await ok('ledger', 'verify-proof', proofFile, '--key', vkey, '--json')).out);
  assert.equal(checked.ok, true);
  assert.equal(checked.entry_id, ids[300]);
  await ok('ledger', 'verify-proof', proofFile, '--key', pem);

  const variant = (name: string, edit: (p: typeof proof) => void): string => {
    const copy = JSON.parse(JSON.stringify(proof));
    edit(copy);
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(copy));
    return file;
  };
  await refused(
    variant('edited-entry', (p) => void (p.entry.reason = 'exchange 999')),
    vkey,
    /entry was edited/,
  );
  await refused(
    variant('rehashed-entry', (p) => {
      // An edit that also recomputes the entry's hash: the leaf changes, the path no longer reaches the root.
      p.entry.entry_hash = 'f'.repeat(64);
    }),
    vkey,
    /edited|not proven/,
  );
  await refused(
    variant('short-path', (p) => p.audit_path.pop()),
    vkey,
    /path_length|has 10 hashes, this one 9/,
  );
  await refused(
    variant('tampered-hash', (p) => {
      const h = Buffer.from(p.audit_path[3], 'base64');
      h.writeUInt8(h.readUInt8(0) ^ 1, 0);
      p.audit_path[3] = h.toString('base64');
    }),
    vkey,
    /does not lead from the leaf to the root/,
  );
  await refused(
    variant('wrong-size', (p) => void (p.tree_size = 700)),
    vkey,
    /checkpoint signs 701/,
  );
  await refused(
    variant('wrong-index', (p) => void (p.leaf_index = 302)),
    vkey,
    /not proven/,
  );
  await refused(
    variant('altered-checkpoint', (p) => void (p.checkpoint = p.checkpoint.replace('\n701\n', '\n702\n'))),
    vkey,
    /does not verify/,
  );
  // Re-signed with another root's key: the verifier's key does not know it.
  const other = rootWith(dir, 'other', 3);
  const otherProof = join(dir, 'other-proof.json');
  await ok('ledger', 'prove', '--root', other.root, '--entry', other.ids[1] as string, '--out', otherProof);
  const resigned = variant(
    'resigned',
    (p) => void (p.checkpoint = JSON.parse(readFileSync(otherProof, 'utf8')).checkpoint),
  );
  await refused(resigned, vkey, /not signed by/);
});

test('consistency proofs: a grown tree verifies; a rollback, a fork and a tile edited are refused', async (t) => {
  const dir = tempDir(t);
  const { root } = rootWith(dir, 'root', 600);
  await ok('ledger', 'export-tiles', '--root', root, join(dir, 'tiles'));
  const vkey = join(dir, 'tiles', 'vkey');
  const oldNote = join(dir, 'old.checkpoint');
  writeFileSync(oldNote, readFileSync(join(dir, 'tiles', 'checkpoint')));
  const grown = Ledger.open(ledgerPathForRoot(root));
  grown.appendBatch(
    Array.from({ length: 300 }, (_, i) => ({
      event_type: 'TEST',
      submission_id: `G${i}`,
      decision: 'OK',
      reason: 'grown',
      metadata: {},
    })),
  );
  grown.close();
  const file = join(dir, 'consistency.json');
  await ok('ledger', 'prove', '--root', root, '--from', oldNote, '--out', file);
  const proof = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(proof.old_size, 601);
  assert.equal(proof.new_size, 901);
  // Ed25519 is deterministic: the old tree head signed again is the very note exported before.
  assert.equal(proof.old_checkpoint, readFileSync(oldNote, 'utf8'));
  const checked = JSON.parse((await ok('ledger', 'verify-proof', file, '--key', vkey, '--json')).out);
  assert.equal(checked.new_size, 901);

  // Rollback: asking for a smaller "new" tree is refused by prove; a proof claiming it is refused by verify.
  const rollback = await cli('ledger', 'prove', '--root', root, '--from', '901', '--to', '600');
  assert.equal(rollback.code === 0, false);
  assert.match(rollback.err, /ERR_PROOF_ENTRY_UNKNOWN/);
  const swapped = {
    ...proof,
    old_size: proof.new_size,
    new_size: proof.old_size,
    old_checkpoint: proof.new_checkpoint,
    new_checkpoint: proof.old_checkpoint,
  };
  writeFileSync(join(dir, 'rollback.json'), JSON.stringify(swapped));
  await refused(join(dir, 'rollback.json'), vkey, /cannot be a prefix/);

  // A fork: the same root key signing another history of 901 entries. Its checkpoint is well signed, but no
  // consistency proof joins it to the old one.
  const forked = {
    ...proof,
    new_checkpoint: proof.new_checkpoint.replace(
      /\n[A-Za-z0-9+/]{43}=\n/,
      `\n${Buffer.alloc(32, 7).toString('base64')}\n`,
    ),
  };
  writeFileSync(join(dir, 'fork.json'), JSON.stringify(forked));
  await refused(join(dir, 'fork.json'), vkey, /does not verify/);

  // A tile edited in the database: the tree no longer has the root the old checkpoint signed.
  const db = new Database(ledgerPathForRoot(root));
  const bytes = db.prepare('SELECT hashes FROM merkle_tiles WHERE level = 1 AND idx = 0').pluck().get() as Buffer;
  bytes.writeUInt8(bytes.readUInt8(0) ^ 1, 0);
  db.prepare('UPDATE merkle_tiles SET hashes = ? WHERE level = 1 AND idx = 0').run(bytes);
  db.close();
  const afterEdit = await cli('ledger', 'prove', '--root', root, '--from', oldNote);
  assert.notEqual(afterEdit.code, 0);
  assert.match(afterEdit.err, /ERR_LEDGER_TREE_DAMAGED/);
});

test('export-tiles writes tlog-tiles paths, partial tiles as .p/W, entry bundles, and a checkpoint that matches them', async (t) => {
  const dir = tempDir(t);
  const { root } = rootWith(dir, 'root', 599);
  const out = join(dir, 'tiles');
  const first = JSON.parse((await ok('ledger', 'export-tiles', '--root', root, out, '--json')).out);
  assert.equal(first.size, 600);
  for (const path of [
    'tile/0/000',
    'tile/0/001',
    'tile/0/002.p/88',
    'tile/1/000.p/2',
    'tile/entries/000',
    'tile/entries/002.p/88',
  ])
    assert.equal(existsSync(join(out, path)), true, path);
  assert.equal(readFileSync(join(out, 'tile/0/000')).length, 8192);
  assert.equal(readFileSync(join(out, 'tile/entries/002.p/88')).length, 88 * 34);
  const again = JSON.parse((await ok('ledger', 'export-tiles', '--root', root, out, '--json')).out);
  assert.equal(again.unchanged, 4, 'full tiles and bundles are immutable: a re-export leaves them');
  assert.match(
    readFileSync(join(out, 'checkpoint'), 'utf8'),
    /^cplane\.ledger\/[0-9a-f]{32}\n600\n[A-Za-z0-9+/]{43}=\n\n\u2014 /,
  );
});

// Beside this test in the sources; tsc copies only the TypeScript to build/tsc.
const PYTHON_VERIFIER = [dirname(fileURLToPath(import.meta.url))]
  .flatMap((dir) => [
    join(dir, 'proof_verifier.py'),
    join(dir.replace(/[/\\]build[/\\]tsc[/\\]/, '/'), 'proof_verifier.py'),
  ])
  .find((path) => existsSync(path)) as string;

test('an independent Python verifier written from docs/proofs.md accepts our proofs and refuses tampered ones', async (t) => {
  const probe = spawnSync('python3', ['-c', 'import cryptography.hazmat.primitives.asymmetric.ed25519'], {
    encoding: 'utf8',
  });
  if (probe.status !== 0) {
    t.skip('python3 with the cryptography package is not installed');
    return;
  }
  const dir = tempDir(t);
  const { root, ids } = rootWith(dir, 'root', 1000);
  await ok('ledger', 'export-tiles', '--root', root, join(dir, 'tiles'));
  const vkey = join(dir, 'tiles', 'vkey');
  const py = (file: string) => spawnSync('python3', [PYTHON_VERIFIER, file, vkey], { encoding: 'utf8' });
  for (const id of [ids[0], ids[511], ids[999]] as string[]) {
    const file = join(dir, `${id}.json`);
    await ok('ledger', 'prove', '--root', root, '--entry', id, '--out', file);
    assert.equal(py(file).stdout.trim(), 'ok', id);
    const proof = JSON.parse(readFileSync(file, 'utf8'));
    proof.entry.reason = 'rewritten';
    writeFileSync(file, JSON.stringify(proof));
    assert.equal(py(file).status, 1);
  }
  for (const [from, to] of [
    ['1', '1001'],
    ['256', '700'],
    ['513', '1001'],
  ] as const) {
    const file = join(dir, `c-${from}-${to}.json`);
    await ok('ledger', 'prove', '--root', root, '--from', from, '--to', to, '--out', file);
    assert.equal(py(file).stdout.trim(), 'ok', `${from} → ${to}`);
    const proof = JSON.parse(readFileSync(file, 'utf8'));
    proof.consistency_path[0] = Buffer.alloc(32).toString('base64');
    writeFileSync(file, JSON.stringify(proof));
    assert.equal(py(file).status, 1);
  }
});

test('ledger verify accepts checkpoint notes beside JSON checkpoints, and names a bad one', async (t) => {
  const dir = tempDir(t);
  const { root } = rootWith(dir, 'root', 520);
  await ok('ledger', 'export-tiles', '--root', root, join(dir, 'tiles'));
  const note = join(dir, 'tiles', 'checkpoint');
  const passed = JSON.parse((await ok('ledger', 'verify', '--root', root, '--checkpoint', note, '--json')).out);
  assert.equal(passed.checkpoints.checked, 2, 'the root JSON checkpoint and the note');
  assert.equal(passed.checkpoints.verified, 2);

  const other = rootWith(dir, 'other', 2);
  await ok('ledger', 'export-tiles', '--root', other.root, join(dir, 'other-tiles'));
  const altered = join(dir, 'altered.checkpoint');
  writeFileSync(altered, readFileSync(note, 'utf8').replace('\n521\n', '\n520\n'));
  const problems = new Map<string, RegExp>([
    [join(dir, 'other-tiles', 'checkpoint'), /UNTRUSTED_KEY|untrusted_key/],
    [altered, /BAD_SIGNATURE|bad_signature/],
  ]);
  for (const [file, problem] of problems) {
    const run = await cli('ledger', 'verify', '--root', root, '--checkpoint', file, '--json');
    assert.notEqual(run.code, 0, file);
    assert.match(run.out, problem);
  }
  // The tree rewritten under the note: its root at 521 is no longer the one signed.
  const db = new Database(ledgerPathForRoot(root));
  const bytes = db.prepare('SELECT hashes FROM merkle_tiles WHERE level = 1 AND idx = 0').pluck().get() as Buffer;
  bytes.writeUInt8(bytes.readUInt8(5) ^ 1, 5);
  db.prepare('UPDATE merkle_tiles SET hashes = ? WHERE level = 1 AND idx = 0').run(bytes);
  db.close();
  const rewritten = await cli('ledger', 'verify', '--root', root, '--checkpoint', note, '--json');
  assert.notEqual(rewritten.code, 0);
  assert.match(rewritten.out, /mismatch/);
});
