// `cplane serve` with `gateway.checkpoint.witnesses`: each checkpoint the gateway writes is pushed, in the
// background, to two real C2SP tlog-witness servers on 127.0.0.1 (the second and later with a consistency proof),
// and their verified cosignatures are recorded beside the checkpoints in HOT/ledger/cosigned/. A witness holding a
// forked tree of the log refuses every checkpoint and a witness that is down never answers: the calls succeed all
// the same, and the gateway warns WITNESS_PUSH_FAILED.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { configSet, issueKey, startServed, type Served } from './harness.js';

const { openWitness, witnessVkey } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/witness.js')
>('HOT/kernel/ledger/merkle/witness.js');
const { witnessHandler, verifiedCosignatures } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/witness-http.js')
>('HOT/kernel/ledger/merkle/witness-http.js');
const { ledgerOrigin, rootNoteSigner } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/ledger-proofs.js')
>('HOT/kernel/ledger/merkle/ledger-proofs.js');
const { formatCheckpointBody, formatVkey, signNote } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/note.js')
>('HOT/kernel/ledger/merkle/note.js');
const { readTrustedRootKey } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/signing/root-key.js')
>('HOT/kernel/signing/root-key.js');
const { Ledger, ledgerPathForRoot } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );

type State = ReturnType<typeof openWitness>;
interface Witness {
  name: string;
  server: Server;
  url: string;
  state?: State;
}

/** A witness on 127.0.0.1 listening before its log is known (the gateway's config names its URL and vkey). */
async function listening(name: string, log: { key?: string }): Promise<Witness> {
  const witness: Witness = { name, server: createServer(), url: '' };
  witness.server.on('request', (req, res) => witnessHandler(witness.state as State, log.key as string)(req, res));
  await new Promise<void>((done) => witness.server.listen(0, '127.0.0.1', done));
  witness.url = `http://127.0.0.1:${(witness.server.address() as { port: number }).port}`;
  return witness;
}

let served: Served;
let key = '';
const log: { key?: string } = {};
const witnesses: Witness[] = [];
let down = '';
before(async () => {
  witnesses.push(await listening('a', log), await listening('b', log), await listening('forked', log));
  const gone = await listening('down', log);
  down = gone.url;
  await new Promise<void>((done) => gone.server.close(() => done()));
  served = await startServed([], (root) => {
    const rootKey = readTrustedRootKey(root);
    assert.ok(rootKey);
    const ledger = Ledger.open(ledgerPathForRoot(root));
    const origin = ledgerOrigin(ledger.entryHashAt(1) as string);
    ledger.close();
    const signer = rootNoteSigner(rootKey, origin);
    log.key = formatVkey(signer);
    const targets = [];
    for (const w of witnesses) {
      w.state = openWitness(join(root, '..', `witness-${w.name}`), `w.example/${w.name}`);
      targets.push({ url: w.url, vkey: witnessVkey(w.state) });
    }
    // The forked witness already holds another tree of this log, larger than any the gateway will reach.
    const forked = signNote(formatCheckpointBody({ origin, size: 1_000_000, root: Buffer.alloc(32, 7) }), signer);
    writeFileSync(join(root, '..', 'witness-forked', 'checkpoint'), forked);
    (witnesses[2] as Witness).state = openWitness(join(root, '..', 'witness-forked'), 'w.example/forked');
    targets.push({ url: down, vkey: targets[0]?.vkey as string });
    configSet(
      root,
      'gateway.checkpoint',
      JSON.stringify({ every_entries: 1, every_seconds: 3600, witnesses: targets }),
    );
  });
  key = issueKey('witnessed');
});

after(async () => {
  await served?.cleanup();
  for (const w of witnesses) w.server.close();
});

const call = (content: string): Promise<Response> =>
  fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': key },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content }] }),
  });

/** Waits (bounded) until `check` holds: the pushes run in the background, after the calls returned. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((done) => setTimeout(done, 50));
  assert.ok(check(), what);
}

test('each checkpoint is cosigned by the witnesses that follow the log; refusing and absent ones do not fail a call', async () => {
  const cosignedDir = join(served.root, 'HOT', 'ledger', 'cosigned');
  const files = (): string[] => {
    try {
      return readdirSync(cosignedDir).sort();
    } catch {
      return [];
    }
  };
  for (const text of ['one', 'two', 'three']) {
    const res = await call(text);
    assert.equal(res.status, 200, await res.text());
    await eventually(
      () => files().some((f) => readFileSync(join(cosignedDir, f), 'utf8').split('\u2014').length === 4),
      `a checkpoint cosigned by a and b after call ${text}`,
    );
  }
  const [a, b] = witnesses as [Witness, Witness];
  const newest = files().at(-1) as string;
  const note = readFileSync(join(cosignedDir, newest), 'utf8');
  // The file is the checkpoint note with the cosignature lines appended: a note any tlog client verifies.
  assert.equal(verifiedCosignatures(witnessVkey(a.state as State), note, note).length, 1);
  assert.equal(verifiedCosignatures(witnessVkey(b.state as State), note, note).length, 1);
  // a and b moved forward with proofs: each holds the newest size.
  assert.equal(a.state?.held?.head.size, Number(note.split('\n')[1]));
  assert.ok(files().length >= 2, files().join(' '));
  await eventually(
    () =>
      /WITNESS_PUSH_FAILED: witness http:\/\/127\.0\.0\.1:\d+ refused the checkpoint: it holds a tree of 1000000/.test(
        served.stderr(),
      ),
    'the forked witness refusal warned',
  );
  await eventually(
    () => served.stderr().includes(`WITNESS_PUSH_FAILED: witness ${down}: gave up`),
    'the witness that is down given up on',
  );
  // The scrape counts the same outcomes per witness (named by its vkey; the down one shares a's name, so it is #3).
  const metrics = await fetch(`${served.url}/metrics`, {
    headers: { authorization: `Bearer ${issueKey('witness-scraper', ['metrics:read'])}` },
  }).then((r) => r.text());
  const count = (witness: string, outcome: string): number =>
    Number(
      new RegExp(`^cplane_witness_checkpoints_total\\{witness="${witness}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(
        metrics,
      )?.[1] ?? -1,
    );
  assert.ok(count('w.example/a', 'cosigned') >= 2, metrics);
  assert.ok(count('w.example/b', 'cosigned') >= 2, metrics);
  assert.ok(count('w.example/forked', 'refused') >= 1, metrics);
  assert.ok(count('w.example/a#3', 'failed') >= 1, metrics);
  assert.equal(count('w.example/forked', 'cosigned'), 0);
});
