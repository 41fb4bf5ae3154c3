import { createHash, type Hash } from 'node:crypto';
import { sha256Digest } from '../canonical.js';
import { quote, show, type CpError, type ErrorCode } from '../errors.js';
import { foldedPath, memberName, unsafePathReason } from '../manifest/paths.js';
import { archiveError } from './errors.js';
import { checkIntegrity } from './integrity.js';
import type { ArchiveLimits } from './limits.js';

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const LINK_TYPES = new Set(['SymbolicLink', 'Link']);
const SPECIAL_TYPES = new Set(['CharacterDevice', 'BlockDevice', 'FIFO']);

/** Receives one member's body as it streams. */
export interface MemberSink {
  data(chunk: Buffer): void;
  end(): void;
}

/** A member as its catalog pins it: an asset by `sha256:<hex>`, an archive inside CP_BOOTSTRAP by its SRI. */
export type DeclaredMember = { sha256: string; size: number } | { integrity: string; size: number };

/**
 * What an archive's catalog member (manifest.json, bootstrap.json) declares, and which other members
 * may appear without a declaration (signature.json; README.md, install.js).
 */
export interface CatalogSpec<T> {
  member: string;
  parse(bytes: Buffer): { value: T; declared: Map<string, DeclaredMember> };
  allowUndeclared(name: string): boolean;
  missingHint: string;
}

interface Body {
  name: string;
  size: number;
  bytes: Buffer;
  /** Null when the catalog, already known, pins this member by SRI instead. */
  sha256: string | null;
}

export interface Collected<T> {
  value: T;
  catalogBytes: Buffer;
  /** Declared members, digest and size verified, in declaration order. */
  files: Map<string, Buffer>;
  /** Members allowed without a declaration. */
  extras: Map<string, Buffer>;
}

const NOOP_SINK: MemberSink = { data() {}, end() {} };

/**
 * The member policy of an archive. Every header is judged before its body is buffered; bodies are
 * hashed as they arrive and checked against the catalog as soon as it is known.
 */
export class MemberPolicy<T> {
  private members = 0;
  private declaredBytes = 0;
  private readonly names = new Map<string, string>();
  private readonly directories: string[] = [];
  private readonly bodies = new Map<string, Body>();
  private open: string | null = null;
  private catalog: { value: T; declared: Map<string, DeclaredMember> } | null = null;

  constructor(
    private readonly archive: string,
    private readonly limits: ArchiveLimits,
    private readonly spec: CatalogSpec<T>,
  ) {}

  private fail(code: ErrorCode, message: string, hint: string, details: Record<string, unknown> = {}): CpError {
    return archiveError(code, this.archive, message, hint, details);
  }

  /** Judge one header. Returns where its body goes, or throws the refusal. */
  begin(type: string, rawPath: string, size: number): MemberSink {
    this.members += 1;
    if (this.members > this.limits.maxMembers) {
      throw this.fail(
        'ERR_ARCHIVE_TOO_MANY_MEMBERS',
        `more than ${this.limits.maxMembers} members`,
        'the archive is not a cplane package (or raise the member limit)',
        { max_members: this.limits.maxMembers },
      );
    }
    const isDirectory = type === 'Directory';
    if (LINK_TYPES.has(type))
      throw this.fail(
        'ERR_ARCHIVE_LINK',
        `member ${quote(rawPath)} is a ${type === 'Link' ? 'hard link' : 'symbolic link'}`,
        'packages hold regular files only; links could redirect writes outside the root',
        { member: rawPath, type },
      );
    if (SPECIAL_TYPES.has(type))
      throw this.fail(
        'ERR_ARCHIVE_SPECIAL_FILE',
        `member ${quote(rawPath)} is a ${type}`,
        'packages hold regular files only',
        { member: rawPath, type },
      );
    if (!isDirectory && !FILE_TYPES.has(type))
      throw this.fail(
        'ERR_ARCHIVE_SPECIAL_FILE',
        `member ${quote(rawPath)} has unsupported type ${type}`,
        'packages hold regular files only',
        { member: rawPath, type },
      );
    const name = memberName(rawPath, isDirectory);
    if (isDirectory && name === '') return NOOP_SINK;
    const unsafe = unsafePathReason(name);
    if (unsafe)
      throw this.fail(
        'ERR_ARCHIVE_UNSAFE_PATH',
        `member ${quote(rawPath)}: ${unsafe}`,
        'member paths must be relative and stay inside the root',
        { member: rawPath, reason: unsafe },
      );
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
      throw this.fail(
        'ERR_ARCHIVE_DUPLICATE_MEMBER',
        `member ${quote(name)} appears twice${earlier === name ? '' : ` (as ${quote(earlier)}, differing only in case)`}`,
        'an archive holds each path once',
        { member: name },
      );
    }
    this.names.set(key, name);
  }

  private isFree(name: string): boolean {
    return name === this.spec.member || this.spec.allowUndeclared(name);
  }

  private checkSize(name: string, size: number): void {
    if (size > this.limits.maxMemberBytes) {
      throw this.fail(
        'ERR_ARCHIVE_TOO_LARGE',
        `member ${quote(name)} declares ${size} bytes (limit ${this.limits.maxMemberBytes})`,
        'the archive is not a cplane package (or raise the size limits)',
        { member: name, size, max_member_bytes: this.limits.maxMemberBytes },
      );
    }
    this.declaredBytes += size;
    if (this.declaredBytes > this.limits.maxTotalBytes) {
      throw this.fail(
        'ERR_ARCHIVE_TOO_LARGE',
        `members declare more than ${this.limits.maxTotalBytes} bytes`,
        'the archive is not a cplane package (or raise the size limits)',
        { max_total_bytes: this.limits.maxTotalBytes },
      );
    }
    if (this.isFree(name) || this.catalog === null) return;
    const declared = this.declared(name);
    if (declared.size !== size) throw this.sizeMismatch(name, declared.size, size);
  }

  private declared(name: string): DeclaredMember {
    const declared = this.catalog?.declared.get(name);
    if (!declared)
      throw this.fail(
        'ERR_ARCHIVE_UNDECLARED_MEMBER',
        `member ${quote(name)} is not declared in ${this.spec.member}`,
        `every file in the archive must be listed in ${this.spec.member}`,
        { member: name },
      );
    return declared;
  }

  private sizeMismatch(name: string, expected: number, actual: number): CpError {
    return this.fail(
      'ERR_ARCHIVE_SIZE_MISMATCH',
      `member ${quote(name)} is ${actual} bytes, ${this.spec.member} says ${expected}`,
      'rebuild the archive; it does not match its catalog',
      { member: name, expected, actual },
    );
  }

  private sink(name: string, size: number): MemberSink {
    const declared = this.catalog?.declared.get(name);
    const hash: Hash | null = declared && 'integrity' in declared ? null : createHash('sha256');
    const chunks: Buffer[] = [];
    let received = 0;
    return {
      data: (chunk) => {
        received += chunk.length;
        hash?.update(chunk);
        chunks.push(chunk);
      },
      end: () => {
        if (received !== size)
          throw this.fail(
            'ERR_ARCHIVE_CORRUPT',
            `member ${quote(name)} is truncated (${received} of ${size} bytes)`,
            'the archive is damaged; download or build it again',
            { member: name },
          );
        this.open = null;
        const sha256 = hash && `sha256:${hash.digest('hex')}`;
        this.complete({ name, size, bytes: Buffer.concat(chunks, size), sha256 });
      },
    };
  }

  private complete(body: Body): void {
    this.bodies.set(body.name, body);
    if (body.name === this.spec.member) {
      this.catalog = this.spec.parse(body.bytes);
      for (const earlier of this.bodies.values()) this.verify(earlier);
    } else {
      this.verify(body);
    }
  }

  private verify(body: Body): void {
    if (this.catalog === null || this.isFree(body.name)) return;
    const declared = this.declared(body.name);
    if (declared.size !== body.size) throw this.sizeMismatch(body.name, declared.size, body.size);
    if ('integrity' in declared) {
      checkIntegrity(body.bytes, declared.integrity, `member ${quote(body.name)} of ${show(this.archive)}`);
      return;
    }
    const actual = body.sha256 ?? sha256Digest(body.bytes);
    if (declared.sha256 !== actual) {
      throw this.fail(
        'ERR_ARCHIVE_DIGEST_MISMATCH',
        `member ${quote(body.name)} hashes to ${actual}, ${this.spec.member} says ${declared.sha256}`,
        'the archive was altered after it was built; do not install it',
        { member: body.name, expected: declared.sha256, actual },
      );
    }
  }

  /** After the last entry: the catalog, every declared member, and nothing half-read. */
  finish(): Collected<T> {
    if (this.open !== null)
      throw this.fail(
        'ERR_ARCHIVE_CORRUPT',
        `member ${quote(this.open)} is truncated`,
        'the archive is damaged; download or build it again',
        { member: this.open },
      );
    if (this.catalog === null)
      throw this.fail('ERR_ARCHIVE_NO_MANIFEST', `no ${this.spec.member} at the archive root`, this.spec.missingHint);
    const { value, declared } = this.catalog;
    const ancestors = new Set<string>();
    for (const path of declared.keys()) {
      if (!this.bodies.has(path))
        throw this.fail(
          'ERR_ARCHIVE_MISSING_ASSET',
          `declared member ${quote(path)} is not in the archive`,
          `rebuild the archive; its ${this.spec.member} lists a file it lacks`,
          { member: path },
        );
      for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) ancestors.add(path.slice(0, i));
    }
    for (const dir of this.directories) {
      if (!ancestors.has(dir))
        throw this.fail(
          'ERR_ARCHIVE_UNDECLARED_MEMBER',
          `directory ${quote(dir)} holds no declared member`,
          'every member must be declared or a directory on the way to one',
          { member: dir },
        );
    }
    const files = new Map<string, Buffer>();
    for (const path of declared.keys()) files.set(path, (this.bodies.get(path) as Body).bytes);
    const extras = new Map<string, Buffer>();
    for (const body of this.bodies.values())
      if (body.name !== this.spec.member && this.spec.allowUndeclared(body.name)) extras.set(body.name, body.bytes);
    return { value, catalogBytes: (this.bodies.get(this.spec.member) as Body).bytes, files, extras };
  }
}
