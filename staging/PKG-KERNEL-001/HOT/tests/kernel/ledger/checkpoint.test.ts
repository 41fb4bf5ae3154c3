// The root key and its checkpoints in the kernel: created at genesis, usable only for checkpoints (never a package
// signature), written after every commit, and every checkpoint read from disk or a copy is hostile input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { createRoot } from '../../../kernel/installer/genesis.js';
import { installPackages } from '../../../kernel/installer/batch.js';
import { installOne } from '../../../kernel/installer/install.js';
import {
  checkCheckpoints,
  checkLedgerCheckpoints,
  checkpointDir,
  checkpointHead,
  checkpointKeysFromPem,
  Ledger,
  ledgerPathForRoot,
  parseCheckpoint,
  readCheckpointSource,
  readRootCheckpoints,
  signCheckpoint,
  writeRootCheckpoint,
  type Checkpoint,
} from '../../../kernel/ledger/index.js';
import { keyIdOf, readTrustedRootKey, readTrustStore, rootKeyPath, trustKey } from '../../../kernel/signing/index.js';
import { buildArchive, codeOf, keyPair, session, tempDir } from '../installer/helpers.js';

function openLedger(t: { after: (fn: () => void) => void }, root: string): Ledger {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  t.after(() => ledger.close());
  return ledger;
}

test('genesis creates a 0600 root key, trusts its public half for checkpoints only, and checkpoints ROOT_CREATED', (t) => {
  const root = join(tempDir(t), 'root');
  createRoot(root);
  assert.equal(statSync(rootKeyPath(root)).mode & 0o777, 0o600);
  const trusted = readTrustStore(root);
  assert.deepEqual(
    trusted.map((k) => k.role),
    ['checkpoint'],
  );
  const key = readTrustedRootKey(root);
  assert.equal(key?.key_id, trusted[0]?.key_id);
  const found = readRootCheckpoints(root);
  assert.equal(found.length, 1);
  const cp = (found[0] as { checkpoint: Checkpoint }).checkpoint;
  const ledger = openLedger(t, root);
  assert.equal(cp.seq, 1);
  assert.equal(cp.hash, ledger.getBySeq(1)?.entry_hash);
  assert.equal(cp.ledger_id, cp.hash);
  assert.equal(ledger.getBySeq(1)?.metadata.root_key_id, key?.key_id);
  assert.deepEqual(checkLedgerCheckpoints(ledger, { root }).findings, []);
});

test('the root key never verifies a package: a package signed with it is refused as untrusted', async (t) => {
  const dir = tempDir(t);
  const root = join(dir, 'root');
  createRoot(root);
  const archive = await buildArchive(dir, {
    id: 'PKG-ROGUE-001',
    files: { 'HOT/rogue/x.js': 'export {};\n' },
    key: readFileSync(rootKeyPath(root), 'utf8'),
  });
  const s = await session(t, root);
  await assert.rejects(
    installOne(s, { archivePath: archive, mode: 'install' }),
    (e: unknown) => codeOf(e) === 'ERR_SIGNATURE_UNTRUSTED',
  );
  // Trusting the same public key again as a package key does not promote it: the first entry (checkpoint) stays.
  const pub = readTrustStore(root)[0]?.public_key_pem as string;
  assert.equal(trustKey(root, pub).role, 'checkpoint');
  await assert.rejects(
    installOne(s, { archivePath: archive, mode: 'install' }),
    (e: unknown) => codeOf(e) === 'ERR_SIGNATURE_UNTRUSTED',
  );
});

test('a checkpoint signed by a package key is untrusted: only checkpoint-role keys verify checkpoints', (t) => {
  const root = join(tempDir(t), 'root');
  const publisher = keyPair();
  createRoot(root, { trustKeys: [publisher.publicPem] });
  const ledger = openLedger(t, root);
  const head = checkpointHead(ledger);
  assert.ok(head);
  const privateKey = createPrivateKey({ key: publisher.privatePem, format: 'pem' });
  const byPublisher = signCheckpoint(
    head,
    { key_id: keyIdOf(createPublicKey(privateKey)), private_key: privateKey },
    new Date(),
  );
  assert.ok(
    readTrustStore(root).some((k) => k.key_id === byPublisher.key_id && k.role === undefined),
    'the publisher key is trusted, for packages',
  );
  const report = checkLedgerCheckpoints(ledger, { root, files: [] });
  assert.equal(report.ok, true);
  const keys = checkpointKeysFromPem(readTrustStore(root).filter((k) => k.role === 'checkpoint'));
  const bad = checkCheckpoints(ledger, [{ source: 'x', checkpoint: byPublisher }], keys);
  assert.deepEqual(
    bad.findings.map((f) => f.problem),
    ['untrusted_key'],
  );
});

test('every install commit leaves a checkpoint of the head that anchors its receipt', async (t) => {
  const dir = tempDir(t);
  const root = join(dir, 'root');
  const publisher = keyPair();
  createRoot(root, { trustKeys: [publisher.publicPem] });
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/alpha/a.js': 'export const a = 1;\n' },
    key: publisher.privatePem,
  });
  const s = await session(t, root);
  const outcome = await installOne(s, { archivePath: archive, mode: 'install' });
  const newest = readRootCheckpoints(root).at(-1) as { checkpoint: Checkpoint };
  assert.equal(newest.checkpoint.seq, outcome.receipt?.ledger_anchor.seq);
  assert.equal(newest.checkpoint.hash, outcome.receipt?.ledger_anchor.hash);
  // A head already checkpointed is not signed again.
  const again = writeRootCheckpoint(root, s.ledger);
  assert.equal(again?.written, false);
  assert.equal(readdirSync(checkpointDir(root)).length, 2);
});

test('a batch signs one checkpoint after its last commit, also when a later package is refused', async (t) => {
  const dir = tempDir(t);
  const root = join(dir, 'root');
  const publisher = keyPair();
  createRoot(root, { trustKeys: [publisher.publicPem] });
  const a = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/alpha/a.js': 'a' },
    key: publisher.privatePem,
  });
  const b = await buildArchive(dir, { id: 'PKG-BETA-001', files: { 'HOT/beta/b.js': 'b' }, key: publisher.privatePem });
  const unsigned = await buildArchive(dir, { id: 'PKG-GAMMA-001', files: { 'HOT/gamma/c.js': 'c' } });
  await installPackages(
    root,
    [a, b].map((archivePath) => ({ archivePath, mode: 'install' as const })),
  );
  assert.equal(readdirSync(checkpointDir(root)).length, 2, 'genesis and the end of the batch');
  const delta = await buildArchive(dir, {
    id: 'PKG-DELTA-001',
    files: { 'HOT/delta/d.js': 'd' },
    key: publisher.privatePem,
  });
  await assert.rejects(
    installPackages(
      root,
      [delta, unsigned].map((archivePath) => ({ archivePath, mode: 'install' as const })),
    ),
    (e: unknown) => codeOf(e) === 'ERR_SIGNATURE_MISSING',
  );
  const ledger = openLedger(t, root);
  const newest = readRootCheckpoints(root).at(-1) as { checkpoint: Checkpoint };
  assert.equal(newest.checkpoint.seq, ledger.head().seq, "DELTA's commit (and the refusal after it) is anchored");
  assert.equal(readdirSync(checkpointDir(root)).length, 3);
});

test('a root without a root key (made before checkpoints) writes none and reports them absent', (t) => {
  const root = join(tempDir(t), 'root');
  createRoot(root, { rootKey: false });
  const ledger = openLedger(t, root);
  assert.equal(writeRootCheckpoint(root, ledger), null);
  const report = checkLedgerCheckpoints(ledger, { root });
  assert.equal(report.absent, true);
  assert.equal(report.ok, true);
});

test('a damaged root key is a coded error, never a crash or a silent skip', (t) => {
  const dir = tempDir(t);
  const garbage = join(dir, 'garbage');
  createRoot(garbage);
  writeFileSync(rootKeyPath(garbage), 'not a key');
  assert.throws(() => readTrustedRootKey(garbage), { code: 'ERR_ROOT_KEY_INVALID' });
  const fifo = join(dir, 'fifo');
  createRoot(fifo);
  rmSync(rootKeyPath(fifo));
  execFileSync('mkfifo', [rootKeyPath(fifo)]);
  assert.throws(() => readTrustedRootKey(fifo), { code: 'ERR_ROOT_KEY_INVALID' });
  const stranger = join(dir, 'stranger');
  createRoot(stranger);
  writeFileSync(rootKeyPath(stranger), keyPair().privatePem);
  assert.throws(
    () => readTrustedRootKey(stranger),
    (e: unknown) => codeOf(e) === 'ERR_ROOT_KEY_INVALID' && /not a checkpoint key/.test((e as Error).message),
  );
});

test('hostile checkpoints are refused by schema: extra fields, another kind, a malformed signature, a huge seq', (t) => {
  const root = join(tempDir(t), 'root');
  createRoot(root);
  const cp = (readRootCheckpoints(root)[0] as { checkpoint: Checkpoint }).checkpoint;
  parseCheckpoint(cp, 'ok');
  for (const bad of [
    { ...cp, extra: 1 },
    { ...cp, kind: 'manifest' },
    { ...cp, signature: 'AAAA' },
    { ...cp, seq: 2 ** 60 },
    { ...cp, seq: 0 },
    { ...cp, hash: cp.hash.toUpperCase() },
    { ...cp, time: 'yesterday' },
    [cp],
    null,
  ]) {
    assert.throws(() => parseCheckpoint(bad, 'bad'), { code: 'ERR_CHECKPOINT_INVALID' }, JSON.stringify(bad));
  }
});

test('a checkpoint file kept elsewhere may be one pretty-printed object or JSON Lines; an empty one is refused', (t) => {
  const dir = tempDir(t);
  const root = join(dir, 'root');
  createRoot(root);
  const cp = (readRootCheckpoints(root)[0] as { checkpoint: Checkpoint }).checkpoint;
  writeFileSync(join(dir, 'one.json'), JSON.stringify(cp, null, 2));
  writeFileSync(join(dir, 'many.jsonl'), `${JSON.stringify(cp)}\n${JSON.stringify({ ...cp, seq: 'x' })}\n`);
  writeFileSync(join(dir, 'empty.json'), '\n');
  assert.equal(readCheckpointSource(join(dir, 'one.json')).length, 1);
  const many = readCheckpointSource(join(dir, 'many.jsonl'));
  assert.deepEqual(
    many.map((m) => 'checkpoint' in m),
    [true, false],
  );
  assert.throws(() => readCheckpointSource(join(dir, 'empty.json')), { code: 'ERR_CHECKPOINT_INVALID' });
  mkdirSync(join(dir, 'a-dir'));
  assert.throws(() => readCheckpointSource(join(dir, 'a-dir')), { code: 'ERR_CHECKPOINT_INVALID' });
  execFileSync('mkfifo', [join(dir, 'a-fifo')]);
  assert.throws(
    () => readCheckpointSource(join(dir, 'a-fifo')),
    { code: 'ERR_CHECKPOINT_INVALID' },
    'a FIFO is refused, never waited on',
  );
});

test('in the root, a FIFO, a symlink or a renamed file among the checkpoints is reported, never opened or trusted', (t) => {
  const dir = tempDir(t);
  const root = join(dir, 'root');
  createRoot(root);
  const [first] = readdirSync(checkpointDir(root));
  execFileSync('mkfifo', [join(checkpointDir(root), '0000000000000002-0000000000000000.json')]);
  symlinkSync(
    join(checkpointDir(root), first as string),
    join(checkpointDir(root), '0000000000000003-0000000000000000.json'),
  );
  writeFileSync(
    join(checkpointDir(root), '0000000000000004-0000000000000000.json'),
    readFileSync(join(checkpointDir(root), first as string)),
  );
  const found = readRootCheckpoints(root);
  assert.deepEqual(
    found.map((f) => 'checkpoint' in f),
    [true, false, false, false],
  );
  const ledger = openLedger(t, root);
  assert.deepEqual(
    checkLedgerCheckpoints(ledger, { root }).findings.map((f) => f.problem),
    ['invalid', 'invalid', 'invalid'],
  );
});
