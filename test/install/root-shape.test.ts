// The root's shape and its state files are untrusted input: a freshly bootstrapped, signed root is edited the
// way someone with write access to its files would, and every command refuses it (or the gates FAIL) without
// touching anything outside the root, and without hanging on a FIFO.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REPO } from '../../scripts/lib/repo.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { configPath, receiptPath, rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

const _cplane = join(REPO, 'bin', 'cplane.js');
const work = mkdtempSync(join(tmpdir(), 'cp-shape-'));
const pristine = join(work, 'pristine');
let archive = '';
let caseNo = 0;

function _must(args: string[]): string {
  const r = spawnSync(process.execPath, args, { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

before(() => {
  bootstrapSignedRoot(work, pristine);
  const mock = readdirSync(join(work, 'packages')).find((name) => name.startsWith('PKG-PROVIDER-MOCK-001'));
  assert.ok(mock, 'the build made the mock provider archive');
  archive = join(work, 'packages', mock);
});
after(() => rmSync(work, { recursive: true, force: true }));

interface Case {
  root: string;
  outside: string;
}

/** A copy of the pristine root, with a directory of someone else's files beside it. */
function freshCase(): Case {
  caseNo += 1;
  const dir = join(work, `case-${caseNo}`);
  const root = join(dir, 'root');
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  const outside = join(dir, 'outside');
  mkdirSync(join(outside, 'zz'), { recursive: true });
  writeFileSync(join(outside, 'victim.txt'), "not the root's to delete\n");
  writeFileSync(join(outside, 'zz', 'loot.txt'), "not the root's to take\n");
  return { root, outside };
}

/** Every entry under `dir` (links not followed) with its kind and, for files, its digest. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const child = rel ? `${rel}/${name}` : name;
      const stat = lstatSync(join(dir, child));
      if (stat.isDirectory()) {
        out[child] = 'dir';
        walk(child);
      } else if (stat.isFile())
        out[child] = createHash('sha256')
          .update(readFileSync(join(dir, child)))
          .digest('hex');
      else out[child] = stat.isSymbolicLink() ? 'symlink' : 'special';
    }
  };
  walk('');
  return out;
}

/** A command of the root's own CLI, killed if it runs for a minute (a FIFO opened for reading blocks forever). */
function cli(root: string, args: string[], script = 'cplane.js'): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [join(rootPaths(root).scripts, script), ...args, '--root', root, '--json'], {
    cwd: tmpdir(),
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
}

function refusal(run: SpawnSyncReturns<string>, what: string): { code: string; message: string } {
  assert.equal(run.signal, null, `${what} hung (killed by the guard)`);
  assert.equal(run.status, 3, `${what} should be refused: ${run.stdout}${run.stderr}`);
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

function plantJournal(root: string, journal: Record<string, unknown>): void {
  const base = {
    journal_version: 1,
    txn_id: 'TXN-000000000bad',
    kind: 'uninstall',
    package_id: 'PKG-NOPE-001',
    staging_dir: 'HOT/registries/txn/TXN-000000000bad',
    place: [],
    remove: [],
    owned: [],
    transfers: [],
    installed_meta: {},
    updated_receipts: [],
    receipt: null,
    ledger: { event_type: 'PACKAGE_UNINSTALLED', decision: 'ALLOW', reason: 'planted', metadata: {} },
  };
  writeFileSync(rootPaths(root).journal, JSON.stringify({ ...base, ...journal }));
}

/** `code`: the first refusal expected (a link planted among the code is refused by the module loader before any journal is read). */
function assertJournalRefused(
  c: Case,
  offending: string,
  code = 'ERR_JOURNAL_INVALID',
  plantedToo: string[] = [],
): void {
  const before = snapshot(c.outside);
  const ledgerBefore = readFileSync(rootPaths(c.root).ledgerFile);
  for (const args of [['list'], ['verify'], ['install', archive, '--dev']]) {
    const error = refusal(cli(c.root, args), args[0] as string);
    assert.equal(error.code, code, `${args[0]}: ${error.message}`);
    assert.ok(error.message.includes(offending), `${args[0]} names ${offending}: ${error.message}`);
  }
  assert.deepEqual(snapshot(c.outside), before, 'nothing outside the root was touched');
  assert.equal(existsSync(rootPaths(c.root).journal), true, 'the planted journal was not acted on');
  assert.deepEqual(readFileSync(rootPaths(c.root).ledgerFile), ledgerBefore, 'no repair was recorded');
  // Once the planted journal is moved aside the root works again: the refusal changed nothing.
  rmSync(rootPaths(c.root).journal);
  for (const rel of plantedToo) rmSync(join(c.root, rel));
  rmSync(rootPaths(c.root).txnDir, { recursive: true, force: true });
  mkdirSync(rootPaths(c.root).txnDir);
  const list = cli(c.root, ['list']);
  assert.equal(list.status, 0, list.stdout + list.stderr);
}

test('a planted journal naming paths outside the root is refused by list, verify and install; nothing outside is deleted or moved', () => {
  const c = freshCase();
  // join(root, '../outside/…') is beside the root; the staged file is where join(staging_dir, '../outside/…') lands.
  const staged = join(rootPaths(c.root).txnDir, 'outside');
  mkdirSync(staged, { recursive: true });
  writeFileSync(join(staged, 'new.txt'), 'written out of the root');
  plantJournal(c.root, {
    remove: ['../outside/victim.txt'],
    place: [{ path: '../outside/new.txt', sha256: sha('written out of the root'), size: 23 }],
  });
  assertJournalRefused(c, '../outside/new.txt');
  assert.equal(existsSync(join(c.outside, 'new.txt')), false);
});

test("a planted journal whose staging directory is not its transaction's own is refused", () => {
  const c = freshCase();
  plantJournal(c.root, {
    staging_dir: '../outside',
    kind: 'install',
    place: [{ path: 'HOT/zz/loot.txt', sha256: sha('x'), size: 1 }],
    receipt: { package_id: 'PKG-NOPE-001', files: [] },
  });
  assertJournalRefused(c, '../outside');
});

test('a planted journal that deletes through a symlinked governed directory is refused', () => {
  const c = freshCase();
  symlinkSync(c.outside, join(c.root, 'HOT', 'kernel', 'evil'));
  plantJournal(c.root, { remove: ['HOT/kernel/evil/victim.txt'] });
  assertJournalRefused(c, 'HOT/kernel/evil', 'ERR_MODULE_UNOWNED', ['HOT/kernel/evil']);
});

test('a planted journal whose staging area links out of the root is refused (repair would move the outside files in)', () => {
  const c = freshCase();
  const txn = join(rootPaths(c.root).txnDir, 'TXN-000000000bad');
  mkdirSync(txn, { recursive: true });
  symlinkSync(c.outside, rootPaths(txn).hot);
  const text = "not the root's to take\n";
  plantJournal(c.root, {
    kind: 'install',
    place: [{ path: 'HOT/zz/loot.txt', sha256: sha(text), size: text.length }],
    owned: [{ path: 'HOT/zz/loot.txt', sha256: sha(text), size: text.length, classification: 'kernel' }],
    receipt: { package_id: 'PKG-NOPE-001', files: [] },
  });
  assertJournalRefused(c, 'HOT/registries/txn/TXN-000000000bad/HOT');
  assert.equal(existsSync(join(c.root, 'HOT', 'zz')), false);
});

test('a planted journal staging a symlink (or a file it does not list) is refused', () => {
  const c = freshCase();
  const txn = join(rootPaths(c.root).txnDir, 'TXN-000000000bad', 'HOT', 'zz');
  mkdirSync(txn, { recursive: true });
  symlinkSync(join(c.outside, 'victim.txt'), join(txn, 'loot.txt'));
  plantJournal(c.root, {
    kind: 'install',
    place: [{ path: 'HOT/zz/loot.txt', sha256: sha('x'), size: 1 }],
    receipt: { package_id: 'PKG-NOPE-001', files: [] },
  });
  assertJournalRefused(c, 'HOT/registries/txn/TXN-000000000bad/HOT/zz/loot.txt');
});

test('a receipt naming a path outside the root is refused before uninstall deletes it', () => {
  const c = freshCase();
  const path = receiptPath(c.root, 'PKG-PROVIDER-MOCK-001');
  const receipt = JSON.parse(readFileSync(path, 'utf8')) as { files: Array<{ path: string }> };
  (receipt.files[0] as { path: string }).path = '../outside/victim.txt';
  writeFileSync(path, JSON.stringify(receipt));
  const before = snapshot(c.outside);
  const error = refusal(cli(c.root, ['uninstall', 'PKG-PROVIDER-MOCK-001']), 'uninstall');
  assert.equal(error.code, 'ERR_RECEIPT_INVALID', error.message);
  assert.match(error.message, /outside\/victim\.txt/);
  assert.deepEqual(snapshot(c.outside), before);
});

/** Every command that opens a root, and the root's own entry scripts. */
const COMMANDS: Array<{ name: string; args: () => string[]; script?: string }> = [
  { name: 'list', args: () => ['list'] },
  { name: 'verify', args: () => ['verify'] },
  { name: 'install', args: () => ['install', archive, '--dev'] },
  { name: 'route', args: () => ['route', '--prompt', 'hello', '--dev'] },
  { name: 'ledger verify', args: () => ['ledger', 'verify'] },
  {
    name: 'ledger append',
    args: () => [
      'ledger',
      'append',
      '--event-type',
      'NOTE',
      '--submission-id',
      'S',
      '--decision',
      'ALLOW',
      '--reason',
      'r',
    ],
  },
  { name: 'gate-check', args: () => ['--all'], script: 'gate_check.js' },
];

function assertEveryCommandRefuses(c: Case, code: string, path: string): void {
  const before = snapshot(c.outside);
  for (const command of COMMANDS) {
    const error = refusal(cli(c.root, command.args(), command.script), command.name);
    assert.equal(error.code, code, `${command.name}: ${error.message}`);
    assert.ok(error.message.includes(path), `${command.name} names ${path}: ${error.message}`);
  }
  assert.deepEqual(snapshot(c.outside), before, 'nothing outside the root was written');
}

/** Move a state entry out of the root and leave a symlink to it in its place. */
function linkOut(c: Case, rel: string): void {
  const away = join(c.outside, rel.replaceAll('/', '_'));
  renameSync(join(c.root, rel), away);
  symlinkSync(away, join(c.root, rel));
}

for (const rel of [
  'HOT/ledger',
  'HOT/ledger/ledger.sqlite',
  'HOT/registries',
  'HOT/registries/ownership.sqlite',
  'HOT/registries/trust.json',
  'HOT/installed',
  'HOT/installed/PKG-ROUTER-001',
  'HOT/installed/PKG-ROUTER-001/receipt.json',
]) {
  test(`a symlink at ${rel} is refused by every command and nothing is written through it`, () => {
    const c = freshCase();
    linkOut(c, rel);
    assertEveryCommandRefuses(c, 'ERR_ROOT_SYMLINK', rel);
  });
}

test('HOT itself as a symlink is refused by every command', () => {
  const c = freshCase();
  linkOut(c, 'HOT');
  // The entry scripts live under HOT, so run them from the linked tree: the root they are given is still refused.
  assertEveryCommandRefuses(c, 'ERR_ROOT_SYMLINK', 'HOT');
});

test('a symlinked spool or budget database is refused by route and gates', () => {
  for (const name of ['router-spool', 'budget.sqlite']) {
    const c = freshCase();
    const rel = `HOT/registries/${name}`;
    if (existsSync(join(c.root, rel))) linkOut(c, rel);
    else {
      mkdirSync(join(c.outside, name));
      symlinkSync(join(c.outside, name), join(c.root, rel));
    }
    assertEveryCommandRefuses(c, 'ERR_ROOT_SYMLINK', rel);
  }
});

test('a FIFO planted as the journal is never opened: every command refuses at once', () => {
  const c = freshCase();
  const made = spawnSync('mkfifo', [rootPaths(c.root).journal]);
  assert.equal(made.status, 0, 'mkfifo');
  assertEveryCommandRefuses(c, 'ERR_ROOT_SHAPE', 'HOT/registries/journal.json');
});

test('a FIFO in place of a config file the commands read at start-up is refused at once', () => {
  const c = freshCase();
  rmSync(configPath(c.root, 'router.json'));
  assert.equal(spawnSync('mkfifo', [configPath(c.root, 'router.json')]).status, 0);
  assertEveryCommandRefuses(c, 'ERR_ROOT_SHAPE', 'HOT/config/router.json');
});

test('a directory where the ledger database belongs is refused', () => {
  const c = freshCase();
  renameSync(rootPaths(c.root).ledgerFile, join(c.outside, 'ledger.sqlite'));
  mkdirSync(rootPaths(c.root).ledgerFile);
  assertEveryCommandRefuses(c, 'ERR_ROOT_SHAPE', 'HOT/ledger/ledger.sqlite');
});

interface GateJson {
  gates: Array<{ id: string; status: string; findings: Array<{ code: string; path?: string }> }>;
}

function gates(root: string): GateJson {
  const run = cli(root, ['--all'], 'gate_check.js');
  assert.equal(run.signal, null, 'gate-check hung');
  return JSON.parse(run.stdout) as GateJson;
}

const OWNED = 'HOT/dispatch/examples/tasks.example.md';

test('a FIFO at an owned path does not hang gate-check or verify: G1 FAILs it as unreadable', () => {
  const c = freshCase();
  rmSync(join(c.root, OWNED));
  assert.equal(spawnSync('mkfifo', [join(c.root, OWNED)]).status, 0);
  const json = gates(c.root);
  const g1 = json.gates.find((g) => g.id === 'G1');
  assert.equal(g1?.status, 'FAIL');
  assert.deepEqual(
    g1?.findings.map((f) => [f.code, f.path]),
    [['OWNED_FILE_UNREADABLE', OWNED]],
  );
  const verify = cli(c.root, ['verify']);
  assert.equal(verify.signal, null, 'verify hung');
  assert.notEqual(verify.status, 0);
});

test('a directory in place of an owned file is a G1 FAIL, not a skip', () => {
  const c = freshCase();
  rmSync(join(c.root, OWNED));
  mkdirSync(join(c.root, OWNED));
  const g1 = gates(c.root).gates.find((g) => g.id === 'G1');
  assert.equal(g1?.status, 'FAIL');
  assert.deepEqual(
    g1?.findings.map((f) => f.code),
    ['OWNED_FILE_UNREADABLE'],
  );
});

test('a registry row naming a path outside the root is a G1 FAIL and is never opened (a FIFO there would hang)', () => {
  const c = freshCase();
  assert.equal(spawnSync('mkfifo', [join(c.outside, 'fifo')]).status, 0);
  const db = new Database(rootPaths(c.root).ownershipDb);
  try {
    db.prepare('UPDATE owned_files SET path = ? WHERE path = ?').run('../outside/fifo', OWNED);
  } finally {
    db.close();
  }
  const g1 = gates(c.root).gates.find((g) => g.id === 'G1');
  assert.equal(g1?.status, 'FAIL');
  assert.ok(
    g1?.findings.some((f) => f.code === 'OWNED_FILE_UNREADABLE' && f.path === '../outside/fifo'),
    JSON.stringify(g1?.findings),
  );
});

test('the untouched root passes: every command works and every gate passes', () => {
  const c = freshCase();
  for (const args of [['list'], ['verify'], ['ledger', 'verify'], ['route', '--prompt', 'hello', '--dev']]) {
    const run = cli(c.root, args);
    assert.equal(run.status, 0, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
  }
  const json = gates(c.root);
  assert.deepEqual(
    json.gates.filter((g) => g.status !== 'PASS').map((g) => g.id),
    [],
  );
});
