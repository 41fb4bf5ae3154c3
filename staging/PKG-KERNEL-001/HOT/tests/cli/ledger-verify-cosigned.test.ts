// `ledger verify` reads the checkpoints the witnesses cosigned (HOT/ledger/cosigned/<size>.cosigned): each
// checkpoint must be signed by the root key and be the chain's own tree at its size (recomputed, so a history
// rewritten after the witnesses cosigned it is named), each cosignature must verify with the witness's vkey in
// gateway.checkpoint.witnesses, and a cosignature by any other key is reported and not trusted. The cosignatures
// here come from real `cplane witness` runs; the hand-edited files are made with node:crypto as c2sp.org/signed-note
// describes signing, not through cplane's note code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { growLedger as grow } from './grow-ledger.js';
import { cli } from './run-cli.js';
import { createRoot } from '../../kernel/installer/genesis.js';
import { ledgerPathForRoot } from '../../kernel/ledger/index.js';

interface Finding {
  code: string;
  file: string;
  size: number | null;
  witness: string | null;
  problem: string;
  message: string;
  hint: string;
}
interface Cosigned {
  ok: boolean;
  files: number;
  verified: number;
  cosignatures: Record<string, number>;
  newest: number | null;
  problems: Finding[];
  untrusted: Finding[];
}

/** A note signed as c2sp.org/signed-note says: key ID = SHA-256(name ‖ 0x0A ‖ 0x01 ‖ key)[:4], Ed25519 over text. */
function signWithNewKey(text: string, name: string): string {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const id = createHash('sha256')
    .update(`${name}\n`)
    .update(Buffer.from([1]))
    .update(raw)
    .digest()
    .subarray(0, 4);
  const sig = sign(null, Buffer.from(text), privateKey);
  return `${text}\n\u2014 ${name} ${Buffer.concat([id, sig]).toString('base64')}\n`;
}

test('ledger verify checks each cosigned checkpoint against the chain and the configured witnesses', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-verify-cosigned-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const f = (name: string) => join(dir, name);
  const root = f('root');
  createRoot(root);
  const ledgerFile = ledgerPathForRoot(root);
  // The genesis alone: a history of the same origin can be rewritten from it.
  copyFileSync(ledgerFile, f('genesis.sqlite'));
  grow(ledgerFile, 300, 'first');
  assert.equal((await cli('ledger', 'export-tiles', '--root', root, f('tiles'))).code, 0);
  const note = readFileSync(f('tiles/checkpoint'), 'utf8');
  const size = Number(note.split('\n')[1]);

  // Two real witnesses cosign the checkpoint; a third exists whose key the root does not configure.
  const witness = async (name: string) => {
    const run = await cli(
      'witness',
      '--key',
      f('tiles/vkey'),
      '--state',
      f(name),
      '--name',
      `w.example/${name}`,
      f('tiles/checkpoint'),
      '--json',
    );
    assert.equal(run.code, 0, run.err);
    const cosigned = readFileSync(join(f(name), 'cosigned'), 'utf8');
    return { vkey: JSON.parse(run.out).vkey as string, line: cosigned.slice(note.length) };
  };
  const [a, b, c] = [await witness('a'), await witness('b'), await witness('c')];
  mkdirSync(join(root, 'HOT', 'config'), { recursive: true });
  writeFileSync(
    join(root, 'HOT', 'config', 'gateway.json'),
    JSON.stringify({
      checkpoint: {
        every_entries: 100,
        every_seconds: 60,
        witnesses: [
          { url: 'http://127.0.0.1:1', vkey: a.vkey },
          { url: 'http://127.0.0.1:2', vkey: b.vkey },
        ],
      },
    }),
  );
  const cosignedDir = join(root, 'HOT', 'ledger', 'cosigned');
  mkdirSync(cosignedDir, { recursive: true });
  const file = join(cosignedDir, `${String(size).padStart(16, '0')}.cosigned`);
  const verify = async (): Promise<{ code: number; cosigned: Cosigned; out: string }> => {
    const run = await cli('ledger', 'verify', '--root', root, '--json');
    return { code: run.code, cosigned: JSON.parse(run.out).cosigned, out: run.out };
  };

  writeFileSync(file, `${note}${a.line}${b.line}`);
  const intact = await verify();
  assert.equal(intact.code, 0, intact.out);
  assert.deepEqual(
    { ...intact.cosigned, problems: intact.cosigned.problems.length },
    {
      ok: true,
      files: 1,
      verified: 1,
      cosignatures: { 'w.example/a': 1, 'w.example/b': 1 },
      newest: size,
      problems: 0,
      untrusted: [],
    },
  );
  const text = await cli('ledger', 'verify', '--root', root);
  assert.match(
    text.out,
    new RegExp(
      `cosigned: 1 of 1 checkpoints verified; cosignatures: w.example/a 1, w.example/b 1; witnessed up to #${size}`,
    ),
  );

  const judged = async (content: string): Promise<{ code: number; cosigned: Cosigned }> => {
    writeFileSync(file, content);
    return verify();
  };
  const only = (c: Cosigned): Finding => {
    assert.equal(c.problems.length, 1, JSON.stringify(c.problems));
    const finding = c.problems[0] as Finding;
    assert.equal(finding.code, 'ERR_COSIGNED_INVALID');
    assert.equal(finding.file, file);
    assert.ok(finding.hint.length > 20);
    return finding;
  };

  // The root hash edited, the root key's signature kept.
  const [originLine, sizeLine, rootLine] = note.split('\n') as [string, string, string];
  const otherRoot = Buffer.alloc(32, 7).toString('base64');
  const editedText = `${originLine}\n${sizeLine}\n${otherRoot}\n`;
  const edited = await judged(`${note.replace(rootLine, otherRoot)}${a.line}${b.line}`);
  assert.equal(edited.code, 1);
  assert.deepEqual(
    { ...only(edited.cosigned), message: '', hint: '', code: '', file: '' },
    { code: '', file: '', size, witness: null, problem: 'bad_signature', message: '', hint: '' },
  );
  assert.match(edited.cosigned.problems[0]?.message ?? '', /does not verify/);

  // The edited checkpoint re-signed by another key under the log's name.
  const resigned = await judged(`${signWithNewKey(editedText, originLine)}${a.line}`);
  assert.equal(resigned.code, 1);
  assert.equal(only(resigned.cosigned).problem, 'untrusted_key');
  assert.equal(resigned.cosigned.verified, 0);

  // A cosignature by a witness the config does not name: reported, not trusted, not a failure.
  const unknown = await judged(`${note}${a.line}${c.line}`);
  assert.equal(unknown.code, 0);
  assert.deepEqual(unknown.cosigned.cosignatures, { 'w.example/a': 1 });
  assert.deepEqual(
    unknown.cosigned.untrusted.map((u) => [u.problem, u.witness, u.size, u.file]),
    [['unknown_witness', 'w.example/c', size, file]],
  );

  // A configured witness's cosignature altered (one byte of its signature).
  const sig = Buffer.from(b.line.trim().split(' ')[2] as string, 'base64');
  sig[sig.length - 1] = (sig[sig.length - 1] as number) ^ 1;
  const badB = await judged(`${note}${a.line}\u2014 w.example/b ${sig.toString('base64')}\n`);
  assert.equal(badB.code, 1);
  const finding = only(badB.cosigned);
  assert.deepEqual([finding.problem, finding.witness, finding.size], ['bad_cosignature', 'w.example/b', size]);
  assert.deepEqual(badB.cosigned.cosignatures, { 'w.example/a': 1 });

  // A file cut short.
  const full = `${note}${a.line}${b.line}`;
  const truncated = await judged(full.slice(0, note.length - 30));
  assert.equal(truncated.code, 1);
  assert.deepEqual([only(truncated.cosigned).problem, truncated.cosigned.problems[0]?.size], ['invalid', size]);

  // The history rewritten after the witnesses cosigned it: every entry re-hashed, the chain itself intact.
  writeFileSync(file, full);
  copyFileSync(f('genesis.sqlite'), ledgerFile);
  grow(ledgerFile, 300, 'rewritten');
  const rewritten = await verify();
  assert.equal(rewritten.code, 1);
  const named = only(rewritten.cosigned);
  assert.deepEqual([named.problem, named.size], ['rewritten', size]);
  assert.match(named.message, /rewritten.*after witnesses w\.example\/a, w\.example\/b cosigned it/);
  assert.equal(JSON.parse(rewritten.out).ok, true, 'the rewritten chain itself is intact');
});
