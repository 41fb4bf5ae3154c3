// The signed root the gates tests attack: every package of the root these tests run in, with its publisher's
// signature, installed through the kernel's installer into a new root that trusts the same publisher keys — the
// real install path, nothing waived. An installed root gives its own packages back (installed manifest,
// signature.json and owned files packed again). The repository's dev root (build/root) has no installed packages
// to give: there the archives come from the repository's build, the one that laid out that dev root.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packArchive, type PackFile } from '#kernel/archive/index.js';
import { createRoot, installPackages, type InstallRequest } from '#kernel/installer/index.js';
import { rootMode } from '#kernel/loader/allow-list.js';
import { installOrder, type Manifest } from '#kernel/manifest/index.js';
import { receiptDir } from '#kernel/root/layout.js';
import { generateSigningKeyPair, readTrustStore } from '#kernel/signing/index.js';

/** The root these tests are installed in (this file is HOT/tests/gates/signed-root.js). */
const CODE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** `node ARGS…` from a directory that is neither a root nor the repository. */
export function run(args: string[]): Run {
  const r = spawnSync(process.execPath, args, { cwd: tmpdir(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

export function must(args: string[]): string {
  const r = run(args);
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** A root's own CLI entry: `node R/HOT/scripts/cplane.js <command>` runs the code installed in R. */
export const cplaneOf = (root: string): string => join(root, 'HOT', 'scripts', 'cplane.js');

export interface GateJson {
  gates: Array<{ id: string; status: string; findings: Array<{ code: string; message: string }> }>;
  failed: number;
}

/** The root checks itself: its own gate_check.js, every gate, as JSON. */
export function gateCheck(root: string, extra: string[] = []): { status: number; json: GateJson } {
  const r = run([join(root, 'HOT', 'scripts', 'gate_check.js'), '--root', root, '--all', '--json', ...extra]);
  return { status: r.status, json: JSON.parse(r.stdout) as GateJson };
}

/** Numbered copies of `pristine` inside `work`, one per attack. */
export function rootCopies(work: string, pristine: string): () => string {
  let caseNo = 0;
  return () => {
    caseNo += 1;
    const root = join(work, `case-${caseNo}`);
    cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
    return root;
  };
}

interface Built {
  /** Archives in install order. */
  archives: Array<{ path: string; signed: boolean }>;
  /** Public keys (PEM) the new root trusts for packages. */
  trustKeys: string[];
}

/**
 * Every package installed in `from`, packed again from its installed manifest, its signature.json (unless
 * `unsigned` names it, or it was installed without one) and the files the manifest pins, read from the root.
 */
export async function repackInstalled(
  from: string,
  out: string,
  options: { only?: readonly string[]; unsigned?: readonly string[] } = {},
): Promise<Built['archives']> {
  mkdirSync(out, { recursive: true });
  const ids = readdirSync(join(from, 'HOT', 'installed')).filter((id) => options.only?.includes(id) ?? true);
  const manifests = ids.map(
    (id) => JSON.parse(readFileSync(join(receiptDir(from, id), 'manifest.json'), 'utf8')) as Manifest,
  );
  const archives: Built['archives'] = [];
  for (const manifest of installOrder(manifests)) {
    const dir = receiptDir(from, manifest.package_id);
    const signed = readdirSync(dir).includes('signature.json') && !options.unsigned?.includes(manifest.package_id);
    const files: PackFile[] = [{ path: 'manifest.json', data: readFileSync(join(dir, 'manifest.json')) }];
    if (signed) files.push({ path: 'signature.json', data: readFileSync(join(dir, 'signature.json')) });
    for (const asset of manifest.assets) files.push({ path: asset.path, data: readFileSync(join(from, asset.path)) });
    const path = join(out, `${manifest.package_id}-${manifest.version}.tar.gz`);
    await packArchive(files, path);
    archives.push({ path, signed });
  }
  return archives;
}

/** The packages of an installed root, with the publisher keys its trust store holds. */
async function fromInstalledRoot(work: string): Promise<Built> {
  const trustKeys = readTrustStore(CODE_ROOT)
    .filter((key) => key.role !== 'checkpoint')
    .map((key) => key.public_key_pem);
  return { archives: await repackInstalled(CODE_ROOT, join(work, 'packages')), trustKeys };
}

/** The dev root's packages: the repository's build of them, signed with a key made for this run. */
function fromRepositoryBuild(work: string): Built {
  const repo = resolve(CODE_ROOT, '..', '..');
  const key = generateSigningKeyPair();
  const keyFile = join(work, 'cplane-signing.key');
  writeFileSync(keyFile, key.private_key_pem, { mode: 0o600 });
  const out = ['--out', join(work, 'packages'), '--bootstrap-out', join(work, 'bootstrap')];
  const built = JSON.parse(
    must([join(repo, 'bin', 'cplane.js'), 'build', '--json', '--sign-key', keyFile, ...out]),
  ) as {
    packages: Array<{ package_id: string; file: string }>;
    bootstrap: { install_order: string[] };
  };
  const fileOf = new Map(built.packages.map((p) => [p.package_id, resolve(repo, p.file)]));
  return {
    archives: built.bootstrap.install_order.map((id) => ({ path: fileOf.get(id) as string, signed: true })),
    trustKeys: [key.public_key_pem],
  };
}

/** Make `root`: a new root trusting the publisher keys, with every package of the code root installed. */
export async function makeSignedRoot(work: string, root: string): Promise<void> {
  const built = rootMode(CODE_ROOT) === 'dev' ? fromRepositoryBuild(work) : await fromInstalledRoot(work);
  createRoot(root, { trustKeys: built.trustKeys });
  const requests: InstallRequest[] = built.archives.map((a) => ({
    archivePath: a.path,
    mode: 'install',
    dev: !a.signed,
  }));
  await installPackages(root, requests);
}
