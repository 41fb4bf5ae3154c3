// The fault-injection sweep: every command that writes, driven through a full disk (a small tmpfs, and
// injected ENOSPC where mounting is not permitted), over-long names and damaged databases. Each case must end
// in success or a coded error — never ERR_INTERNAL — and leave the root whole (verify, ledger verify, gates).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  archive,
  assertGatesPass,
  assertRootWhole,
  buildOnce,
  cleanupBuild,
  copyRoot,
  run,
  Tally,
  tasksFile,
} from './harness.js';
import { configPath } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

after(cleanupBuild);
const tally = new Tally();
after(() => {
  process.stdout.write(`# fault sweep: ${tally.summary()}\n`);
});

function temp(t: { after: (fn: () => void) => void }, prefix = 'cp-faults-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Inputs {
  /** Files prepared while there was space, outside the faulty filesystem. */
  exportFile: string;
  pubKey: string;
  tasks: string;
}

function prepareInputs(root: string, dir: string): Inputs {
  mkdirSync(dir, { recursive: true });
  const exportFile = join(dir, 'export.jsonl');
  const exported = run(['ledger', 'export', '--root', root, '--out', exportFile]);
  assert.equal(exported.status, 0, exported.stdout + exported.stderr);
  const keys = join(dir, 'keys');
  assert.equal(run(['keys', 'generate', '--out', keys]).status, 0);
  return { exportFile, pubKey: join(keys, 'cplane-signing.pub'), tasks: tasksFile(join(dir, 'spec')) };
}

/** Every writing command, against root R, writing new files under `out` (on the same faulty filesystem). */
function writingCommands(root: string, out: string, inputs: Inputs, tag: string): Array<[string, string[]]> {
  return [
    ['install', ['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', root, '--dev', '--json']],
    ['uninstall', ['uninstall', 'PKG-PROVIDER-ANTHROPIC-001', '--root', root, '--json']],
    ['route', ['route', '--root', root, '--prompt', `fault ${tag}`, '--dev', '--json']],
    [
      'ledger append',
      [
        'ledger',
        'append',
        '--root',
        root,
        '--event-type',
        'FAULT_TEST',
        '--submission-id',
        tag,
        '--decision',
        'OK',
        '--reason',
        'sweep',
        '--json',
      ],
    ],
    ['ledger export', ['ledger', 'export', '--root', root, '--out', join(out, `export-${tag}.jsonl`), '--json']],
    [
      'ledger import',
      ['ledger', 'import', '--ledger', join(out, `imported-${tag}.sqlite`), '--from', inputs.exportFile, '--json'],
    ],
    ['dispatch init', ['dispatch', 'init', '--root', root, '--run', `RUN-${tag}`, '--tasks', inputs.tasks, '--json']],
    [
      'dispatch ingest',
      [
        'dispatch',
        'ingest',
        '--root',
        root,
        '--run',
        `RUN-${tag}`,
        '--task',
        '1',
        '--outcome',
        'completed',
        '--summary',
        'done',
        '--json',
      ],
    ],
    ['keys generate', ['keys', 'generate', '--out', join(out, `keys-${tag}`), '--json']],
    ['keys trust', ['keys', 'trust', '--root', root, inputs.pubKey, '--json']],
    ['budget status', ['budget', 'status', '--root', root, '--json']],
  ];
}

function tryMountTmpfs(dir: string, size: string): string | null {
  mkdirSync(dir, { recursive: true });
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  return mount.status === 0 ? null : `${mount.stderr || mount.error?.message || 'mount failed'}`.trim();
}

/** Fill the filesystem holding `dir` until `freeBytes` remain. */
function fill(dir: string, freeBytes: number): string {
  const filler = join(dir, 'filler');
  const stat = statfsSync(dir);
  const avail = stat.bavail * stat.bsize;
  const size = Math.max(0, avail - freeBytes);
  const made = spawnSync('fallocate', ['-l', String(size), filler]);
  if (made.status !== 0) writeFileSync(filler, Buffer.alloc(size));
  return filler;
}

/** A new root bootstrapped on the full disk is gone, or still marked incomplete, or whole. */
function assertBootstrapLeftNothingHalfDone(root: string, label: string): void {
  if (!existsSync(root)) return;
  if (existsSync(join(root, '.cplane-bootstrap-incomplete')) || readdirSync(root).length === 0) return;
  assertRootWhole(root, label);
}

test('disk full (tmpfs): every writing command ends coded or OK, and the root is whole once space is back', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-faults-'));
  const mnt = join(dir, 'mnt');
  const refused = tryMountTmpfs(mnt, '48m');
  // One hook, in this order: the mount must be gone before its directory is removed.
  t.after(() => {
    if (refused === null) spawnSync('umount', [mnt]);
    rmSync(dir, { recursive: true, force: true });
  });
  if (refused !== null) {
    t.skip(`cannot mount a tmpfs here (${refused}); the injected-ENOSPC test covers the same commands`);
    return;
  }
  const inputs = prepareInputs(buildOnce().template, join(dir, 'inputs'));
  for (const freeKiB of [0, 64, 256]) {
    const root = copyRoot(join(mnt, 'root'));
    const out = join(mnt, 'out');
    mkdirSync(out, { recursive: true });
    // A leaf package: nothing installed depends on it, so it can be uninstalled and installed again.
    assert.equal(
      run(['uninstall', 'PKG-PROVIDER-GEMINI-001', '--root', root]).status,
      0,
      'prepare: a package to install',
    );
    const filler = fill(mnt, freeKiB * 1024);
    for (const [name, args] of writingCommands(root, out, inputs, `free${freeKiB}`)) {
      const outcome = tally.record(`disk full (${freeKiB} KiB free): ${name}`, run(args));
      t.diagnostic(`${freeKiB} KiB free: ${name} -> ${outcome}`);
    }
    const newRoot = join(out, 'new-root');
    const boot = run(['bootstrap', buildOnce().bootstrap, '--root', newRoot, '--dev', '--json']);
    t.diagnostic(
      `${freeKiB} KiB free: bootstrap -> ${tally.record(`disk full (${freeKiB} KiB free): bootstrap`, boot)}`,
    );
    rmSync(filler);
    assertRootWhole(root, `after ${freeKiB} KiB free`);
    assertBootstrapLeftNothingHalfDone(newRoot, `bootstrap with ${freeKiB} KiB free`);
    if (freeKiB === 0) assertGatesPass(root, 'after a full disk');
    rmSync(root, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  }
});

/** A preload that makes every synchronous file write fail with ENOSPC, as a full disk does. */
const ENOSPC_PRELOAD = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const full = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
const isStd = (fd) => fd === 1 || fd === 2;
const writeSync = fs.writeSync;
fs.writeSync = function (fd, ...rest) { if (isStd(fd)) return writeSync.call(this, fd, ...rest); throw full(); };
fs.writeFileSync = function () { throw full(); };
fs.appendFileSync = function () { throw full(); };
syncBuiltinESMExports();
`;

test('disk full (injected ENOSPC on every file write): every writing command ends coded or OK, the root stays whole', (t) => {
  const dir = temp(t);
  const preload = join(dir, 'enospc.mjs');
  writeFileSync(preload, ENOSPC_PRELOAD);
  const root = copyRoot(join(dir, 'root'));
  const out = join(dir, 'out');
  mkdirSync(out);
  const inputs = prepareInputs(root, join(dir, 'inputs'));
  assert.equal(run(['uninstall', 'PKG-PROVIDER-GEMINI-001', '--root', root]).status, 0);
  const env = { NODE_OPTIONS: `--import ${preload}` };
  for (const [name, args] of writingCommands(root, out, inputs, 'inj')) {
    const outcome = tally.record(`injected ENOSPC: ${name}`, run(args, dir, env));
    t.diagnostic(`injected ENOSPC: ${name} -> ${outcome}`);
  }
  assertRootWhole(root, 'after injected ENOSPC');
  assert.equal(existsSync(join(out, 'keys-inj', 'cplane-signing.key')), false, 'no half key pair');
});

test('over-long names: every path argument with a 300-byte segment ends in a coded error, nothing is created', (t) => {
  const dir = temp(t);
  const root = copyRoot(join(dir, 'root'));
  const long = 'n'.repeat(300);
  const inputs = prepareInputs(root, join(dir, 'inputs'));
  const cases: Array<[string, string[]]> = [
    ['install archive', ['install', join(dir, `${long}.tar.gz`), '--root', root, '--dev', '--json']],
    ['install root', ['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', join(dir, long), '--dev', '--json']],
    ['bootstrap root', ['bootstrap', buildOnce().bootstrap, '--root', join(dir, long, 'r'), '--dev', '--json']],
    ['route root', ['route', '--root', join(dir, long), '--prompt', 'x', '--dev', '--json']],
    ['route compiled', ['route', '--root', root, '--compiled', join(dir, long), '--dev', '--json']],
    [
      'ledger append',
      [
        'ledger',
        'append',
        '--ledger',
        join(dir, long, 'l.sqlite'),
        '--event-type',
        'X',
        '--submission-id',
        'S',
        '--decision',
        'D',
        '--reason',
        'r',
        '--json',
      ],
    ],
    [
      'ledger append file',
      [
        'ledger',
        'append',
        '--ledger',
        join(dir, `${long}.sqlite`),
        '--event-type',
        'X',
        '--submission-id',
        'S',
        '--decision',
        'D',
        '--reason',
        'r',
        '--json',
      ],
    ],
    ['ledger export', ['ledger', 'export', '--root', root, '--out', join(dir, `${long}.jsonl`), '--json']],
    [
      'ledger export into a missing directory',
      ['ledger', 'export', '--root', root, '--out', join(dir, 'no-such-dir', 'x.jsonl'), '--json'],
    ],
    [
      'ledger import from',
      ['ledger', 'import', '--ledger', join(dir, 'i.sqlite'), '--from', join(dir, long), '--json'],
    ],
    [
      'ledger import into',
      ['ledger', 'import', '--ledger', join(dir, `${long}.sqlite`), '--from', inputs.exportFile, '--json'],
    ],
    [
      'dispatch init tasks',
      ['dispatch', 'init', '--root', root, '--run', 'R1', '--tasks', join(dir, long, 'tasks.md'), '--json'],
    ],
    ['dispatch run id', ['dispatch', 'init', '--root', root, '--run', long, '--tasks', inputs.tasks, '--json']],
    ['keys generate', ['keys', 'generate', '--out', join(dir, long), '--json']],
    ['keys trust', ['keys', 'trust', '--root', root, join(dir, long), '--json']],
    ['prompt compile', ['prompt', 'compile', '--spec', join(dir, long), '--json']],
    ['budget status', ['budget', 'status', '--root', join(dir, long), '--json']],
    ['gate-check', ['gate-check', '--root', join(dir, long), '--json']],
  ];
  for (const [name, args] of cases) {
    const result = run(args, dir);
    const outcome = tally.record(`long name: ${name}`, result);
    assert.notEqual(outcome, 'OK', `${name} accepted a 300-byte name`);
    if (
      name.startsWith('install archive') ||
      name.startsWith('keys') ||
      (name.startsWith('ledger export') && !name.includes('missing'))
    )
      assert.equal(outcome, 'ERR_NAME_TOO_LONG', name);
    t.diagnostic(`long name: ${name} -> ${outcome}`);
  }
  assert.deepEqual(
    readdirSync(dir).filter((n) => n.length > 255),
    [],
    'no over-long entry was created',
  );
  assertRootWhole(root, 'after long names');
});

test('damaged databases (budget, dispatch, ownership registry, root lock): coded errors, gates report, no crash', (t) => {
  const dir = temp(t);
  const inputs = prepareInputs(buildOnce().template, join(dir, 'inputs'));
  const garbage = Buffer.alloc(16384, 0x5a);
  const damage = (path: string, how: 'garbage' | 'pages'): void => {
    if (how === 'garbage' || !existsSync(path)) {
      writeFileSync(path, garbage);
      return;
    }
    // Keep the 100-byte SQLite header, wreck every page after it: opens, then SQLITE_CORRUPT on first read.
    const fd = spawnSync('dd', ['if=/dev/urandom', `of=${path}`, 'bs=1', 'seek=100', 'count=8000', 'conv=notrunc'], {
      encoding: 'utf8',
    });
    assert.equal(fd.status, 0, fd.stderr);
  };
  const databases: Array<[string, string, Array<[string, (root: string) => string[]]>]> = [
    [
      'budget',
      'HOT/registries/budget.sqlite',
      [
        ['route', (r) => ['route', '--root', r, '--prompt', 'x', '--dev', '--json']],
        ['budget status', (r) => ['budget', 'status', '--root', r, '--json']],
      ],
    ],
    [
      'dispatch',
      'HOT/registries/dispatch.sqlite',
      [
        ['dispatch init', (r) => ['dispatch', 'init', '--root', r, '--run', 'R2', '--tasks', inputs.tasks, '--json']],
        ['dispatch status', (r) => ['dispatch', 'status', '--root', r, '--run', 'R1', '--json']],
      ],
    ],
    [
      'ownership',
      'HOT/registries/ownership.sqlite',
      [
        ['install', (r) => ['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', r, '--dev', '--json']],
        ['uninstall', (r) => ['uninstall', 'PKG-PROVIDER-ANTHROPIC-001', '--root', r, '--json']],
        ['verify', (r) => ['verify', '--root', r, '--json']],
        ['list', (r) => ['list', '--root', r, '--json']],
        ['gate-check', (r) => ['gate-check', '--root', r, '--json']],
      ],
    ],
    [
      'lock',
      'HOT/registries/lock.sqlite',
      [
        ['install', (r) => ['install', archive('PKG-PROVIDER-GEMINI-001'), '--root', r, '--dev', '--json']],
        ['uninstall', (r) => ['uninstall', 'PKG-PROVIDER-ANTHROPIC-001', '--root', r, '--json']],
      ],
    ],
  ];
  const prepared = copyRoot(join(dir, 'prepared'));
  assert.equal(
    run(['dispatch', 'init', '--root', prepared, '--run', 'R1', '--tasks', inputs.tasks]).status,
    0,
    'prepare: a dispatch store',
  );
  assert.equal(run(['route', '--root', prepared, '--prompt', 'prepare', '--dev']).status, 0, 'prepare: a budget store');
  assert.equal(
    run(['uninstall', 'PKG-PROVIDER-GEMINI-001', '--root', prepared]).status,
    0,
    'prepare: a package to install',
  );
  for (const [db, rel, commands] of databases) {
    for (const how of ['garbage', 'pages'] as const) {
      const root = join(dir, `root-${db}-${how}`);
      cpSync(prepared, root, { recursive: true });
      for (const suffix of ['-wal', '-shm']) rmSync(join(root, `${rel}${suffix}`), { force: true });
      damage(join(root, rel), how);
      for (const [name, args] of commands) {
        const result = run(args(root));
        const outcome = tally.record(`damaged ${db} db (${how}): ${name}`, result);
        t.diagnostic(`damaged ${db} (${how}): ${name} -> ${outcome}`);
        // The lock holds nothing but its SQLite header's file lock, so wrecked pages behind the header do not matter.
        const harmless = name === 'gate-check' || name === 'verify' || (db === 'lock' && how === 'pages');
        if (!harmless) assert.notEqual(outcome, 'OK', `${name} went on with a damaged ${db} database`);
      }
      const ledger = run(['ledger', 'verify', '--root', root]);
      assert.equal(
        ledger.status,
        0,
        `the ledger is untouched by a damaged ${db} database: ${ledger.stdout}${ledger.stderr}`,
      );
    }
  }
});

test('config values the code cannot honour are refused alike by the loader and by G3 (timer clamp, negatives, zero attempts)', (t) => {
  const dir = temp(t);
  const root = copyRoot(join(dir, 'root'));
  const routerConfig = configPath(root, 'router.json');
  const good = JSON.parse(readFileSync(routerConfig, 'utf8')) as Record<string, Record<string, unknown> | unknown>;
  const retry = good.retry as Record<string, unknown>;
  const breaker = good.breaker as Record<string, unknown>;
  const bad: Array<[string, Record<string, unknown>]> = [
    ['timeout_ms over the Node timer limit (clamped to 1 ms)', { timeout_ms: 2 ** 31 }],
    ['timeout_ms zero', { timeout_ms: 0 }],
    ['negative backoff', { retry: { ...retry, base_delay_ms: -1 } }],
    ['backoff over the timer limit', { retry: { ...retry, max_delay_ms: 2 ** 31 } }],
    ['retry-after ceiling over the timer limit', { retry: { ...retry, max_retry_after_ms: 1e12 } }],
    ['zero attempts', { retry: { ...retry, max_attempts: 0 } }],
    ['breaker reset over the timer limit', { breaker: { ...breaker, reset_timeout_ms: 2 ** 31 } }],
    ['zero failure threshold', { breaker: { ...breaker, failure_threshold: 0 } }],
    ['default_max_tokens over the request bound', { default_max_tokens: 1_000_001 }],
    ['zero ledger write attempts', { ledger_write_attempts: 0 }],
  ];
  for (const [label, change] of bad) {
    writeFileSync(routerConfig, JSON.stringify({ ...good, ...change }));
    const route = run(['route', '--root', root, '--prompt', 'x', '--dev', '--json']);
    assert.equal(
      tally.record(`router config: ${label}: route`, route),
      'ERR_ROUTER_CONFIG_INVALID',
      `${label}: ${route.stdout}`,
    );
    const g3 = run(['gate-check', '--root', root, '--gate', 'G3', '--json']);
    assert.equal(g3.status, 1, `${label}: G3 must FAIL: ${g3.stdout}`);
    assert.match(g3.stdout, /CONFIG_INVALID/);
  }
  // The edge values themselves are honoured: the loader and G3 accept them.
  writeFileSync(
    routerConfig,
    JSON.stringify({ ...good, timeout_ms: 2 ** 31 - 1, retry: { ...retry, max_delay_ms: 2 ** 31 - 1 } }),
  );
  assert.equal(run(['route', '--root', root, '--prompt', 'x', '--dev']).status, 0);
  assert.equal(run(['gate-check', '--root', root, '--gate', 'G3']).status, 0);

  const budgetPath = configPath(root, 'budget.json');
  const budget = JSON.parse(readFileSync(budgetPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(
    budgetPath,
    JSON.stringify({ ...budget, rate_limits: { session: { window_ms: 1000, max_tokens: 2 ** 60 } } }),
  );
  assert.equal(
    tally.record('budget config: rate limit beyond 2^53', run(['budget', 'status', '--root', root, '--json'])),
    'ERR_BUDGET_CONFIG_INVALID',
  );
  assert.equal(run(['gate-check', '--root', root, '--gate', 'G3']).status, 1);
});

test('files read whole are bounded: a sparse 5 GiB key, spec, compiled prompt, config or import is refused, not read', (t) => {
  const dir = temp(t);
  const root = copyRoot(join(dir, 'root'));
  const huge = join(dir, 'huge');
  assert.equal(spawnSync('truncate', ['-s', '5G', huge]).status, 0);
  const cases: Array<[string, string[], string[]]> = [
    ['keys trust', ['keys', 'trust', '--root', root, huge, '--json'], ['ERR_INPUT_TOO_LARGE']],
    [
      'build --sign-key',
      ['build', '--sign-key', huge, '--out', join(dir, 'p'), '--bootstrap-out', join(dir, 'b'), '--json'],
      ['ERR_INPUT_TOO_LARGE'],
    ],
    [
      'prompt compile --spec',
      ['prompt', 'compile', '--spec', huge, '--json'],
      ['ERR_PROMPT_SPEC_INVALID', 'ERR_INPUT_TOO_LARGE'],
    ],
    ['route --compiled', ['route', '--root', root, '--compiled', huge, '--dev', '--json'], ['ERR_INPUT_TOO_LARGE']],
    [
      'ledger import --from',
      ['ledger', 'import', '--ledger', join(dir, 'i.sqlite'), '--from', huge, '--json'],
      ['ERR_INPUT_TOO_LARGE', 'ERR_LEDGER_IMPORT_INVALID'],
    ],
    [
      'bootstrap --trust',
      ['bootstrap', buildOnce().bootstrap, '--root', join(dir, 'new'), '--dev', '--trust', huge, '--json'],
      ['ERR_INPUT_TOO_LARGE'],
    ],
  ];
  const configs = ['router.json', 'budget.json', 'dispatch.json'];
  for (const [label, args, codes] of cases) {
    const outcome = tally.record(`5 GiB input: ${label}`, run(args, dir));
    assert.ok(codes.includes(outcome), `${label}: ${outcome}`);
  }
  for (const name of configs) {
    const copy = copyRoot(join(dir, `root-${name}`));
    assert.equal(spawnSync('truncate', ['-s', '5G', configPath(copy, name)]).status, 0);
    const args =
      name === 'dispatch.json'
        ? ['dispatch', 'status', '--root', copy, '--run', 'R', '--json']
        : name === 'budget.json'
          ? ['budget', 'status', '--root', copy, '--json']
          : ['route', '--root', copy, '--prompt', 'x', '--dev', '--json'];
    const outcome = tally.record(`5 GiB config: ${name}`, run(args, dir));
    assert.ok(['ERR_INPUT_TOO_LARGE', 'ERR_DISPATCH_RUN_NOT_FOUND'].includes(outcome), `${name}: ${outcome}`);
  }
  assert.equal(existsSync(join(dir, 'i.sqlite')), false, 'a refused import created no ledger');
  assert.equal(existsSync(join(dir, 'new')), false, 'a refused bootstrap created no root');
});
