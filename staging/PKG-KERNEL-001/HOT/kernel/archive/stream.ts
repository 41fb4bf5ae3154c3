import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
// The parser alone: tar's index loads its whole create/extract/replace machinery too (~30 ms per process).
import { Parser } from 'tar/parse';
import type { ReadEntry } from 'tar/read-entry';
import { isCpError, show } from '../errors.js';
import { envError } from '../env-errors.js';
import { openRegularFile } from '../regular-file.js';
import { archiveError } from './errors.js';
import { streamIntegrity } from './integrity.js';
import type { ArchiveLimits } from './limits.js';
import { MemberPolicy, type CatalogSpec, type Collected } from './members.js';

/**
 * Read and inflate in 256 KiB steps rather than the 64 KiB / 16 KiB defaults: each step is a trip through
 * the thread pool, and the runtime package reads ~30 ms faster. A bomb still stops within one step of the limit.
 */
const CHUNK = 256 * 1024;
const COMPRESSED_MAGIC = [Buffer.from([0x1f, 0x8b]), Buffer.from([0x28, 0xb5, 0x2f, 0xfd])];

function openFailure(path: string, error: NodeJS.ErrnoException): unknown {
  return error.code === 'ENOENT' || error.code === 'EISDIR' || error.code === 'EACCES'
    ? archiveError(
        'ERR_ARCHIVE_NOT_FOUND',
        path,
        `cannot read the file (${error.code})`,
        'pass the path of a .tar.gz archive',
        { errno: error.code },
        error,
      )
    : (envError(error, path, 'reading the archive') ?? error);
}

/** The archive's descriptor, once it is known to be a regular file (kernel/regular-file.ts). */
function openArchiveFile(path: string): number {
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(path);
  } catch (error) {
    throw openFailure(path, error as NodeJS.ErrnoException);
  }
  if (opened.fd !== null) return opened.fd;
  throw archiveError(
    'ERR_ARCHIVE_NOT_FOUND',
    path,
    `is a ${opened.kind}, not a regular file`,
    'pass the path of a .tar.gz archive',
    { type: opened.kind },
  );
}

/**
 * Stream a .tar.gz through the member policy without writing anything. Headers are judged before
 * bodies are buffered and inflated bytes are counted as they appear, so a decompression bomb is
 * stopped at the limit. The file's bytes are hashed as they are read (its SRI, checked against `expected` when
 * given). Resolves with what the policy collected and the archive's SRI.
 */
export async function streamArchive<T>(
  path: string,
  limits: ArchiveLimits,
  spec: CatalogSpec<T>,
  expected?: string,
): Promise<Collected<T> & { integrity: string }> {
  const policy = new MemberPolicy(path, limits, spec);
  const source = createReadStream(path, { fd: openArchiveFile(path), highWaterMark: CHUNK });
  const hashing = streamIntegrity(source, expected, `archive ${show(path)}`);
  await new Promise<void>((resolve, reject) => {
    const gunzip = createGunzip({ chunkSize: CHUNK });
    const parser = new Parser({ strict: true, brotli: false, zstd: false } as ConstructorParameters<typeof Parser>[0]);
    let failed = false;
    let inflated = 0;
    let atEof = false;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      source.destroy();
      gunzip.destroy();
      reject(
        isCpError(error)
          ? error
          : archiveError(
              'ERR_ARCHIVE_CORRUPT',
              path,
              `not a valid .tar.gz: ${error instanceof Error ? error.message : String(error)}`,
              'the archive is damaged or not a cplane archive',
              {},
              error,
            ),
      );
    };
    const guard = (fn: () => void): void => {
      if (failed) return;
      try {
        fn();
      } catch (error) {
        fail(error);
      }
    };
    source.on('error', (error: NodeJS.ErrnoException) => {
      fail(openFailure(path, error));
    });
    gunzip.on('error', fail);
    gunzip.on('data', (chunk: Buffer) =>
      guard(() => {
        if (inflated === 0 && COMPRESSED_MAGIC.some((magic) => chunk.subarray(0, magic.length).equals(magic))) {
          throw archiveError(
            'ERR_ARCHIVE_CORRUPT',
            path,
            'the tar stream is itself compressed',
            'an archive is one gzip layer over a tar stream',
          );
        }
        inflated += chunk.length;
        if (inflated > limits.maxTotalBytes) {
          throw archiveError(
            'ERR_ARCHIVE_TOO_LARGE',
            path,
            `inflates to more than ${limits.maxTotalBytes} bytes`,
            'the archive is not a cplane archive (or raise the size limits)',
            { max_total_bytes: limits.maxTotalBytes, inflated_bytes: inflated },
          );
        }
        // After the end-of-archive blocks only padding may follow; the parser need not see it.
        if (!atEof) parser.write(chunk);
      }),
    );
    gunzip.on('end', () =>
      guard(() => {
        parser.end();
      }),
    );
    parser.on('eof', () => {
      atEof = true;
    });
    parser.on('entry', (entry: ReadEntry) =>
      guard(() => {
        const sink = policy.begin(entry.type, entry.path, entry.size);
        entry.on('data', (chunk: Buffer) =>
          guard(() => {
            sink.data(chunk);
          }),
        );
        entry.on('end', () =>
          guard(() => {
            sink.end();
          }),
        );
      }),
    );
    parser.on('ignoredEntry', (entry: ReadEntry) =>
      guard(() => {
        policy.begin(entry.type, entry.path, entry.size);
      }),
    );
    parser.on('error', fail);
    parser.on('end', () => guard(resolve));
    source.pipe(gunzip);
  });
  // The archive's own bytes first: a file that is not the one recorded is refused as such, whatever it holds.
  const hashed = await hashing;
  if ('error' in hashed) throw hashed.error;
  return { ...policy.finish(), integrity: hashed.integrity };
}
