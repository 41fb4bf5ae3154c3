// A minimal, path-safe .tar.gz reader using only Node built-ins: the CP_BOOTSTRAP entry runs before any
// runtime package is installed. It only unpacks archives whose bytes bootstrap.json already pinned; the
// installed kernel's installer then re-reads them with the full hostile-archive checks.
import { gunzipSync } from 'node:zlib';

export interface TarFile {
  path: string;
  data: Buffer;
}

/** A coded refusal (the same shape as the kernel's CpError: code, message, hint), from built-ins only. */
export class TarError extends Error {
  constructor(readonly code: string, message: string, readonly hint = 'the CP_BOOTSTRAP file is damaged or is not a CP_BOOTSTRAP archive; rebuild it with `cplane build`') {
    super(message);
  }
}

const BLOCK = 512;
const MAX_INFLATED = 1024 * 1024 * 1024;

function field(header: Buffer, offset: number, length: number): string {
  const raw = header.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString('utf8');
}

function octal(header: Buffer, offset: number, length: number): number {
  const text = field(header, offset, length).trim();
  return text === '' ? 0 : parseInt(text, 8);
}

function checksumOk(header: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i += 1) sum += i >= 148 && i < 156 ? 0x20 : (header[i] as number);
  return sum === octal(header, 148, 8);
}

/** Normalise a member path; refuse anything that could land outside the extraction directory. */
export function safeMemberPath(raw: string): string {
  const path = raw.replace(/^(\.\/)+/, '');
  const parts = path.split('/').filter((p) => p !== '');
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw) || raw.includes('\\') || raw.includes('\0') || parts.some((p) => p === '..' || p === '.') || parts.length === 0) {
    throw new TarError('ERR_ARCHIVE_UNSAFE_PATH', `unsafe member path ${JSON.stringify(raw)}`);
  }
  return parts.join('/');
}

function paxPath(body: Buffer): string | undefined {
  let text = body.toString('utf8');
  let found: string | undefined;
  while (text.length > 0) {
    const space = text.indexOf(' ');
    const length = parseInt(text.slice(0, space), 10);
    if (!(length > 0)) break;
    const record = text.slice(space + 1, length - 1);
    const eq = record.indexOf('=');
    if (record.slice(0, eq) === 'path') found = record.slice(eq + 1);
    text = text.slice(length);
  }
  return found;
}

/** Regular files of a .tar.gz (directories skipped); links, devices and duplicates are refused. */
export function readTarGz(gz: Buffer): TarFile[] {
  let tar: Buffer;
  try {
    tar = gunzipSync(gz, { maxOutputLength: MAX_INFLATED });
  } catch (cause) {
    throw new TarError('ERR_ARCHIVE_CORRUPT', `not a readable gzip stream (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  const files: TarFile[] = [];
  const seen = new Set<string>();
  let offset = 0;
  let pendingPath: string | undefined;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break;
    if (!checksumOk(header)) throw new TarError('ERR_ARCHIVE_CORRUPT', `bad tar header checksum at offset ${offset}`);
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] as number);
    const body = tar.subarray(offset + BLOCK, offset + BLOCK + size);
    if (body.length !== size) throw new TarError('ERR_ARCHIVE_CORRUPT', 'truncated tar member');
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') { pendingPath = paxPath(body); continue; }
    if (type === 'g') continue;
    const prefix = field(header, 345, 155);
    const name = pendingPath ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    pendingPath = undefined;
    if (type === '5') continue;
    if (type !== '0' && type !== '\0') {
      const code = type === '1' || type === '2' ? 'ERR_ARCHIVE_LINK' : 'ERR_ARCHIVE_SPECIAL_FILE';
      throw new TarError(code, `member ${JSON.stringify(name)} has type ${JSON.stringify(type)}; only regular files are allowed`);
    }
    const path = safeMemberPath(name);
    if (seen.has(path)) throw new TarError('ERR_ARCHIVE_DUPLICATE_MEMBER', `duplicate member ${JSON.stringify(path)}`);
    seen.add(path);
    files.push({ path, data: Buffer.from(body) });
  }
  return files;
}
