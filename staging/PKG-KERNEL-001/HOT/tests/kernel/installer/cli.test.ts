import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../../cli/main.js';
import { runInstallEntry } from '../../../kernel/installer/entry.js';
import { readReceipt } from '../../../kernel/registry/receipt.js';
import { readTrustStore } from '../../../kernel/signing/index.js';
import { rootPaths } from '../../../kernel/root/layout.js';
import { buildArchive, keyPair, ledgerEntries, newRoot, tempDir } from './helpers.js';

async function cli(argv: string[], cwd?: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    ...(cwd ? { cwd } : {}),
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}

test('install, list, upgrade, verify, uninstall through the CLI, human and --json', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const v1 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '1.0.0', files: { 'HOT/alpha/a.js': 'a1' } });
  const v2 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '1.1.0', files: { 'HOT/alpha/a.js': 'a2' } });

  const installed = await cli(['install', v1, '--root', root, '--dev', '--json']);
  assert.equal(installed.code, 0, installed.err);
  const json = JSON.parse(installed.out) as Record<string, unknown>;
  assert.equal(json.action, 'installed');
  assert.deepEqual(json.ledger_anchor, readReceipt(root, 'PKG-ALPHA-001')!.ledger_anchor);

  const again = await cli(['install', v1, '--root', root, '--dev']);
  assert.match(again.out, /PKG-ALPHA-001 1\.0\.0 is already installed; nothing to do/);

  const notAnUpgrade = await cli(['install', v2, '--root', root, '--dev']);
  assert.equal(notAnUpgrade.code, 3);
  assert.match(notAnUpgrade.err, /ERR_ALREADY_INSTALLED/);

  const upgraded = await cli(['upgrade', v2, '--root', root, '--dev']);
  assert.equal(upgraded.code, 0, upgraded.err);
  assert.match(upgraded.out, /upgraded PKG-ALPHA-001 1\.0\.0 -> 1\.1\.0/);

  const list = await cli(['list', '--root', root, '--json']);
  const packages = (
    JSON.parse(list.out) as { packages: { package_id: string; version: string; dev_waiver: boolean }[] }
  ).packages;
  assert.deepEqual(
    packages.map((p) => [p.package_id, p.version, p.dev_waiver]),
    [['PKG-ALPHA-001', '1.1.0', true]],
  );
  assert.match((await cli(['list', '--root', root])).out, /PKG-ALPHA-001\s+1\.1\.0\s+1\s+1\s+unsigned \(dev waiver\)/);

  assert.equal((await cli(['verify', '--root', root])).code, 0);
  writeFileSync(join(root, 'HOT/alpha/a.js'), 'tampered');
  const bad = await cli(['verify', '--root', root, '--json']);
  assert.equal(bad.code, 1);
  assert.deepEqual(
    (JSON.parse(bad.out) as { findings: { path: string; problem: string }[] }).findings.map((f) => [f.path, f.problem]),
    [['HOT/alpha/a.js', 'size']],
  );
  assert.match((await cli(['verify', '--root', root])).out, /SIZE\s+"HOT\/alpha\/a\.js" .*FAILED: 1 problem/s);

  const removed = await cli(['uninstall', 'PKG-ALPHA-001', '--root', root]);
  assert.equal(removed.code, 0, removed.err);
  assert.match((await cli(['list', '--root', root])).out, /no packages installed/);
  assert.equal((await cli(['uninstall', 'PKG-ALPHA-001', '--root', root])).code, 3);
  assert.deepEqual(
    ledgerEntries(root).map((e) => e.event_type),
    ['ROOT_CREATED', 'INSTALLED', 'INSTALL_FAILED', 'PACKAGE_UPGRADED', 'PACKAGE_UNINSTALLED'],
  );
});

test('the root entry runs genesis in a root holding only what the caller allows, trusts keys, installs in order', async (t) => {
  const dir = tempDir(t);
  const keys = keyPair();
  writeFileSync(join(dir, 'pub.pem'), keys.publicPem);
  const root = join(dir, 'root');
  const hot = join(dir, 'genesis', 'HOT');
  mkdirSync(root);
  writeFileSync(join(root, '.mark'), 'genesis running');
  const a = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    layer: 0,
    key: keys.privatePem,
    files: { 'HOT/alpha/a.js': 'a' },
  });
  const argv = ['--genesis', '--root', root, '--trust', join(dir, 'pub.pem'), '--bootstrap-version', '9.9.9', a];
  const refused: string[] = [];
  assert.equal(
    await runInstallEntry({ argv, hot, defaultRoot: root, out: (l) => refused.push(l), err: (l) => refused.push(l) }),
    3,
  );
  assert.match(refused.join('\n'), /ERR_ROOT_NOT_EMPTY/);
  assert.deepEqual(readdirSync(root), ['.mark'], 'a refused genesis writes nothing');
  const lines: string[] = [];
  const code = await runInstallEntry({
    argv,
    hot,
    defaultRoot: root,
    genesisAllow: ['.mark'],
    out: (l) => lines.push(l),
    err: (l) => lines.push(l),
  });
  assert.equal(code, 0, lines.join('\n'));
  assert.match(lines[0]!, /^\[1\/1\] installed PKG-ALPHA-001 1\.0\.0/);
  assert.deepEqual(
    readTrustStore(root).map((k) => k.role ?? 'package'),
    ['package', 'checkpoint'],
    'the given key, then the root key for checkpoints',
  );
  assert.equal(readReceipt(root, 'PKG-ALPHA-001')!.signature.status, 'valid');
  const first = ledgerEntries(root)[0]!;
  assert.equal(first.event_type, 'ROOT_CREATED');
  const ledgerDir = rootPaths(root).ledgerDir;
  assert.equal(statSync(ledgerDir).mode & 0o777, 0o700, 'the ledger directory is the owner’s alone');
  assert.equal(statSync(rootPaths(root).ledgerFile).mode & 0o777, 0o600);
  assert.equal(first.metadata.bootstrap_version, '9.9.9');

  const usage: string[] = [];
  assert.equal(
    await runInstallEntry({
      argv: ['--bogus'],
      hot,
      defaultRoot: root,
      out: (l) => usage.push(l),
      err: (l) => usage.push(l),
    }),
    2,
  );
  assert.match(usage.join('\n'), /ERR_USAGE/);
});
