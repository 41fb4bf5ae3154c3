// Bad input from the command line gets a coded error (exit 3) with a hint, and writes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

test('commands on a path that is not a root, or with a file that is not what they need, refuse with a code and write nothing', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const junk = join(dir, 'junk.tar.gz');
  writeFileSync(junk, 'this is not an archive');
  const nowhere = join(dir, 'nowhere');
  const cases: Array<[string[], string]> = [
    [['bootstrap', junk, '--root', nowhere], 'ERR_ARCHIVE_CORRUPT'],
    [['route', '--root', nowhere, '--prompt', 'x', '--dev'], 'ERR_ROOT_NOT_A_ROOT'],
    [['smoke', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['status', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['gate-check', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['list', '--root', nowhere], 'ERR_ROOT_NOT_A_ROOT'],
    [['ledger', 'verify', '--ledger', junk], 'ERR_LEDGER_NOT_A_LEDGER'],
    [['prompt', 'compile', '--spec', junk], 'ERR_PROMPT_SPEC_INVALID'],
  ];
  for (const [args, code] of cases) {
    const run = spawnSync(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...args, '--json'], {
      cwd: dir,
      encoding: 'utf8',
    });
    assert.equal(run.status, 3, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
    const error = (JSON.parse(run.stdout) as { error: { code: string; hint: string } }).error;
    assert.equal(error.code, code, args.join(' '));
    assert.ok(error.hint.length > 0, `${args.join(' ')} has a hint`);
  }
  assert.equal(existsSync(nowhere), false, 'no command created the root it was pointed at');
});

const cli = (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) => {
  const base = { ...process.env };
  delete base.CPLANE_AUTH_SECRET;
  return spawnSync(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...base, ...env },
  });
};

test('an option that needs a value refuses a missing one, and numbers out of range are usage errors, not defaults', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const nowhere = join(dir, 'nowhere');
  const ledger = join(dir, 'ledger.sqlite');
  const route = ['route', '--root', nowhere, '--prompt', 'hi', '--dev'];
  const cases: string[][] = [
    ['route', '--root', nowhere, '--prompt', '--dev'],
    ['route', '--root', nowhere, '--dev', '--prompt'],
    ['route', '--root', nowhere, '--prompt', 'hi', '--provider'],
    [...route, '--max-tokens'],
    [...route, '--max-tokens', '0'],
    [...route, '--max-tokens', '-5'],
    [...route, '--max-tokens', '1.5'],
    [...route, '--max-tokens', 'abc'],
    [...route, '--max-tokens', 'NaN'],
    [...route, '--max-tokens', 'Infinity'],
    [...route, '--max-tokens', '1e12'],
    ['ledger', 'tail', '--ledger', ledger, '--limit', '0'],
    ['ledger', 'tail', '--ledger', ledger, '-n', '-1'],
    ['ledger', 'tail', '--ledger', ledger, '--limit', '1e12'],
    ['ledger', 'tail', '--ledger', ledger, '--limit', 'many'],
    ['ledger', 'query', '--ledger', ledger, '--limit', '100001'],
    [
      'ledger',
      'append',
      '--ledger',
      ledger,
      '--event-type',
      'X',
      '--submission-id',
      'S',
      '--decision',
      'D',
      '--reason',
    ],
    ['budget', 'status', '--root', nowhere, '--limit', '0'],
    ['budget', 'status', '--root', nowhere, '--limit'],
    ['keys', 'generate', '--out'],
    ['prompt', 'compile', '--spec'],
    ['token', 'issue', '--agent'],
    ['bootstrap', '--root'],
  ];
  for (const args of cases) {
    const run = cli([...args, '--json'], dir, { CPLANE_AUTH_SECRET: 'a-test-secret-0123456789' });
    assert.equal(run.status, 2, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
    const error = (JSON.parse(run.stdout) as { error: { code: string; hint: string } }).error;
    assert.equal(error.code, 'ERR_USAGE', args.join(' '));
    assert.ok(error.hint.length > 0);
  }
  assert.equal(existsSync(nowhere), false, 'no refused command created the root');
  assert.equal(existsSync(ledger), false, 'no refused command created the ledger');
  assert.equal(existsSync(join(dir, 'cplane-signing.key')), false);
  // The positive case: a valid --limit and --max-tokens reach the command (which then names the missing root).
  assert.equal(
    JSON.parse(cli([...route, '--max-tokens', '64', '--json'], dir).stdout).error.code,
    'ERR_ROOT_NOT_A_ROOT',
  );
  assert.equal(
    JSON.parse(cli(['ledger', 'tail', '--ledger', ledger, '--limit', '5', '--json'], dir).stdout).error.code,
    'ERR_LEDGER_NOT_FOUND',
  );
});

test('token issue prints the token (and --json the token and claims); without a secret it fails with a code', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { CPLANE_AUTH_SECRET: 'a-test-secret-0123456789' };
  const plain = cli(['token', 'issue', '--agent', 'AGENT-1'], dir, env);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout.trim(), /^cpt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  const json = cli(
    ['token', 'issue', '--agent', 'AGENT-1', '--scope', 'route:PRC-1', '--ttl', '60', '--json'],
    dir,
    env,
  );
  assert.equal(json.status, 0, json.stderr);
  const issued = JSON.parse(json.stdout) as {
    token: string;
    claims: { sub: string; scopes: string[]; iat: number; exp: number };
  };
  assert.match(issued.token, /^cpt1\./);
  assert.equal(issued.claims.sub, 'AGENT-1');
  assert.deepEqual(issued.claims.scopes, ['route:PRC-1']);
  assert.equal(issued.claims.exp - issued.claims.iat, 60);
  const payload = JSON.parse(Buffer.from(issued.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    sub: string;
  };
  assert.equal(payload.sub, 'AGENT-1', 'the printed token carries the claims');

  const noSecret = cli(['token', 'issue', '--agent', 'AGENT-1', '--json'], dir);
  assert.equal(noSecret.status, 3);
  assert.equal((JSON.parse(noSecret.stdout) as { error: { code: string } }).error.code, 'ERR_AUTH_NO_SECRET');
  const human = cli(['token', 'issue', '--agent', 'AGENT-1'], dir);
  assert.equal(human.status, 3);
  assert.match(human.stderr, /ERR_AUTH_NO_SECRET/);
  assert.equal(human.stdout, '', 'no token-looking output without a secret');
  for (const bad of [
    ['--ttl', '0'],
    ['--ttl', '-1'],
    ['--ttl', '1e12'],
    ['--ttl', '2.5'],
    ['--scope', 'admin'],
  ]) {
    const run = cli(['token', 'issue', '--agent', 'AGENT-1', ...bad, '--json'], dir, env);
    assert.equal(run.status, 2, `${bad.join(' ')}: ${run.stdout}`);
  }
});

test('an error is JSON exactly when the output would be: --json read as yargs reads it, not as a string in argv', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const nowhere = join(dir, 'nowhere');
  for (const spelling of [['--json=true'], ['--json', 'true'], ['--no-json', '--json']]) {
    const run = cli(['status', '--root', nowhere, ...spelling], dir);
    assert.equal(run.status, 3, spelling.join(' '));
    const error = (JSON.parse(run.stdout) as { error: { code: string } }).error;
    assert.equal(error.code, 'ERR_ROOT_NOT_A_ROOT', spelling.join(' '));
    assert.equal(run.stderr, '', `${spelling.join(' ')}: the error is on stdout only`);
  }
  for (const spelling of [['--json', '--no-json'], ['--json=false']]) {
    const run = cli(['status', '--root', nowhere, ...spelling], dir);
    assert.equal(run.status, 3, spelling.join(' '));
    assert.equal(run.stdout, '', spelling.join(' '));
    assert.match(run.stderr, /^cplane: ERR_ROOT_NOT_A_ROOT: /, spelling.join(' '));
  }
  // After `--` it is an argument, not the option.
  const literal = cli(['status', '--root', nowhere, '--', '--json'], dir);
  assert.equal(literal.status, 3);
  assert.equal(literal.stdout, '');
  assert.match(literal.stderr, /^cplane: ERR_ROOT_NOT_A_ROOT: /);
});

test('a store URL whose socket directory is missing or a file is ERR_STORE_UNAVAILABLE (exit 3), not an internal error', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a directory');
  for (const host of [join(dir, 'missing'), file]) {
    for (const command of [
      ['ledger', 'tail'],
      ['ledger', 'head'],
    ]) {
      const run = cli([...command, '--store', `postgres://cplane@db/cplane?host=${host}`, '--json'], dir);
      assert.equal(run.status, 3, `${host}: ${run.stdout}${run.stderr}`);
      const error = (JSON.parse(run.stdout) as { error: { code: string; hint: string } }).error;
      assert.equal(error.code, 'ERR_STORE_UNAVAILABLE', host);
      assert.ok(error.hint.length > 0);
    }
  }
});

test('an output path that is a directory, a symlink, a FIFO or a device is refused, never replaced by a file', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ledger = join(dir, 'ledger.sqlite');
  const append = ['ledger', 'append', '--ledger', ledger, '--event-type', 'NOTE', '--submission-id', 'S-1'];
  assert.equal(cli([...append, '--decision', 'OK', '--reason', 'r'], dir).status, 0);
  const victim = join(dir, 'victim.txt');
  writeFileSync(victim, 'keep me');
  const targets: Array<[string, string]> = [
    [join(dir, 'a-dir'), 'directory'],
    [join(dir, 'a-link'), 'symlink'],
    [join(dir, 'a-fifo'), 'fifo'],
  ];
  mkdirSync(targets[0]![0]);
  symlinkSync(victim, targets[1]![0]);
  assert.equal(spawnSync('mkfifo', [targets[2]![0]]).status, 0, 'mkfifo');
  // A copy of /dev/null: as root, the rename replaced the device itself.
  if (spawnSync('mknod', [join(dir, 'a-device'), 'c', '1', '3']).status === 0)
    targets.push([join(dir, 'a-device'), 'device']);
  const kind = (path: string) => {
    const s = lstatSync(path);
    return s.isDirectory()
      ? 'directory'
      : s.isSymbolicLink()
        ? 'symlink'
        : s.isFIFO()
          ? 'fifo'
          : s.isCharacterDevice()
            ? 'device'
            : 'file';
  };
  for (const [path, was] of [...targets, [dir, 'directory'] as [string, string]]) {
    const target = path === dir ? '' : path;
    const run = cli(['ledger', 'export', '--ledger', ledger, '--out', target, '--json'], dir);
    assert.equal(run.status, 3, `${was}: ${run.stdout}${run.stderr}`);
    assert.equal((JSON.parse(run.stdout) as { error: { code: string } }).error.code, 'ERR_OUTPUT_NOT_A_FILE', was);
    assert.equal(kind(path), was, `the ${was} is still one`);
  }
  assert.equal(readFileSync(victim, 'utf8'), 'keep me');
  // A regular file is overwritten, as before.
  const regular = join(dir, 'export.jsonl');
  writeFileSync(regular, 'old');
  assert.equal(cli(['ledger', 'export', '--ledger', ledger, '--out', regular], dir).status, 0);
  assert.match(readFileSync(regular, 'utf8'), /"event_type":"NOTE"/);
});

test('keys generate --out that is not a directory is ERR_OUTPUT_DIR_MISSING; a link in place of a key file is a key that exists', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'a-file');
  writeFileSync(file, 'keep me');
  const fifo = join(dir, 'a-fifo');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  for (const out of [file, fifo, join(file, 'sub')]) {
    const run = cli(['keys', 'generate', '--out', out, '--json'], dir);
    assert.equal(run.status, 3, `${out}: ${run.stdout}${run.stderr}`);
    assert.equal((JSON.parse(run.stdout) as { error: { code: string } }).error.code, 'ERR_OUTPUT_DIR_MISSING', out);
  }
  assert.equal(readFileSync(file, 'utf8'), 'keep me');
  assert.ok(lstatSync(fifo).isFIFO());
  // A dangling link where the public key goes: writing the pair would have created its target.
  const keys = join(dir, 'keys');
  mkdirSync(keys);
  const planted = join(dir, 'planted.pub');
  symlinkSync(planted, join(keys, 'cplane-signing.pub'));
  const run = cli(['keys', 'generate', '--out', keys, '--json'], dir);
  assert.equal(run.status, 3, run.stdout + run.stderr);
  assert.equal((JSON.parse(run.stdout) as { error: { code: string } }).error.code, 'ERR_KEY_EXISTS');
  assert.equal(existsSync(planted), false, 'nothing was written through the link');
  assert.equal(existsSync(join(keys, 'cplane-signing.key')), false);
});

test('keys generate --force replaces the pair by rename: a world-readable old key file leaves a 0600 key, a link in its place is refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bad-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const keys = join(dir, 'keys');
  mkdirSync(keys);
  const privatePath = join(keys, 'cplane-signing.key');
  writeFileSync(privatePath, 'an old key', { mode: 0o644 });
  chmodSync(privatePath, 0o644);
  const oldInode = lstatSync(privatePath).ino;
  const replaced = cli(['keys', 'generate', '--out', keys, '--force', '--json'], dir);
  assert.equal(replaced.status, 0, replaced.stdout + replaced.stderr);
  const stat = lstatSync(privatePath);
  assert.equal(stat.mode & 0o777, 0o600);
  assert.notEqual(stat.ino, oldInode, 'a new file, never the old one written over');
  assert.match(readFileSync(privatePath, 'utf8'), /BEGIN PRIVATE KEY/);
  // A link planted where the private key goes, in a directory others can write to: --force must not follow it.
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'not a key');
  rmSync(privatePath);
  symlinkSync(victim, privatePath);
  const refused = cli(['keys', 'generate', '--out', keys, '--force', '--json'], dir);
  assert.equal(refused.status, 3, refused.stdout + refused.stderr);
  assert.equal((JSON.parse(refused.stdout) as { error: { code: string } }).error.code, 'ERR_OUTPUT_NOT_A_FILE');
  assert.equal(readFileSync(victim, 'utf8'), 'not a key', 'nothing was written through the link');
  assert.ok(lstatSync(privatePath).isSymbolicLink());
  assert.deepEqual(
    readdirSync(keys).filter((name) => name.endsWith('.tmp')),
    [],
    'no temp file left behind',
  );
});
