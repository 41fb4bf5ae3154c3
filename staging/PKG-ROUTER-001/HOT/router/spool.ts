import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
} from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '#kernel/atomic.js';
import { type Warning, warning } from '#kernel/catalogue/define.js';
import { show } from '#kernel/errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { isRecordFault } from './record-fault.js';
import { rootPaths } from '#kernel/root/layout.js';

/** Larger than any batch a bounded reply produces (a 32 MiB body, JSON-escaped); a bigger file is not ours. */
export const MAX_SPOOL_FILE_BYTES = 256 * 1024 * 1024;

/** Record types a spooled batch may hold: the EXCHANGE first, then its budget settlement. */
const SPOOLED_EVENT_TYPES = /^(EXCHANGE|BUDGET_[A-Z_]+)$/;

export interface SpoolDrain {
  drained: number;
  /** Quarantine paths of entries set aside in this drain. */
  quarantined: string[];
  /** Entries left in the spool because the ledger refused them for an environmental reason. */
  pending: number;
  warnings: Warning[];
}

/**
 * Exchanges the ledger refused after the provider answered. Each is one atomic file named by its
 * DISPATCH id; drained (appended, then removed) the next time a router starts on the root. An entry that
 * cannot be read, parsed or validated, or that is not a regular file, is moved to the quarantine directory
 * (never opened if it is a symlink, directory, FIFO or device) and named in a warning: one damaged file
 * never stops routing, and G6 reports what is quarantined or still pending.
 */
export class ExchangeSpool {
  constructor(
    private readonly dir: string,
    private readonly quarantineDir: string,
  ) {}

  put(dispatchId: string, records: readonly AppendInput[]): string {
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `${dispatchId}.json`);
    writeFileAtomic(path, JSON.stringify(records));
    return path;
  }

  pending(): string[] {
    return spoolEntries(this.dir);
  }

  /** Never throws: every failure is a quarantined entry, a pending entry or a warning. */
  async drain(append: (records: AppendInput[]) => Promise<unknown>): Promise<SpoolDrain> {
    const result: SpoolDrain = { drained: 0, quarantined: [], pending: 0, warnings: [] };
    const names = this.pending();
    for (let i = 0; i < names.length; i += 1) {
      const name = names[i] as string;
      const path = join(this.dir, name);
      const read = readSpoolEntry(path, name.slice(0, -'.json'.length));
      if (!read.ok) {
        this.setAside(name, read.problem, result);
        continue;
      }
      try {
        await append(read.records);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        if (isRecordFault(error)) {
          this.setAside(name, `the ledger refused its records: ${reason}`, result);
          continue;
        }
        result.pending = names.length - i;
        result.warnings.push(
          warning(
            'SPOOL_PENDING',
            `${result.pending} spooled exchange(s) left in ${show(this.dir)}: the ledger refused ${show(name)} (${show(reason, 200)}); they are appended when the ledger takes writes again`,
          ),
        );
        return result;
      }
      try {
        rmSync(path);
      } catch (error) {
        result.warnings.push(
          warning(
            'SPOOL_REMOVE_FAILED',
            `${show(path)} was appended but could not be removed (${error instanceof Error ? error.message : String(error)})`,
          ),
        );
      }
      result.drained += 1;
    }
    return result;
  }

  private setAside(name: string, problem: string, result: SpoolDrain): void {
    try {
      mkdirSync(this.quarantineDir, { recursive: true });
      let target = join(this.quarantineDir, name);
      for (let n = 1; existsOrLink(target); n += 1) target = join(this.quarantineDir, `${name}.${n}`);
      // rename moves a symlink itself, never its target.
      renameSync(join(this.dir, name), target);
      result.quarantined.push(target);
      result.warnings.push(
        warning('SPOOL_QUARANTINED', `spool entry ${show(name)} ${problem}; moved to ${show(target)}`),
      );
    } catch (error) {
      result.warnings.push(
        warning(
          'SPOOL_QUARANTINE_FAILED',
          `spool entry ${show(name)} ${problem} and could not be moved aside (${error instanceof Error ? error.message : String(error)}); it is skipped`,
        ),
      );
    }
  }
}

/** The `.json` entries of a spool directory, sorted; none when it does not exist. */
export function spoolEntries(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

function existsOrLink(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

type SpoolRead = { ok: true; records: AppendInput[] } | { ok: false; problem: string };

/** Read one entry without following links or blocking on a FIFO, then check it is a batch this router spooled. */
export function readSpoolEntry(path: string, dispatchId: string): SpoolRead {
  let fd: number;
  try {
    const st = lstatSync(path);
    if (!st.isFile()) return { ok: false, problem: `is not a regular file (${kindOf(st)})` };
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return { ok: false, problem: `cannot be opened (${error instanceof Error ? error.message : String(error)})` };
  }
  let text: string;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, problem: 'is not a regular file' };
    if (st.size > MAX_SPOOL_FILE_BYTES)
      return { ok: false, problem: `is ${st.size} bytes, over the ${MAX_SPOOL_FILE_BYTES}-byte limit` };
    text = readFileSync(fd, 'utf8');
  } catch (error) {
    return { ok: false, problem: `cannot be read (${error instanceof Error ? error.message : String(error)})` };
  } finally {
    closeSync(fd);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `is not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  const problem = batchProblem(value, dispatchId);
  return problem === null ? { ok: true, records: value as AppendInput[] } : { ok: false, problem };
}

function batchProblem(value: unknown, dispatchId: string): string | null {
  if (!Array.isArray(value) || value.length === 0) return 'is not a non-empty array of records';
  for (const [i, record] of value.entries()) {
    const r = record as Record<string, unknown> | null;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) return `record ${i} is not an object`;
    for (const field of ['event_type', 'submission_id', 'decision', 'reason']) {
      if (typeof r[field] !== 'string') return `record ${i} has no string ${field}`;
    }
    if (!SPOOLED_EVENT_TYPES.test(r.event_type as string))
      return `record ${i} is a ${show(r.event_type)}, not a record the router spools`;
    if (typeof r.metadata !== 'object' || r.metadata === null || Array.isArray(r.metadata))
      return `record ${i} has no metadata object`;
  }
  const first = value[0] as { event_type: string; metadata: Record<string, unknown> };
  if (first.event_type !== 'EXCHANGE') return 'does not start with an EXCHANGE';
  if (first.metadata.dispatch_entry_id !== dispatchId)
    return `holds the EXCHANGE of ${show(first.metadata.dispatch_entry_id)}, not of ${show(dispatchId)} (its name)`;
  return null;
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symlink';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'a device or other special file';
}

/** The spool and its quarantine under a root. */
export function spoolDirs(root: string): { dir: string; quarantineDir: string } {
  const paths = rootPaths(root);
  return { dir: paths.spool, quarantineDir: paths.spoolQuarantine };
}
