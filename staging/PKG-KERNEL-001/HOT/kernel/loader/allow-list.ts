import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { checkSignature, type PackageSignature, type TrustedKey } from '../signing/signing.js';
import type { Manifest } from '../manifest/manifest.js';
import { LAYOUT } from '../root/layout.js';

/**
 * Which bytes may run in a root: every file an installed package owns, with the digest its receipt records
 * AND its installed manifest pins, for packages whose signature verifies against the root's trust store (or
 * that were installed with a recorded dev waiver, no signature.json; G5 reports those). Read as plain JSON
 * with Node built-ins only: better-sqlite3 and ajv are themselves code this list has to vouch for.
 */
export interface AllowList {
  /** Root-relative path (`HOT/…`, forward slashes) → the digests (`sha256:<hex>`) it may have. */
  files: Record<string, string[]>;
  /** Root-relative path → why its package is not trusted (its files never load). */
  untrusted: Record<string, string>;
}

export type RootMode = 'dev' | 'installed';

/**
 * A development root is the repository's own build output, `<repo>/build/root` next to `<repo>/build/tsc`,
 * with no root state at all. Everything else is governed: deleting receipts or the registry from an
 * installed root leaves an empty allow-list (nothing loads), never an unverified root.
 */
export function rootMode(root: string): RootMode {
  const hot = join(root, LAYOUT.hot);
  const build = dirname(root);
  const stateless = !['installed', 'registries', 'ledger', 'node_modules'].some((dir) => existsSync(join(hot, dir)));
  const isBuildOutput = basename(root) === 'root' && basename(build) === 'build' && isDir(join(build, 'tsc'));
  return stateless && isBuildOutput ? 'dev' : 'installed';
}

function isDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function trustedKeys(root: string): TrustedKey[] {
  const store = readJson(join(root, LAYOUT.trust));
  const keys = isRecord(store) && Array.isArray(store.keys) ? store.keys : [];
  return keys.filter(
    (k): k is TrustedKey => isRecord(k) && typeof k.key_id === 'string' && typeof k.public_key_pem === 'string',
  );
}

function digestsOf(entries: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(entries)) return out;
  for (const entry of entries) {
    if (isRecord(entry) && typeof entry.path === 'string' && typeof entry.sha256 === 'string')
      out.set(entry.path, entry.sha256);
  }
  return out;
}

/**
 * The installed manifest is written in canonical key order, so one native JSON.stringify usually is the signed
 * text; a signature that verifies over it covers exactly this parsed manifest. Only when it does not is the
 * full RFC 8785 serialisation tried (a start-up cost on every command otherwise).
 */
function signatureStatus(
  manifest: Record<string, unknown>,
  signature: Record<string, unknown>,
  keys: TrustedKey[],
): string {
  const archive = { manifest: manifest as unknown as Manifest, signature: signature as unknown as PackageSignature };
  const fast = checkSignature({ ...archive, canonical: JSON.stringify(manifest) }, keys).status;
  return fast === 'invalid' ? checkSignature(archive, keys).status : fast;
}

export function readAllowList(root: string): AllowList {
  const files: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  const untrusted: Record<string, string> = Object.create(null) as Record<string, string>;
  const installed = join(root, LAYOUT.installed);
  let packages: string[] = [];
  try {
    packages = readdirSync(installed).sort();
  } catch {
    /* no receipts: nothing is owned */
  }
  let keys: TrustedKey[] | undefined;
  const admit = (id: string, receipt: unknown, manifest: unknown, signature: (() => unknown) | null): void => {
    const recorded = digestsOf(isRecord(receipt) ? receipt.files : undefined);
    const pinned = digestsOf(isRecord(manifest) ? manifest.assets : undefined);
    // Every path either document names stays recorded, so a module the two disagree on (a receipt entry edited or
    // dropped) is refused when something imports it, rather than loading as a file no package knows.
    const refuse = (why: string): void => {
      for (const path of [...recorded.keys(), ...pinned.keys()]) if (files[path] === undefined) untrusted[path] ??= why;
    };
    if (!isRecord(receipt) || !isRecord(manifest) || receipt.package_id !== id || manifest.package_id !== id) {
      refuse(`${id}'s receipt or installed manifest is missing or not its own`);
      return;
    }
    let distrust: string | null = null;
    if (signature !== null) {
      const signed = signature();
      keys ??= trustedKeys(root);
      const status = isRecord(signed) ? signatureStatus(manifest, signed, keys) : 'invalid';
      if (status !== 'valid')
        distrust = `${id}'s signature is ${status === 'untrusted_key' ? 'by a key the trust store does not hold' : 'not valid for its installed manifest'}`;
    }
    for (const [path, digest] of recorded) {
      if (distrust !== null) {
        untrusted[path] = distrust;
        continue;
      }
      if (pinned.get(path) !== digest) continue;
      (files[path] ??= []).push(digest);
    }
    refuse(distrust ?? `${id}'s receipt and installed manifest disagree on it`);
  };
  for (const id of packages) {
    const dir = join(installed, id);
    const hasSignature = existsSync(join(dir, 'signature.json'));
    admit(
      id,
      readJson(join(dir, 'receipt.json')),
      readJson(join(dir, 'manifest.json')),
      hasSignature ? () => readJson(join(dir, 'signature.json')) : null,
    );
  }
  admitPendingCommit(root, admit);
  return { files, untrusted };
}

/**
 * A commit the installer journaled but did not finish (a crash, a full disk) leaves some of its package's files
 * with their new bytes until the next command that opens the root rolls it forward. Those bytes may load under the
 * same rule as installed ones: the journal's receipt and manifest agree on them and its signature verifies (or the
 * install carries a dev waiver). Otherwise the commands that would repair the root could not start.
 */
function admitPendingCommit(
  root: string,
  admit: (id: string, receipt: unknown, manifest: unknown, signature: (() => unknown) | null) => void,
): void {
  const journal = readJson(join(root, LAYOUT.journal));
  if (!isRecord(journal) || typeof journal.package_id !== 'string' || !isRecord(journal.installed_meta)) return;
  const meta = journal.installed_meta;
  const parse = (text: unknown): unknown => {
    try {
      return typeof text === 'string' ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      return undefined;
    }
  };
  const signature = meta['signature.json'];
  admit(
    journal.package_id,
    journal.receipt,
    parse(meta['manifest.json']),
    signature === undefined ? null : () => parse(signature),
  );
}
