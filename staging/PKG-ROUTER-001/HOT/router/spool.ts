import { closeSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE, writeFileAtomic } from '#kernel/atomic.js';
import { type Warning, warning } from '#kernel/catalogue/define.js';
import { show } from '#kernel/errors.js';
import { openRegularFile } from '#kernel/regular-file.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { isRecordFault } from './record-fault.js';
import { rootPaths } from '#kernel/root/layout.js';

/** Larger than any batch a bounded reply produces (a 32 MiB body, JSON-escaped); a bigger file is not ours. */
export const MAX_SPOOL_FILE_BYTES = 256 * 1024 * 1024;

/**
 * An entry a drain has taken: `.<name>.claim-<pid>-<nonce>`, hidden from listings. Renaming is atomic, so of two
 * processes draining one spool only one takes each entry; a claim whose process died goes back to its name.
 */
const CLAIM = /^\.(.+\.json)\.claim-([0-9]+)-[0-9a-f]+$/;

/**
 * The claims this process is draining now. A claim bearing this process's pid and not among them was left by an
 * earlier process that had the same pid (a container restarted, its gateway pid 1 again): abandoned too.
 */
const HELD = new Set<string>();

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
    // A spooled exchange is recorded content, kept from other users of the machine as the ledger is.
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, `${dispatchId}.json`);
    writeFileAtomic(path, JSON.stringify(records), { mode: PRIVATE_FILE_MODE });
    return path;
  }

  pending(): string[] {
    this.releaseAbandoned();
    return spoolEntries(this.dir);
  }

  /**
   * Never throws: every failure is a quarantined entry, a pending entry or a warning. `append` may answer
   * `{ refused }` for records that must never reach the ledger: the entry is quarantined with that reason.
   */
  async drain(append: (records: AppendInput[]) => Promise<{ refused: string } | undefined>): Promise<SpoolDrain> {
    const result: SpoolDrain = { drained: 0, quarantined: [], pending: 0, warnings: [] };
    const names = this.pending();
    for (let i = 0; i < names.length; i += 1) {
      const name = names[i] as string;
      // Taken first: another process draining this spool appends it, or already has.
      const path = this.claim(name);
      if (path === null) continue;
      try {
        const read = readSpoolEntry(path, name.slice(0, -'.json'.length));
        if (!read.ok) {
          this.setAside(path, name, read.problem, result);
          continue;
        }
        try {
          const answer = await append(read.records);
          if (answer !== undefined) {
            this.setAside(path, name, answer.refused, result);
            continue;
          }
        } catch (error) {
          const reason = error instanceof Error ? error.message : String(error);
          if (isRecordFault(error)) {
            this.setAside(path, name, `the ledger refused its records: ${reason}`, result);
            continue;
          }
          this.unclaim(path, name);
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
      } finally {
        HELD.delete(path);
      }
    }
    return result;
  }

  /** `name` renamed to a claim of this process; null when it is gone (another drain took it). */
  private claim(name: string): string | null {
    const claimed = join(this.dir, `.${name}.claim-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      renameSync(join(this.dir, name), claimed);
      HELD.add(claimed);
      return claimed;
    } catch {
      return null;
    }
  }

  /** A claimed entry back under its name, to be drained later (here or by another process). */
  private unclaim(path: string, name: string): void {
    try {
      renameSync(path, join(this.dir, name));
    } catch {
      // Left as a claim: taken back when the spool is next listed, this drain no longer holding it.
    }
  }

  /** Claims whose process is gone (it died mid-drain) go back under their names. */
  private releaseAbandoned(): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      const match = CLAIM.exec(name);
      if (match === null) continue;
      const pid = Number(match[2]);
      if (pid === process.pid ? HELD.has(join(this.dir, name)) : alive(pid)) continue;
      this.unclaim(join(this.dir, name), match[1] as string);
    }
  }

  private setAside(path: string, name: string, problem: string, result: SpoolDrain): void {
    try {
      mkdirSync(this.quarantineDir, { recursive: true, mode: 0o700 });
      let target = join(this.quarantineDir, name);
      for (let n = 1; existsOrLink(target); n += 1) target = join(this.quarantineDir, `${name}.${n}`);
      // rename moves a symlink itself, never its target.
      renameSync(path, target);
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
      this.unclaim(path, name);
    }
  }
}

/**
 * The `.json` entries of a spool directory, sorted; none when it does not exist. `claimed`: also those a drain has taken and not yet appended (under their
 * own names): still spooled, for a reader asking what is owed (G6, the console), not for a drain.
 */
export function spoolEntries(dir: string, options: { claimed?: boolean } = {}): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const entries: string[] = [];
  for (const name of names) {
    if (name.endsWith('.json') && !name.startsWith('.')) entries.push(name);
    else if (options.claimed) {
      const claim = CLAIM.exec(name);
      if (claim !== null) entries.push(claim[1] as string);
    }
  }
  return entries.sort();
}

/** Whether process `pid` (on this host: a spool is one root's) is running; one of another user's counts. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function existsOrLink(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

type SpoolRead = { ok: true; records: AppendInput[] } | { ok: false; problem: string };

/** Read one entry without following links or blocking on a FIFO, then check it is a batch this router spooled. */
export function readSpoolEntry(path: string, dispatchId: string): SpoolRead {
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(path, { noFollow: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      return { ok: false, problem: 'is not a regular file (a symlink)' };
    return { ok: false, problem: `cannot be opened (${error instanceof Error ? error.message : String(error)})` };
  }
  if (opened.fd === null) return { ok: false, problem: `is not a regular file (a ${opened.kind})` };
  const { fd, stat: st } = opened;
  let text: string;
  try {
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

/** The spool and its quarantine under a root. */
export function spoolDirs(root: string): { dir: string; quarantineDir: string } {
  const paths = rootPaths(root);
  return { dir: paths.spool, quarantineDir: paths.spoolQuarantine };
}
