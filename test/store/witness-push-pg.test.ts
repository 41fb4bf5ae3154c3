// End to end on a PostgreSQL store: a root migrated to a throwaway PostgreSQL server and served by `cplane serve`,
// two real `cplane witness --listen` processes named in gateway.checkpoint.witnesses (the store given to the gateway
// as `serve --store`). Calls through the gateway
// append to the PostgreSQL chain; each checkpoint is signed as a note, pushed to both witnesses (the later ones with
// a consistency proof read from cplane_merkle_tiles), and their cosignatures recorded in HOT/ledger/cosigned; then
// `ledger verify --store` reads those files back: each checkpoint is the PostgreSQL chain's tree at its size and each
// cosignature verifies with its witness's configured vkey.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { REPO } from '../../scripts/lib/repo.js';
import { cli, configSet, issueKey, startServed, type Served } from '../gateway/harness.js';

const { openWitness, witnessVkey } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/witness.js')
>('HOT/kernel/ledger/merkle/witness.js');

const { Ledger, ledgerPathForRoot } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { ledgerOrigin } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/ledger-proofs.js')
>('HOT/kernel/ledger/merkle/ledger-proofs.js');
const { formatVkey } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/note.js')
>('HOT/kernel/ledger/merkle/note.js');
const { rootSigner } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/cli/ledger/proof-key.js')>(
    'HOT/cli/ledger/proof-key.js',
  );

const skip = pgSkip();
const run = (args: string[]) => cli(args, { CPLANE_DATABASE_URL: '' });

let server: PgServer | undefined;
let served: Served | undefined;
let url = '';
const children: ChildProcess[] = [];
const witnesses: { name: string; port: number; vkey: string; state: string }[] = [];

/** A port free now, for a witness whose URL the gateway config names before the witness starts. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((done) => probe.close(() => done()));
  return port;
}

/** `cplane witness --listen` for the log of `vkeyFile`, resolved once it listens. */
async function startWitness(w: (typeof witnesses)[number], vkeyFile: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      join(REPO, 'bin', 'cplane.js'),
      'witness',
      '--key',
      vkeyFile,
      '--state',
      w.state,
      '--name',
      w.name,
      '--listen',
      `127.0.0.1:${w.port}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  let out = '';
  child.stdout?.setEncoding('utf8');
  for await (const chunk of child.stdout as AsyncIterable<string>) {
    out += chunk;
    if (/listening on /.test(out)) return;
  }
  throw new Error(`witness ${w.name} exited: ${out}`);
}

before(async () => {
  if (skip !== false) return;
  server = await startPgServer();
  url = await createDatabase(server, 'witnessed');
  for (const name of ['a', 'b'])
    witnesses.push({ name: `w.example/${name}`, port: await freePort(), vkey: '', state: '' });
  let vkeyFile = '';
  served = await startServed(['--store', url], (root) => {
    const migrated = run(['ledger', 'migrate', '--root', root, '--to', url]);
    assert.equal(migrated.status, 0, migrated.stderr);
    // The log's vkey: the root key under the chain's origin (entry #1, the same in the store after the migration).
    const ledger = Ledger.open(ledgerPathForRoot(root));
    const origin = ledgerOrigin(ledger.entryHashAt(1) as string);
    ledger.close();
    vkeyFile = join(root, '..', 'log.vkey');
    writeFileSync(vkeyFile, `${formatVkey(rootSigner(root)(origin))}\n`);
    for (const w of witnesses) {
      w.state = join(root, '..', `witness-${w.name.slice(-1)}`);
      w.vkey = witnessVkey(openWitness(w.state, w.name));
    }
    const targets = witnesses.map((w) => ({ url: `http://127.0.0.1:${w.port}`, vkey: w.vkey }));
    configSet(
      root,
      'gateway.checkpoint',
      JSON.stringify({ every_entries: 1, every_seconds: 3600, witnesses: targets }),
    );
  });
  await Promise.all(witnesses.map((w) => startWitness(w, vkeyFile)));
});

after(async () => {
  for (const child of children) child.kill('SIGTERM');
  await served?.cleanup();
  server?.stop();
});

test('checkpoints of a PostgreSQL chain are cosigned by real witnesses and verified from the store', {
  skip,
}, async () => {
  const s = served as Served;
  const key = issueKey('witnessed-pg');
  const cosignedDir = join(s.root, 'HOT', 'ledger', 'cosigned');
  const bothCosigned = (): string[] => {
    try {
      return readdirSync(cosignedDir).filter(
        (f) => readFileSync(join(cosignedDir, f), 'utf8').split('\n\u2014 ').length === 4,
      );
    } catch {
      return [];
    }
  };
  for (const content of ['one', 'two']) {
    const res = await fetch(`${s.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': key },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content }] }),
    });
    assert.equal(res.status, 200, await res.text());
  }
  // The pushes run in the background: wait (bounded) for two checkpoints cosigned by both witnesses.
  for (let i = 0; i < 200 && bothCosigned().length < 2; i += 1) await new Promise((done) => setTimeout(done, 50));
  assert.ok(bothCosigned().length >= 2, `${readdirSync(cosignedDir).join(' ')}\n${s.stderr()}`);
  assert.doesNotMatch(s.stderr(), /WITNESS_PUSH_FAILED/);

  const verified = run(['ledger', 'verify', '--root', s.root, '--store', url, '--json']);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  const report = JSON.parse(verified.stdout) as {
    entries: number;
    cosigned: { ok: boolean; files: number; verified: number; cosignatures: Record<string, number>; newest: number };
  };
  const files = readdirSync(cosignedDir).length;
  assert.equal(report.cosigned.ok, true);
  assert.equal(report.cosigned.files, files);
  assert.equal(report.cosigned.verified, files);
  assert.ok((report.cosigned.cosignatures['w.example/a'] ?? 0) >= 2, verified.stdout);
  assert.ok((report.cosigned.cosignatures['w.example/b'] ?? 0) >= 2, verified.stdout);
  // The witnesses followed the PostgreSQL chain with proofs: the newest cosigned size is within it.
  assert.ok(report.cosigned.newest <= report.entries && report.cosigned.newest > 0, verified.stdout);
});
