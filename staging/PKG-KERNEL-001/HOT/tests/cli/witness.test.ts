// `cplane witness`: it cosigns the first checkpoint it sees, then only a newer one joined to the held one by a
// consistency proof; a rollback, a fork (another history signed by the same key, from a copy of the root) and a
// newer checkpoint without a proof are refused with the reason. Cosignatures are checked here as
// c2sp.org/tlog-cosignature defines them, not through the witness's own code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../cli/main.js';
import { createRoot } from '../../kernel/installer/genesis.js';
import { Ledger, ledgerPathForRoot } from '../../kernel/ledger/index.js';

async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli({
    argv,
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      out += `${t}\n`;
    },
  });
  return { code, out };
}

function grow(root: string, n: number, tag: string): void {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    ledger.appendBatch(
      Array.from({ length: n }, (_, i) => ({
        event_type: 'TEST',
        submission_id: `${tag}-${i}`,
        decision: 'OK',
        reason: tag,
        metadata: {},
      })),
    );
  } finally {
    ledger.close();
  }
}

/** The witness's cosignature on `note` verified as tlog-cosignature v1 says, with the key of its vkey. */
function checkCosignature(note: string, vkey: string): void {
  const [name, keyId, key] = [
    vkey.slice(0, vkey.indexOf('+')),
    vkey.split('+')[1] as string,
    vkey.split('+').slice(2).join('+'),
  ];
  const raw = Buffer.from(key, 'base64');
  assert.equal(raw[0], 0x04);
  assert.equal(createHash('sha256').update(`${name}\n`).update(raw).digest().subarray(0, 4).toString('hex'), keyId);
  const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
  const line = note
    .trimEnd()
    .split('\n')
    .find((l) => l.startsWith(`\u2014 ${name} `)) as string;
  const sig = Buffer.from(line.split(' ')[2] as string, 'base64');
  assert.equal(sig.subarray(0, 4).toString('hex'), keyId);
  const time = sig.readBigUInt64BE(4);
  const publicKey = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw.subarray(1)]),
    format: 'der',
    type: 'spki',
  });
  assert.equal(verify(null, Buffer.from(`cosignature/v1\ntime ${time}\n${text}`), publicKey, sig.subarray(12)), true);
}

test('a witness cosigns growth proven from what it holds, and refuses a rollback, a fork and an unproven jump', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-witness-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'root');
  createRoot(root);
  grow(root, 300, 'base');
  const f = (name: string) => join(dir, name);
  assert.equal((await cli('ledger', 'export-tiles', '--root', root, f('tiles'))).code, 0);
  const vkey = f('tiles/vkey');
  cpSync(f('tiles/checkpoint'), f('cp-301'));
  // A copy of the root: the same key, from here on another history.
  cpSync(root, f('fork'), { recursive: true });

  const state = f('witness');
  const first = await cli('witness', '--key', vkey, '--state', state, f('cp-301'), '--json');
  assert.equal(first.code, 0, first.out);
  const firstResult = JSON.parse(first.out);
  checkCosignature(firstResult.results[0].cosigned, firstResult.vkey);

  grow(root, 100, 'honest');
  assert.equal((await cli('ledger', 'prove', '--root', root, '--from', f('cp-301'), '--out', f('grow.json'))).code, 0);
  const unproven = JSON.parse(readFileSync(f('grow.json'), 'utf8')).new_checkpoint as string;
  writeFileSync(f('cp-401'), unproven);
  const jump = await cli('witness', '--key', vkey, '--state', state, f('cp-401'));
  assert.notEqual(jump.code, 0);
  assert.match(jump.out, /ERR_WITNESS_REFUSED.*consistency proof/s);

  const grown = await cli('witness', '--key', vkey, '--state', state, f('grow.json'), '--json');
  assert.equal(grown.code, 0, grown.out);
  const grownResult = JSON.parse(grown.out);
  assert.equal(grownResult.results[0].size, 401);
  checkCosignature(grownResult.results[0].cosigned, grownResult.vkey);

  const rollback = await cli('witness', '--key', vkey, '--state', state, f('cp-301'));
  assert.notEqual(rollback.code, 0);
  assert.match(rollback.out, /rollback/);

  // The fork: 100 other entries on the copy, signed by the same root key.
  grow(f('fork'), 100, 'rewritten');
  assert.equal(
    (await cli('ledger', 'prove', '--root', f('fork'), '--from', '301', '--out', f('fork-grow.json'))).code,
    0,
  );
  const forkNote = JSON.parse(readFileSync(f('fork-grow.json'), 'utf8')).new_checkpoint as string;
  writeFileSync(f('fork-401'), forkNote);
  const fork = await cli('witness', '--key', vkey, '--state', state, f('fork-401'));
  assert.notEqual(fork.code, 0);
  assert.match(fork.out, /a fork/);
  grow(f('fork'), 50, 'more');
  assert.equal(
    (await cli('ledger', 'prove', '--root', f('fork'), '--from', '401', '--out', f('fork-more.json'))).code,
    0,
  );
  const forkProof = await cli('witness', '--key', vkey, '--state', state, f('fork-more.json'));
  assert.notEqual(forkProof.code, 0);
  assert.match(forkProof.out, /a fork/);
});
