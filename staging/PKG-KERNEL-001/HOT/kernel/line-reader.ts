import { closeSync, openSync, readSync } from 'node:fs';
import { CpError, type ErrorCode, show } from './errors.js';
import { unreadable } from './bounded-read.js';

export interface LineReadOptions {
  /** Longest accepted line in bytes, without its newline. */
  maxLineBytes: number;
  /** What the file is, for messages ("the ledger export"). */
  what: string;
  unreadableCode?: ErrorCode;
  unreadableHint?: string;
}

/** Decoding with replacement would turn bad bytes into U+FFFD, and the refusal into a confusing later one. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The lines of a file (without their "\n"), read in 1 MiB chunks: memory holds one line, never the file, so a
 * multi-gigabyte input costs what its longest line costs, and a line over `maxLineBytes` stops the read there.
 */
export function* readLinesBounded(path: string, options: LineReadOptions): Generator<string> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw unreadable(error, path, options);
  }
  try {
    const chunk = Buffer.allocUnsafe(1024 * 1024);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let lineNo = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, chunk, 0, chunk.length, null);
      } catch (error) {
        throw unreadable(error, path, options);
      }
      if (n === 0) break;
      let start = 0;
      for (let nl = chunk.indexOf(0x0a, 0); nl !== -1 && nl < n; nl = chunk.indexOf(0x0a, start)) {
        lineNo += 1;
        const tail = chunk.subarray(start, nl);
        if (pendingBytes + tail.length > options.maxLineBytes) throw lineTooLong(path, options, lineNo);
        const line = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        yield decode(line, path, options, lineNo);
      }
      if (start < n) {
        pendingBytes += n - start;
        if (pendingBytes > options.maxLineBytes) throw lineTooLong(path, options, lineNo + 1);
        pending.push(Buffer.from(chunk.subarray(start, n)));
      }
    }
    if (pendingBytes > 0) yield decode(Buffer.concat(pending), path, options, lineNo + 1);
  } finally {
    closeSync(fd);
  }
}

function decode(line: Buffer, path: string, options: LineReadOptions, lineNo: number): string {
  try {
    return UTF8.decode(line);
  } catch (cause) {
    throw new CpError(
      options.unreadableCode ?? 'ERR_INPUT_UNREADABLE',
      `line ${lineNo} of ${options.what} ${show(path, 240)} is not UTF-8 text`,
      {
        hint: options.unreadableHint ?? 'check the path: it must be a UTF-8 text file',
        details: { path, line: lineNo },
        cause,
      },
    );
  }
}

function lineTooLong(path: string, options: LineReadOptions, lineNo: number): CpError {
  return new CpError(
    'ERR_INPUT_TOO_LARGE',
    `line ${lineNo} of ${options.what} ${show(path, 240)} is longer than ${options.maxLineBytes} bytes`,
    {
      hint: `${options.what} never has lines that long: check the path; nothing was read past the limit`,
      details: { path, line: lineNo, limit_bytes: options.maxLineBytes },
    },
  );
}
