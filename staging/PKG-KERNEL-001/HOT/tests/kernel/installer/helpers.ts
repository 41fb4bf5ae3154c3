// Shared test helpers: temp roots, real archives built with the kernel's packer, root snapshots.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packArchive, type PackFile } from '../../../kernel/archive/pack.js';
import { canonicalJson, sha256Digest } from '../../../kernel/canonical.js';
import { createRoot, openRootSession, type RootSession } from '../../../kernel/installer/index.js';
import { Ledger, ledgerPathForRoot, type LedgerEntry } from '../../../kernel/ledger/index.js';
import type { Manifest, ManifestAsset } from '../../../kernel/manifest/manifest.js';
import { signManifest } from '../../../kernel/signing/index.js';

export interface TestContext {
  after: (fn: () => void) => void;
}

export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-inst-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function newRoot(dir: string, trustKeys: string[] = []): string {
  const root = join(dir, 'root');
  createRoot(root, { trustKeys });
  return root;
}

export async function session(t: TestContext, root: string): Promise<RootSession> {
  const s = await openRootSession(root);
  t.after(() => s.close());
  return s;
}

export interface PkgSpec {
  id: string;
  version?: string;
  layer?: 0 | 1 | 2 | 3;
  deps?: Record<string, string>;
  replaces?: string[];
  files: Record<string, string>;
  platform?: Manifest['platform'];
  /** Sign with this private key (PEM). */
  key?: string;
  /** Rewrite the manifest before packing (to build inconsistent archives on purpose). */
  tamper?: (manifest: Manifest) => void;
  /** Edit the manifest after signing it (the signature then covers something else). */
  signThenTamper?: (manifest: Manifest) => void;
}

export function manifestFor(spec: PkgSpec): Manifest {
  const assets: ManifestAsset[] = Object.entries(spec.files).map(([path, text]) => ({
    path,
    sha256: sha256Digest(Buffer.from(text)),
    size: Buffer.byteLength(text),
    classification: path.startsWith('HOT/scripts/') ? 'script' : 'kernel',
  }));
  return {
    package_id: spec.id,
    version: spec.version ?? '1.0.0',
    schema_version: '1.0',
    title: spec.id,
    description: `test package ${spec.id}`,
    layer: spec.layer ?? 1,
    plane_id: 'hot',
    dependencies: Object.entries(spec.deps ?? {}).map(([package_id, version]) => ({ package_id, version })),
    replaces: spec.replaces ?? [],
    ...(spec.platform ? { platform: spec.platform } : {}),
    assets,
  };
}

/** A real package archive, packed by the kernel's deterministic packer. */
export async function buildArchive(dir: string, spec: PkgSpec): Promise<string> {
  const manifest = manifestFor(spec);
  spec.tamper?.(manifest);
  const signature = spec.key ? signManifest(manifest, spec.key) : null;
  spec.signThenTamper?.(manifest);
  const files: PackFile[] = [{ path: 'manifest.json', data: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) }];
  if (signature) files.push({ path: 'signature.json', data: Buffer.from(JSON.stringify(signature)) });
  for (const [path, text] of Object.entries(spec.files)) files.push({ path, data: Buffer.from(text) });
  const out = join(
    dir,
    `${spec.id}-${manifest.version}-${createHash('sha256').update(canonicalJson(manifest)).digest('hex').slice(0, 6)}.tar.gz`,
  );
  await packArchive(files, out);
  return out;
}

export function keyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/**
 * Every file under the root with its digest, but the ledger (a refusal appends INSTALL_FAILED to it; tests
 * check that separately) and SQLite's `-shm` index, which an open connection rewrites when it merely reads.
 */
export function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const child = rel ? `${rel}/${name}` : name;
      if (child === 'HOT/ledger' || child.endsWith('.sqlite-shm')) continue;
      const stat = lstatSync(join(root, child));
      if (stat.isDirectory()) {
        out[`${child}/`] = 'dir';
        walk(child);
      } else if (stat.isSymbolicLink()) out[child] = 'symlink';
      else out[child] = sha256Digest(readFileSync(join(root, child)));
    }
  };
  walk('');
  return out;
}

export function ledgerEntries(root: string): LedgerEntry[] {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return ledger.query({ order: 'oldest' });
  } finally {
    ledger.close();
  }
}

export function codeOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}
