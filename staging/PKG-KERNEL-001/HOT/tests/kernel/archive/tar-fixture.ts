// Hand-made tar streams for hostile-archive tests. Deliberately independent of the kernel's packer
// (and of node-tar's, which refuses to write several of these): every header byte is written here.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface RawEntry {
  name: string;
  /** ustar typeflag: '0' file, '1' hard link, '2' symlink, '3' char dev, '4' block dev, '5' dir, '6' FIFO, 'x' pax. */
  type?: string;
  data?: Buffer | string;
  linkname?: string;
  /** Size written into the header when it must lie about the body. */
  headerSize?: number;
}

function field(block: Buffer, offset: number, length: number, value: string): void {
  Buffer.from(value, 'utf8').subarray(0, length).copy(block, offset);
}

export function rawHeader(entry: RawEntry, size: number): Buffer {
  const block = Buffer.alloc(512);
  field(block, 0, 100, entry.name);
  field(block, 100, 8, '0000644\0');
  field(block, 108, 8, '0000000\0');
  field(block, 116, 8, '0000000\0');
  field(block, 124, 12, `${size.toString(8).padStart(11, '0')}\0`);
  field(block, 136, 12, '00000000000\0');
  block.fill(0x20, 148, 156);
  field(block, 156, 1, entry.type ?? '0');
  field(block, 157, 100, entry.linkname ?? '');
  field(block, 257, 8, 'ustar\u000000');
  let sum = 0;
  for (const byte of block) sum += byte;
  field(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

/** A pax extended header ('x') whose records apply to the next entry. */
export function paxEntry(records: Record<string, string>): RawEntry {
  let body = '';
  for (const [key, value] of Object.entries(records)) {
    const rest = ` ${key}=${value}\n`;
    let len = rest.length + 1;
    while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
    body += `${len}${rest}`;
  }
  return { name: 'PaxHeader', type: 'x', data: body };
}

export function rawTar(entries: readonly RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const data = Buffer.from(entry.data ?? '');
    parts.push(
      rawHeader(entry, entry.headerSize ?? data.length),
      data,
      Buffer.alloc((512 - (data.length % 512)) % 512),
    );
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** `sha512-<base64>`, computed without ssri: what the reader must agree with. */
export function sri512(data: Buffer | string): string {
  return `sha512-${createHash('sha512').update(data).digest('base64')}`;
}

export function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

export interface FixtureFile {
  path: string;
  data: string | Buffer;
}

/** A valid manifest declaring exactly `files`. */
export function manifestFor(
  files: readonly FixtureFile[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    package_id: 'PKG-FIXTURE-001',
    version: '1.0.0',
    schema_version: '1.0',
    title: 'fixture',
    description: 'a test package',
    layer: 1,
    plane_id: 'hot',
    dependencies: [],
    replaces: [],
    assets: files.map((f) => ({
      path: f.path,
      sha256: sha256(f.data),
      size: Buffer.byteLength(f.data),
      classification: 'kernel',
    })),
    ...extra,
  };
}

export function manifestEntry(manifest: unknown, name = 'manifest.json'): RawEntry {
  return { name, data: JSON.stringify(manifest) };
}

/** A temp dir removed after the test, and a helper that writes a gzipped tar into it. */
export function scratch(t: { after: (fn: () => void) => void }): {
  dir: string;
  archive: (tar: Buffer, name?: string) => string;
} {
  const dir = mkdtempSync(join(tmpdir(), 'cp-archive-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  return {
    dir,
    archive: (tar, name) => {
      const path = join(dir, name ?? `a${(n += 1)}.tar.gz`);
      writeFileSync(path, gzipSync(tar));
      return path;
    },
  };
}
