// A third-party tlog client reads cplane's outputs: test/proofs/tlog-client/main.go, built here with Debian's Go and
// golang.org/x/mod (the checksum database's own client libraries, sumdb/note and sumdb/tlog, where C2SP signed notes
// and tlog tiles come from), opens the exported checkpoint with the exported vkey, recomputes the tree hash from the
// exported tiles, proves records from them, and checks cplane's inclusion and consistency proofs with
// tlog.CheckRecord and tlog.CheckTree. It accepts what cplane wrote (a checkpoint a witness cosigned too) and rejects a tampered tile, a tampered proof
// and a checkpoint signed by another key. Under CI (CI=true) a missing Go toolchain fails the test; elsewhere it skips.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { REPO } from '../../scripts/lib/repo.js';
import { growLedger } from '../../staging/PKG-KERNEL-001/HOT/tests/cli/grow-ledger.js';

const grow = (root: string, n: number, tag: string): void => growLedger(ledgerPathForRoot(root), n, tag);

const { createRoot } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/installer/genesis.js')>(
  'HOT/kernel/installer/genesis.js',
);
const { Ledger, ledgerPathForRoot } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { runCli } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/cli/main.js')>('HOT/cli/main.js');

/** Debian's golang-golang-x-mod-dev source tree, built in GOPATH mode (no module proxy needed). */
const GOPATH = process.env.CPLANE_TEST_GOPATH ?? '/usr/share/gocode';

function findGo(): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), '/usr/lib/go/bin']) {
    const go = join(dir, 'go');
    if (dir !== '' && existsSync(go)) return go;
  }
  return null;
}

function goSkip(go: string | null): string | false {
  const missing =
    go === null
      ? 'no `go` on PATH'
      : !existsSync(join(GOPATH, 'src', 'golang.org', 'x', 'mod', 'sumdb', 'tlog'))
        ? `no golang.org/x/mod source under ${GOPATH}`
        : null;
  if (missing === null) return false;
  const what = `${missing} (apt-get install golang-go golang-golang-x-mod-dev)`;
  if (process.env.CI === 'true') throw new Error(`${what}: CI must have it, .ci/run installs it`);
  return `SKIP: ${what}`;
}

const go = findGo();
const skip = goSkip(go);

const work = mkdtempSync(join(tmpdir(), 'cp-tlog-go-'));
after(() => rmSync(work, { recursive: true, force: true }));
const f = (name: string) => join(work, name);
const client = f('tlog-client');

async function cplane(...argv: string[]): Promise<void> {
  let out = '';
  const code = await runCli({ argv, stdout: (t) => void (out += `${t}\n`), stderr: (t) => void (out += `${t}\n`) });
  assert.equal(code, 0, out);
}

/** The Go client's verdict: its exit status and what it printed. */
function goClient(...args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(client, args, { encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

let root = '';
let entryId = '';
before(() => {
  if (skip !== false) return;
  const built = spawnSync(
    go as string,
    ['build', '-o', client, join(REPO, 'test', 'proofs', 'tlog-client', 'main.go')],
    {
      encoding: 'utf8',
      env: { ...process.env, GO111MODULE: 'off', GOPATH, GOCACHE: f('gocache'), GOFLAGS: '' },
    },
  );
  assert.equal(built.status, 0, built.stderr);
  root = f('root');
  createRoot(root);
  // Past one full tile of 256 and into a partial one, so full and partial tiles at levels 0 and 1 are both read.
  grow(root, 300, 'first');
  const ledger = Ledger.open(ledgerPathForRoot(root));
  entryId = ledger.getBySeq(200)?.id as string;
  ledger.close();
});

test('Go sumdb/tlog reads the exported tiles and checks cplane proofs; tampering is rejected', { skip }, async () => {
  await cplane('ledger', 'export-tiles', '--root', root, f('old-log'));
  const oldSize = Number(readFileSync(f('old-log/checkpoint'), 'utf8').split('\n')[1]);
  grow(root, 500, 'more');
  await cplane('ledger', 'export-tiles', '--root', root, f('log'));
  await cplane('ledger', 'prove', '--root', root, '--entry', entryId, '--out', f('inclusion.json'));
  await cplane('ledger', 'prove', '--root', root, '--from', f('old-log/checkpoint'), '--out', f('consistency.json'));
  const note = readFileSync(f('log/checkpoint'), 'utf8');
  const [origin, sizeLine, rootLine] = note.split('\n') as [string, string, string];
  const size = Number(sizeLine);
  assert.equal(size, oldSize + 500);

  // Accepted: the tree hash from the tiles is the signed root; records in full and partial level-0 tiles prove.
  const tiles = goClient('tiles', f('log'), '0', '199', '256', String(size - 1));
  assert.ok(tiles.ok, tiles.out);
  assert.match(
    tiles.out,
    new RegExp(
      `^ok: ${origin} tree of ${size}, root ${rootLine.replace(/[+/]/g, '\\$&')} from the tiles, 4 records proven`,
    ),
  );
  const oldTiles = goClient('tiles', f('old-log'), '5');
  assert.ok(oldTiles.ok, oldTiles.out);
  const inclusion = goClient('inclusion', f('log/vkey'), f('inclusion.json'));
  assert.ok(inclusion.ok, inclusion.out);
  assert.match(inclusion.out, new RegExp(`^ok: leaf 199 in ${origin} tree of ${size}`));
  const consistency = goClient('consistency', f('log/vkey'), f('consistency.json'));
  assert.ok(consistency.ok, consistency.out);
  assert.match(consistency.out, new RegExp(`tree of ${size} extends the tree of ${oldSize}`));

  // A checkpoint a witness cosigned (`cplane witness`): Go's note.Open takes it with the log's vkey alone, ignoring the
  // cosignature line of a key it does not know.
  await cplane('witness', '--key', f('log/vkey'), '--state', f('witness'), f('log/checkpoint'));
  const cosigned = readFileSync(f('witness/cosigned'), 'utf8');
  assert.equal(cosigned.split('\n\u2014 ').length, 3);
  cpSync(f('log'), f('cosigned-log'), { recursive: true });
  writeFileSync(f('cosigned-log/checkpoint'), cosigned);
  const witnessed = goClient('tiles', f('cosigned-log'));
  assert.ok(witnessed.ok, witnessed.out);

  // A tile edited: one hash in the level-1 tile (the root no longer follows), one in the first level-0 tile.
  const tampered = (name: string, path: string, at: number): string => {
    cpSync(f('log'), f(name), { recursive: true });
    const bytes = readFileSync(join(f(name), path));
    bytes[at] = (bytes[at] as number) ^ 1;
    writeFileSync(join(f(name), path), bytes);
    return f(name);
  };
  const level1 = goClient('tiles', tampered('bad-level1', 'tile/1/000.p/3', 40));
  assert.deepEqual([level1.ok, /inconsistent tile/.test(level1.out)], [false, true], level1.out);
  const level0 = goClient('tiles', tampered('bad-level0', 'tile/0/000', 199 * 32 + 3), '199');
  assert.deepEqual([level0.ok, /^rejected: record 199/m.test(level0.out)], [false, true], level0.out);

  // A proof edited: one hash of the audit path, one of the consistency path.
  const editProof = (file: string, field: 'audit_path' | 'consistency_path'): string => {
    const proof = JSON.parse(readFileSync(f(file), 'utf8'));
    const hash = Buffer.from(proof[field][0], 'base64');
    hash[0] = (hash[0] as number) ^ 1;
    proof[field][0] = hash.toString('base64');
    writeFileSync(f(`bad-${file}`), JSON.stringify(proof));
    return f(`bad-${file}`);
  };
  const badInclusion = goClient('inclusion', f('log/vkey'), editProof('inclusion.json', 'audit_path'));
  assert.deepEqual(
    [badInclusion.ok, /invalid transparency proof/.test(badInclusion.out)],
    [false, true],
    badInclusion.out,
  );
  const badConsistency = goClient('consistency', f('log/vkey'), editProof('consistency.json', 'consistency_path'));
  assert.deepEqual(
    [badConsistency.ok, /invalid transparency proof/.test(badConsistency.out)],
    [false, true],
    badConsistency.out,
  );

  // The checkpoint signed by another key under the log's name (c2sp.org/signed-note, made with node:crypto).
  const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const id = createHash('sha256').update(`${origin}\n\u0001`).update(raw).digest().subarray(0, 4);
  const forged = `${text}\n\u2014 ${origin} ${Buffer.concat([id, sign(null, Buffer.from(text), privateKey)]).toString('base64')}\n`;
  const otherKey = tampered('other-key', 'checkpoint', 0);
  writeFileSync(join(otherKey, 'checkpoint'), forged);
  const resigned = goClient('tiles', otherKey);
  assert.deepEqual([resigned.ok, /checkpoint note: .*verif/i.test(resigned.out)], [false, true], resigned.out);
  // The same key's signature over an edited root.
  const edited = tampered('edited-root', 'checkpoint', 0);
  writeFileSync(join(edited, 'checkpoint'), note.replace(rootLine, Buffer.alloc(32, 9).toString('base64')));
  const editedRoot = goClient('tiles', edited);
  assert.deepEqual(
    [editedRoot.ok, /checkpoint note: .*signature/i.test(editedRoot.out)],
    [false, true],
    editedRoot.out,
  );
});
