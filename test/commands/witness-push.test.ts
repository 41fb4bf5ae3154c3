// Checkpoints pushed to witnesses over C2SP tlog-witness add-checkpoint: two real `cplane witness --listen`
// processes on 127.0.0.1 cosign a log's growing checkpoints (the second and later with a consistency proof from the
// size each holds, learned from its 409), the cosignatures verify with each witness's vkey and are recorded beside
// the checkpoints; a forked checkpoint is refused by the witness that saw the other branch and cosigned by the one
// that did not; a witness that is down is retried, given up on and counted, and a push never waits for it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { REPO } from '../../scripts/lib/repo.js';
import { growLedger as appendTo } from '../../staging/PKG-KERNEL-001/HOT/tests/cli/grow-ledger.js';

type Kernel = typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js');
const { Ledger, ledgerPathForRoot } = await fromDevRoot<Kernel>('HOT/kernel/ledger/index.js');
const { createRoot } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/installer/genesis.js')>(
  'HOT/kernel/installer/genesis.js',
);
const { checkpointNote, ledgerOrigin, withLedgerTree } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/ledger-proofs.js')
>('HOT/kernel/ledger/merkle/ledger-proofs.js');
const { consistencyPath } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/proof.js')
>('HOT/kernel/ledger/merkle/proof.js');
const { rangeHashOf } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/tiles.js')
>('HOT/kernel/ledger/merkle/tiles.js');
const { WitnessPusher, recordCosignatures } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/witness-push.js')
>('HOT/kernel/ledger/merkle/witness-push.js');
const { verifiedCosignatures } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/witness-http.js')
>('HOT/kernel/ledger/merkle/witness-http.js');
const { rootSigner } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/cli/ledger/proof-key.js')>(
    'HOT/cli/ledger/proof-key.js',
  );
const { formatVkey } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/note.js')
>('HOT/kernel/ledger/merkle/note.js');

interface Witness {
  child: ChildProcess;
  url: string;
  vkey: string;
}

const work = mkdtempSync(join(tmpdir(), 'cp-witness-push-'));
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

/** `cplane witness --listen 127.0.0.1:0` for the log of `vkeyFile`, resolved once it prints its URL and vkey. */
async function startWitness(name: string, vkeyFile: string): Promise<Witness> {
  const child = spawn(
    process.execPath,
    [
      join(REPO, 'bin', 'cplane.js'),
      'witness',
      '--key',
      vkeyFile,
      '--state',
      join(work, name),
      '--name',
      `w.example/${name}`,
      '--listen',
      '127.0.0.1:0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  child.stdout?.setEncoding('utf8');
  for await (const chunk of child.stdout as AsyncIterable<string>) {
    out += chunk;
    const url = /listening on (\S+)/.exec(out)?.[1];
    const vkey = /witness vkey: (\S+)/.exec(out)?.[1];
    if (url !== undefined && vkey !== undefined) return { child, url, vkey };
  }
  throw new Error(`witness ${name} exited: ${out}`);
}

let root = '';
let logVkey = '';
before(() => {
  root = join(work, 'root');
  createRoot(root);
  appendTo(ledgerPathForRoot(root), 300, 'first');
  // The log publishes its vkey as export-tiles writes it.
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    logVkey = join(work, 'log.vkey');
    writeFileSync(logVkey, `${formatVkey(rootSigner(root)(ledgerOrigin(ledger.entryHashAt(1) as string)))}\n`);
  } finally {
    ledger.close();
  }
});

/** The checkpoint note of the ledger `file`'s head and a pusher's consistency proofs from it. */
function logOf(file: string) {
  const signer = rootSigner(root);
  return {
    note(): string {
      const ledger = Ledger.open(file);
      try {
        return withLedgerTree(ledger, (tree) => checkpointNote(tree, tree.size, signer(ledgerOrigin(tree.ledgerId))));
      } finally {
        ledger.close();
      }
    },
    async consistency(old: number, size: number): Promise<Buffer[]> {
      const ledger = Ledger.open(file);
      try {
        return withLedgerTree(ledger, (tree) => consistencyPath(old, size, rangeHashOf(tree.source)));
      } finally {
        ledger.close();
      }
    },
  };
}

test('two witnesses cosign a growing log; a fork is refused by the one that saw the other branch', async () => {
  const [a, b] = await Promise.all([startWitness('a', logVkey), startWitness('b', logVkey)]);
  const main = ledgerPathForRoot(root);
  const log = logOf(main);
  const cosigned = join(work, 'cosigned');
  const recorded: string[] = [];
  const pusher = new WitnessPusher({
    witnesses: [
      { url: a.url, vkey: a.vkey },
      { url: b.url, vkey: b.vkey },
    ],
    consistency: log.consistency,
    record: (note, lines) => recorded.push(recordCosignatures(cosigned, note, lines)),
    backoffMs: 1,
  });
  const first = log.note();
  pusher.push(first);
  await pusher.idle();
  const firstFile = readFileSync(recorded[0] as string, 'utf8');
  assert.ok(firstFile.startsWith(first));
  assert.equal(verifiedCosignatures(a.vkey, first, firstFile).length, 1);
  assert.equal(verifiedCosignatures(b.vkey, first, firstFile).length, 1);

  // The log grows; the pushes carry consistency proofs from the size each witness holds.
  const forkBase = join(work, 'fork.sqlite');
  appendTo(main, 40, 'grown');
  copyFileSync(main, forkBase);
  const grown = log.note();
  pusher.push(grown);
  await pusher.idle();
  assert.deepEqual(
    Object.values(pusher.counts()).map((c) => [c.cosigned, c.refused, c.failed]),
    [
      [2, 0, 0],
      [2, 0, 0],
    ],
  );

  // Only witness a sees the next step of the main branch.
  appendTo(main, 10, 'main-branch');
  const onlyA = new WitnessPusher({
    witnesses: [{ url: a.url, vkey: a.vkey }],
    consistency: log.consistency,
    record: () => undefined,
    backoffMs: 1,
  });
  onlyA.push(log.note());
  await onlyA.idle();
  assert.equal(onlyA.counts()[a.url]?.cosigned, 1);

  // A fork: the same history up to `grown`, then other entries, the same size, signed by the same key.
  appendTo(forkBase, 10, 'fork-branch');
  const fork = logOf(forkBase);
  const forkNote = fork.note();
  assert.equal(forkNote.split('\n')[1], log.note().split('\n')[1]);
  assert.notEqual(forkNote.split('\n')[2], log.note().split('\n')[2]);
  const logs: string[] = [];
  const forkPusher = new WitnessPusher({
    witnesses: [
      { url: a.url, vkey: a.vkey },
      { url: b.url, vkey: b.vkey },
    ],
    consistency: fork.consistency,
    record: () => undefined,
    backoffMs: 1,
    log: (line) => logs.push(line),
  });
  forkPusher.push(forkNote);
  await forkPusher.idle();
  assert.deepEqual(forkPusher.counts()[a.url], {
    queued: 1,
    cosigned: 0,
    refused: 1,
    failed: 0,
    retried: 0,
    superseded: 0,
  });
  // b held `grown`, which the fork extends: a witness cannot tell a fork from one view; a quorum can.
  assert.equal(forkPusher.counts()[b.url]?.cosigned, 1);
  assert.match(logs.join('\n'), new RegExp(`witness ${a.url} refused the checkpoint`));
});

test('a witness that is down is retried, given up on and counted; a push never waits for it', async () => {
  const port = await new Promise<number>((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => done(free));
    });
  });
  const down = `http://127.0.0.1:${port}`;
  const slept: number[] = [];
  const pusher = new WitnessPusher({
    witnesses: [{ url: down, vkey: 'w.example/down+00000000+BAAA' }],
    consistency: async () => [],
    record: () => assert.fail('nothing is cosigned'),
    attempts: 3,
    backoffMs: 10,
    sleep: async (ms) => {
      slept.push(ms);
    },
  });
  const log = logOf(ledgerPathForRoot(root));
  pusher.push(log.note());
  // push() returned before any request was answered: nothing is settled yet.
  assert.deepEqual(pusher.counts()[down], { queued: 1, cosigned: 0, refused: 0, failed: 0, retried: 0, superseded: 0 });
  await pusher.idle();
  assert.deepEqual(pusher.counts()[down], { queued: 1, cosigned: 0, refused: 0, failed: 1, retried: 2, superseded: 0 });
  assert.deepEqual(slept, [10, 20]);
});
