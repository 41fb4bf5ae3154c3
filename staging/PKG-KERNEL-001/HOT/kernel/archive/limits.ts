export interface ArchiveLimits {
  /** Entries in the tar stream (files and directories). */
  maxMembers: number;
  /** Bytes of the inflated tar stream, counted as they inflate. */
  maxTotalBytes: number;
  /** Bytes of one member's body. */
  maxMemberBytes: number;
}

export const DEFAULT_ARCHIVE_LIMITS: Readonly<ArchiveLimits> = {
  maxMembers: 20_000,
  maxTotalBytes: 512 * 1024 * 1024,
  maxMemberBytes: 128 * 1024 * 1024,
};

export function resolveLimits(partial: Partial<ArchiveLimits> = {}): ArchiveLimits {
  const limits = { ...DEFAULT_ARCHIVE_LIMITS, ...partial };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`archive limit ${key} must be a non-negative integer, got ${String(value)}`);
  }
  return limits;
}
