import { lstatSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '#kernel/atomic.js';
import { sha256Hex } from '#kernel/canonical.js';
import { CpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readFileBounded } from '#kernel/bounded-read.js';
import { type AppendInput, Ledger, ledgerPathForRoot, type LedgerEntry } from '#kernel/ledger/index.js';
import { REVOKED_KEYS_REL, rootPaths } from '#kernel/root/layout.js';
import { acquireRootLock } from '#kernel/root/lock.js';
import { entryKind, shapeError } from '#kernel/root/shape.js';
import { truncateText } from '#kernel/text.js';
import { KEY_ID, tokenKeyId } from './auth.js';
import { BUILTIN_SECRET_PATTERNS, scrubSecretPatterns } from './secret-patterns.js';

/**
 * Route keys revoked before they expire: `HOT/registries/revoked-keys.json`, `{schema_version: "1", revoked:
 * [{key_id, revoked_at, reason}]}`. A key id is a token's `jti` or, for a token without one, its digest.
 * The list fails closed: a file that cannot be read or is not a revocation list refuses every authentication.
 */
export interface RevokedKey {
  key_id: string;
  revoked_at: string;
  reason: string | null;
  /**
   * When the revocation takes effect (ISO), for a key rotated with a grace period; absent: at once. A reader that
   * does not know the field refuses the key at once: it fails closed.
   */
  effective_at?: string;
}

/** A revocation as checked: its key id and when it takes effect (ms; -Infinity: at once). */
export interface Revocation {
  key_id: string;
  effective_ms: number;
}

/** When an entry's revocation takes effect (ms): at once unless it names a valid time. */
export function effectiveMs(effectiveAt: unknown): number {
  const ms = typeof effectiveAt === 'string' ? Date.parse(effectiveAt) : Number.NaN;
  return Number.isFinite(ms) ? ms : Number.NEGATIVE_INFINITY;
}

/** Revocations by key id, the earliest taking effect kept when a key id is named twice. */
export function revocationMap(revocations: Iterable<Revocation>): Map<string, number> {
  const map = new Map<string, number>();
  for (const { key_id, effective_ms } of revocations) {
    const known = map.get(key_id);
    if (known === undefined || effective_ms < known) map.set(key_id, effective_ms);
  }
  return map;
}

/** Whether any of the ids is revoked at `nowMs` in a revocation map. */
export function revokedIn(map: ReadonlyMap<string, number>, keyIds: readonly string[], nowMs: number): boolean {
  return keyIds.some((id) => {
    const at = map.get(id);
    return at !== undefined && at <= nowMs;
  });
}

const DIGEST_ID = /^sha256:[0-9a-f]{64}$/;
const MAX_REASON = 500;

export function isKeyId(value: unknown): value is string {
  return typeof value === 'string' && (KEY_ID.test(value) || DIGEST_ID.test(value));
}

function invalid(message: string): CpError {
  return new CpError('ERR_REVOCATION_LIST_INVALID', `${REVOKED_KEYS_REL} ${message}`, {
    hint: 'every authentication is refused until it is fixed: restore it from a backup, or rebuild it from the KEY_REVOKED records (`cplane ledger query --root R --event-type KEY_REVOKED`)',
    details: { path: REVOKED_KEYS_REL },
  });
}

function parseList(bytes: Buffer): RevokedKey[] {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (cause) {
    throw invalid(`is not JSON: ${(cause as Error).message}`);
  }
  const v = value as { schema_version?: unknown; revoked?: unknown };
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    Object.keys(value).some((k) => k !== 'schema_version' && k !== 'revoked')
  ) {
    throw invalid('is not a revocation list object {schema_version, revoked}');
  }
  if (v.schema_version !== '1' || !Array.isArray(v.revoked))
    throw invalid(`has schema_version ${show(v.schema_version)} or no "revoked" array`);
  return v.revoked.map((entry: unknown, i: number) => {
    const e = entry as Record<string, unknown>;
    if (
      typeof entry !== 'object' ||
      entry === null ||
      !isKeyId(e.key_id) ||
      typeof e.revoked_at !== 'string' ||
      !(e.reason === null || typeof e.reason === 'string') ||
      !(
        e.effective_at === undefined ||
        (typeof e.effective_at === 'string' && Number.isFinite(Date.parse(e.effective_at)))
      )
    ) {
      throw invalid(`entry ${i} is not {key_id, revoked_at, reason, effective_at?}: ${show(entry)}`);
    }
    return {
      key_id: e.key_id,
      revoked_at: e.revoked_at,
      reason: e.reason as string | null,
      ...(e.effective_at === undefined ? {} : { effective_at: e.effective_at as string }),
    };
  });
}

export interface RevocationFile {
  entries: RevokedKey[];
  bytes: Buffer | null;
}

/** Read the list; absent is empty; a link or special file there is refused like other root state. */
export function readRevocations(root: string): RevocationFile {
  const path = rootPaths(root).revokedKeys;
  const kind = entryKind(path);
  if (kind === 'absent') return { entries: [], bytes: null };
  if (kind !== 'file') throw shapeError(REVOKED_KEYS_REL, kind, 'regular file');
  const bytes = readFileBounded(path, { maxBytes: READ_LIMITS.state, what: 'the revocation list' });
  return { entries: parseList(bytes), bytes };
}

export interface RevocationCheck {
  /**
   * True when any of the ids is revoked at `nowMs` (default: now); throws a coded error when the list cannot be
   * trusted. A key rotated with a grace period is revoked from the grace's end.
   */
  isRevoked(keyIds: readonly string[], nowMs?: number): boolean;
}

/**
 * The root's list as the router checks it on every authentication: re-read only when the file changed
 * (an atomic publish changes its inode), so a long-lived process sees a revocation at its next request.
 * `recorded`: the key ids the ledger's KEY_REVOKED records name. They stay revoked whatever the file says:
 * deleting it, or an entry from it, must not bring a revoked key back (nothing ever unrevokes one).
 */
export function revocationList(root: string, recorded: () => readonly Revocation[] = () => []): RevocationCheck {
  const path = rootPaths(root).revokedKeys;
  let signature = '';
  let revoked = new Map<string, number>();
  return {
    isRevoked(keyIds, nowMs = Date.now()) {
      // An absent list (the usual case) answers undefined rather than throwing ENOENT: an error built and caught
      // on every authentication is most of this check's cost.
      const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false }) ?? null;
      const now =
        stat === null ? 'absent' : `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}:${stat.mode}`;
      if (now !== signature) {
        const listed = readRevocations(root).entries.map((e) => ({
          key_id: e.key_id,
          effective_ms: effectiveMs(e.effective_at),
        }));
        revoked = revocationMap([...listed, ...recorded()]);
        signature = now;
      }
      return revokedIn(revoked, keyIds, nowMs);
    },
  };
}

export interface RevokeResult {
  key_id: string;
  changed: boolean;
  entry_id: string | null;
  revoked_at: string;
}

/** The reason as recorded (truncated), once the key id is known to be one; ERR_TOKEN_INVALID when it is not. */
export function revocationReason(keyId: string, reason: string | null): string | null {
  if (keyId.startsWith('cpt1.') || tokenKeyId(keyId) !== null) {
    // A whole token pasted as the key id: a live credential, so neither the message nor the details hold it.
    const id = tokenKeyId(keyId);
    throw new CpError(
      'ERR_TOKEN_INVALID',
      'the key id given is a token, not a key id (the token itself is not shown)',
      {
        hint: id === null ? 'pass it as --token TOKEN' : `pass it as --token TOKEN, or as its key id: --key-id ${id}`,
        details: { given: 'token', key_id: id },
      },
    );
  }
  if (!isKeyId(keyId)) {
    throw new CpError(
      'ERR_TOKEN_INVALID',
      `${show(keyId)} is not a key id (a token's jti, or sha256:<64 hex> of a token)`,
      {
        hint: 'revoke with --token TOKEN, or --key-id from `token issue --json` (claims.jti)',
        details: { key_id: keyId },
      },
    );
  }
  // An operator explaining a revocation may paste the leaked key itself: it is scrubbed like any recorded text,
  // before the cut, so a key straddling the limit cannot leave a prefix behind.
  return reason === null ? null : truncateText(scrubSecretPatterns(reason, BUILTIN_SECRET_PATTERNS, {}), MAX_REASON);
}

/**
 * The KEY_REVOKED record, whichever store holds the list; `list` says what the list became (its size, and for the
 * file its digests before and after).
 */
export function keyRevokedRecord(
  keyId: string,
  revokedAt: string,
  reason: string | null,
  list: Record<string, unknown>,
): AppendInput {
  return {
    event_type: 'KEY_REVOKED',
    submission_id: keyId,
    decision: 'REVOKED',
    reason: reason ?? 'revoked',
    metadata: { key_id: keyId, revoked_at: revokedAt, ...list },
  };
}

/** Add a key id to the list under the root lock, publish it atomically and record KEY_REVOKED; the file is put back if the ledger refuses. */
export function revokeKey(
  root: string,
  keyId: string,
  reason: string | null,
  clock: () => number = Date.now,
  /** When the revocation takes effect (a rotation's grace end); absent: at once. */
  effectiveAtMs?: number,
): RevokeResult {
  const why = revocationReason(keyId, reason);
  const lock = acquireRootLock(root, { timeoutMs: 10_000 });
  try {
    const before = readRevocations(root);
    const existing = before.entries.find((e) => e.key_id === keyId);
    // A key already revoked stays as it is, unless this revocation takes effect sooner (a rotated key deleted).
    if (existing && effectiveMs(existing.effective_at) <= (effectiveAtMs ?? Number.NEGATIVE_INFINITY))
      return { key_id: keyId, changed: false, entry_id: null, revoked_at: existing.revoked_at };
    const revokedAt = new Date(clock()).toISOString();
    const effective = effectiveAtMs === undefined ? {} : { effective_at: new Date(effectiveAtMs).toISOString() };
    const entries = [
      ...before.entries.filter((e) => e.key_id !== keyId),
      { key_id: keyId, revoked_at: revokedAt, reason: why, ...effective },
    ];
    const bytes = Buffer.from(`${JSON.stringify({ schema_version: '1', revoked: entries }, null, 2)}\n`, 'utf8');
    const path = rootPaths(root).revokedKeys;
    writeFileAtomic(path, bytes);
    let entry: LedgerEntry;
    try {
      const ledger = Ledger.open(ledgerPathForRoot(root));
      try {
        entry = ledger.append(
          keyRevokedRecord(keyId, revokedAt, why, {
            ...effective,
            revoked_count: entries.length,
            before_digest: before.bytes === null ? null : `sha256:${sha256Hex(before.bytes)}`,
            after_digest: `sha256:${sha256Hex(bytes)}`,
          }),
        );
      } finally {
        ledger.close();
      }
    } catch (error) {
      if (before.bytes === null) rmSync(path, { force: true });
      else writeFileAtomic(path, before.bytes);
      throw error;
    }
    return { key_id: keyId, changed: true, entry_id: entry.id, revoked_at: revokedAt };
  } finally {
    lock.release();
  }
}
