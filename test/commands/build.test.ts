import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { readBootstrapArchive, readPackageArchive } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';
import {
  checkSignature,
  generateSigningKeyPair,
  readTrustStore,
  trustKey,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/index.js';

function cplane(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [join(REPO, 'bin', 'cplane.js'), ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

test('cplane build --json signs every package with the key from CPLANE_SIGNING_KEY; a root trusting it finds them valid', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-build-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const keys = generateSigningKeyPair();
  const keyFile = join(dir, 'cplane-signing.key');
  (await import('node:fs')).writeFileSync(keyFile, keys.private_key_pem, { mode: 0o600 });
  const run = cplane(['build', '--json', '--out', join(dir, 'packages'), '--bootstrap-out', join(dir, 'bootstrap')], {
    CPLANE_SIGNING_KEY: keyFile,
  });
  assert.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout) as {
    packages: Array<{ package_id: string; file: string; signed_by: string }>;
    bootstrap: { file: string; install_order: string[] };
  };
  assert.ok(result.packages.length >= 4);
  const root = join(dir, 'root');
  trustKey(root, keys.public_key_pem);
  for (const p of result.packages) {
    assert.equal(p.signed_by, keys.key_id);
    const archive = await readPackageArchive(p.file);
    assert.deepEqual(
      checkSignature(archive, readTrustStore(root)),
      { status: 'valid', key_id: keys.key_id },
      p.package_id,
    );
  }
  assert.deepEqual(
    (await readBootstrapArchive(result.bootstrap.file)).plan.install_order,
    result.bootstrap.install_order,
  );
  const index = JSON.parse(readFileSync(join(dir, 'packages', 'index.json'), 'utf8')) as {
    packages: Array<{ signed_by: string }>;
  };
  assert.ok(index.packages.every((p) => p.signed_by === keys.key_id));
});

test('cplane build refuses an unreadable or non-ed25519 signing key before writing anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-build-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const missing = cplane([
    'build',
    '--out',
    join(dir, 'p'),
    '--bootstrap-out',
    join(dir, 'b'),
    '--sign-key',
    join(dir, 'absent.key'),
  ]);
  assert.equal(missing.status, 3);
  assert.match(missing.stderr, /ERR_KEY_INVALID/);
  assert.throws(() => readFileSync(join(dir, 'p', 'index.json')));
  (await import('node:fs')).writeFileSync(join(dir, 'public.pem'), generateSigningKeyPair().public_key_pem);
  const wrong = cplane([
    'build',
    '--json',
    '--out',
    join(dir, 'p'),
    '--bootstrap-out',
    join(dir, 'b'),
    '--sign-key',
    join(dir, 'public.pem'),
  ]);
  assert.equal(wrong.status, 3);
  assert.equal((JSON.parse(wrong.stdout) as { error: { code: string } }).error.code, 'ERR_KEY_INVALID');
  assert.throws(() => readdirSync(join(dir, 'p')));
});
