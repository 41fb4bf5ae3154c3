import { createHash, type Hash } from 'node:crypto';
import type { CpError } from '../errors.js';
import { parseManifest, type Manifest, type ManifestAsset } from '../manifest/manifest.js';
import { foldedPath, memberName, unsafePathReason } from '../manifest/paths.js';
import type { PackageSignature } from '../signing/signing.js';
import { parseSignature } from '../signing/signature-file.js';
import { archiveError } from './errors.js';
import type { ArchiveLimits } from './limits.js';

export const MANIFEST_MEMBER = 'manifest.json';
export const SIGNATURE_MEMBER = 'signature.json';
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const LINK_TYPES = new Set(['SymbolicLink', 'Link']);
const SPECIAL_TYPES = new Set(['CharacterDevice', 'BlockDevice', 'FIFO']);

/** Receives one member's body as it streams. */
export interface MemberSink {
  data(chunk: Buffer): void;
  end(): void;
}

interface Body {
  name: string;
  size: number;
  bytes: Buffer;
  sha256: string;
}

export interface CollectedArchive {
  manifest: Manifest;
  manifestBytes: Buffer;
  warnings: string[];
  signature: PackageSignature | null;
  files: Map<string, Buffer>;
}

const NOOP_SINK: MemberSink = { data() {}, end() {} };

/**
 * The member policy of a package archive. Every header is judged before its body is buffered;
 * bodies are hashed as they arrive and checked against the manifest as soon as it is known.
 */
export class MemberPolicy {
  private members = 0;
  private declaredBytes = 0;
  private readonly names = new Map<string, string>();
  private readonly directories: string[] = [];
  private readonly bodies = new Map<string, Body>();
  private open: string | null = null;
  private parsed: { manifest: Manifest; warnings: string[]; assets: Map<string, ManifestAsset> } | null = null;

  constructor(private readonly archive: string, private readonly limits: ArchiveLimits, private readonly strict: boolean) {}

  private fail(code: string, message: string, hint: string, details: Record<string, unknown> = {}): CpError {
    return archiveError(code, this.archive, message, hint, details);
  }

  /** Judge one header. Returns where its body goes, or throws the refusal. */
  begin(type: string, rawPath: string, size: number): MemberSink {
    this.members += 1;
    if (this.members > this.limits.maxMembers) {
      throw this.fail('ERR_ARCHIVE_TOO_MANY_MEMBERS', `more than ${this.limits.maxMembers} members`, 'the archive is not a cplane package (or raise the member limit)', { max_members: this.limits.maxMembers });
    }
    const isDirectory = type === 'Directory';
    if (LINK_TYPES.has(type)) throw this.fail('ERR_ARCHIVE_LINK', `member ${JSON.stringify(rawPath)} is a ${type === 'Link' ? 'hard link' : 'symbolic link'}`, 'packages hold regular files only; links could redirect writes outside the root', { member: rawPath, type });
    if (SPECIAL_TYPES.has(type)) throw this.fail('ERR_ARCHIVE_SPECIAL_FILE', `member ${JSON.stringify(rawPath)} is a ${type}`, 'packages hold regular files only', { member: rawPath, type });
    if (!isDirectory && !FILE_TYPES.has(type)) throw this.fail('ERR_ARCHIVE_SPECIAL_FILE', `member ${JSON.stringify(rawPath)} has unsupported type ${type}`, 'packages hold regular files only', { member: rawPath, type });
    const name = memberName(rawPath, isDirectory);
    if (isDirectory && name === '') return NOOP_SINK;
    const unsafe = unsafePathReason(name);
    if (unsafe) throw this.fail('ERR_ARCHIVE_UNSAFE_PATH', `member ${JSON.stringify(rawPath)}: ${unsafe}`, 'member paths must be relative and stay inside the root', { member: rawPath, reason: unsafe });
    this.claimName(name);
    if (isDirectory) {
      this.directories.push(name);
      return NOOP_SINK;
    }
    this.checkSize(name, size);
    this.open = name;
    return this.sink(name, size);
  }

  private claimName(name: string): void {
    const key = foldedPath(name);
    const earlier = this.names.get(key);
    if (earlier !== undefined) {
      throw this.fail('ERR_ARCHIVE_DUPLICATE_MEMBER', `member ${JSON.stringify(name)} appears twice${earlier === name ? '' : ` (as ${JSON.stringify(earlier)}, differing only in case)`}`, 'a package archive holds each path once', { member: name });
    }
    this.names.set(key, name);
  }

  private checkSize(name: string, size: number): void {
    if (size > this.limits.maxMemberBytes) {
      throw this.fail('ERR_ARCHIVE_TOO_LARGE', `member ${JSON.stringify(name)} declares ${size} bytes (limit ${this.limits.maxMemberBytes})`, 'the archive is not a cplane package (or raise the size limits)', { member: name, size, max_member_bytes: this.limits.maxMemberBytes });
    }
    this.declaredBytes += size;
    if (this.declaredBytes > this.limits.maxTotalBytes) {
      throw this.fail('ERR_ARCHIVE_TOO_LARGE', `members declare more than ${this.limits.maxTotalBytes} bytes`, 'the archive is not a cplane package (or raise the size limits)', { max_total_bytes: this.limits.maxTotalBytes });
    }
    if (name === MANIFEST_MEMBER || name === SIGNATURE_MEMBER || this.parsed === null) return;
    const asset = this.declared(name);
    if (asset.size !== size) throw this.sizeMismatch(name, asset.size, size);
  }

  private declared(name: string): ManifestAsset {
    const asset = this.parsed?.assets.get(name);
    if (!asset) throw this.fail('ERR_ARCHIVE_UNDECLARED_MEMBER', `member ${JSON.stringify(name)} is not declared in the manifest's assets`, 'every file in a package must be listed in manifest.json assets', { member: name });
    return asset;
  }

  private sizeMismatch(name: string, expected: number, actual: number): CpError {
    return this.fail('ERR_ARCHIVE_SIZE_MISMATCH', `member ${JSON.stringify(name)} is ${actual} bytes, the manifest says ${expected}`, 'rebuild the package; the archive does not match its manifest', { member: name, expected, actual });
  }

  private sink(name: string, size: number): MemberSink {
    const hash: Hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let received = 0;
    return {
      data: (chunk) => {
        received += chunk.length;
        hash.update(chunk);
        chunks.push(chunk);
      },
      end: () => {
        if (received !== size) throw this.fail('ERR_ARCHIVE_CORRUPT', `member ${JSON.stringify(name)} is truncated (${received} of ${size} bytes)`, 'the archive is damaged; download or build it again', { member: name });
        this.open = null;
        this.complete({ name, size, bytes: Buffer.concat(chunks, size), sha256: `sha256:${hash.digest('hex')}` });
      },
    };
  }

  private complete(body: Body): void {
    this.bodies.set(body.name, body);
    if (body.name === MANIFEST_MEMBER) {
      const { manifest, warnings } = parseManifest(body.bytes, { strict: this.strict });
      this.parsed = { manifest, warnings, assets: new Map(manifest.assets.map((a) => [a.path, a])) };
      for (const earlier of this.bodies.values()) this.verifyAsset(earlier);
    } else {
      this.verifyAsset(body);
    }
  }

  private verifyAsset(body: Body): void {
    if (this.parsed === null || body.name === MANIFEST_MEMBER || body.name === SIGNATURE_MEMBER) return;
    const asset = this.declared(body.name);
    if (asset.size !== body.size) throw this.sizeMismatch(body.name, asset.size, body.size);
    if (asset.sha256 !== body.sha256) {
      throw this.fail('ERR_ARCHIVE_DIGEST_MISMATCH', `member ${JSON.stringify(body.name)} hashes to ${body.sha256}, the manifest says ${asset.sha256}`, 'the archive was altered after it was built; do not install it', { member: body.name, expected: asset.sha256, actual: body.sha256 });
    }
  }

  /** After the last entry: the manifest, every declared asset, and nothing half-read. */
  finish(): CollectedArchive {
    if (this.open !== null) throw this.fail('ERR_ARCHIVE_CORRUPT', `member ${JSON.stringify(this.open)} is truncated`, 'the archive is damaged; download or build it again', { member: this.open });
    if (this.parsed === null) throw this.fail('ERR_ARCHIVE_NO_MANIFEST', 'no manifest.json at the archive root', 'a package archive carries manifest.json (or ./manifest.json) at its top level');
    const { manifest, warnings, assets } = this.parsed;
    for (const asset of manifest.assets) {
      if (!this.bodies.has(asset.path)) throw this.fail('ERR_ARCHIVE_MISSING_ASSET', `declared asset ${JSON.stringify(asset.path)} is not in the archive`, 'rebuild the package; its manifest lists a file the archive lacks', { member: asset.path });
    }
    const ancestors = new Set<string>();
    for (const path of assets.keys()) {
      for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) ancestors.add(path.slice(0, i));
    }
    for (const dir of this.directories) {
      if (!ancestors.has(dir)) {
        throw this.fail('ERR_ARCHIVE_UNDECLARED_MEMBER', `directory ${JSON.stringify(dir)} holds no declared asset`, 'every member must be a declared asset or a directory on the way to one', { member: dir });
      }
    }
    const files = new Map<string, Buffer>();
    for (const asset of manifest.assets) files.set(asset.path, (this.bodies.get(asset.path) as Body).bytes);
    const signatureBody = this.bodies.get(SIGNATURE_MEMBER);
    const signature = signatureBody ? parseSignature(signatureBody.bytes, this.archive) : null;
    return { manifest, manifestBytes: (this.bodies.get(MANIFEST_MEMBER) as Body).bytes, warnings, signature, files };
  }
}
