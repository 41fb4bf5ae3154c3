import { randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { readPackageArchive, type ArchiveLimits, type PackageArchive } from '../archive/read.js';
import { CpError, toCpError } from '../errors.js';
import type { Receipt } from '../registry/receipt.js';
import { readTrustStore } from '../signing/index.js';
import { currentPlatform, type Platform } from './checks.js';
import { commitJournal } from './commit.js';
import { noHook, type StepHook } from './hooks.js';
import { writeJournal } from './journal.js';
import { recordInstallFailed } from './ledger-records.js';
import { planInstall } from './plan.js';
import type { RootSession } from './session.js';
import { stageFiles } from './stage.js';

export interface InstallRequest {
  archivePath: string;
  mode: 'install' | 'upgrade';
  expectId?: string | undefined;
  dev?: boolean | undefined;
  allowDowngrade?: boolean | undefined;
  /** The SRI the archive must have (bootstrap.json's pin), checked with ssri while the archive is read. */
  integrity?: string | undefined;
}

/** What the caller may inject: test hooks, platform, clock, ids, archive limits. */
export interface InstallEnv {
  hook?: StepHook | undefined;
  platform?: Platform | undefined;
  clock?: (() => number) | undefined;
  txnId?: (() => string) | undefined;
  limits?: Partial<ArchiveLimits> | undefined;
  strict?: boolean | undefined;
}

/** Read (and check) the archive a request names, as installOne would; nothing is written. */
export function readRequestArchive(request: InstallRequest, env: InstallEnv = {}): Promise<PackageArchive> {
  return readPackageArchive(request.archivePath, {
    ...(env.limits ? { limits: env.limits } : {}),
    ...(env.strict !== undefined ? { strict: env.strict } : {}),
    ...(request.integrity !== undefined ? { integrity: request.integrity } : {}),
  });
}

export interface InstallOutcome {
  package_id: string;
  version: string;
  action: 'installed' | 'upgraded' | 'unchanged';
  previous_version: string | null;
  files: number;
  removed: number;
  transfers: number;
  dev_waiver: boolean;
  receipt: Receipt | null;
  ms: number;
}

const newTxnId = (): string => `TXN-${randomBytes(6).toString('hex')}`;

/**
 * Install (or upgrade) one archive into a root whose session (lock + ledger) is open. Every check runs
 * before the first write; a refusal records INSTALL_FAILED with its code and rethrows.
 */
export async function installOne(
  session: RootSession,
  request: InstallRequest,
  env: InstallEnv = {},
  /** The archive already being read (readRequestArchive), so a batch can read ahead. */
  reading?: Promise<PackageArchive>,
): Promise<InstallOutcome> {
  const started = process.hrtime.bigint();
  const clock = env.clock ?? Date.now;
  let archive: PackageArchive | undefined;
  let journalWritten = false;
  try {
    archive = await (reading ?? readRequestArchive(request, env));
    const plan = planInstall(
      archive,
      {
        root: session.root,
        receipts: session.receipts.all(),
        registry: session.registry,
        trusted: readTrustStore(session.root),
      },
      {
        mode: request.mode,
        expectId: request.expectId,
        dev: request.dev,
        allowDowngrade: request.allowDowngrade,
        platform: env.platform ?? currentPlatform(),
        archivePath: request.archivePath,
        txnId: (env.txnId ?? newTxnId)(),
        now: new Date(clock()).toISOString(),
      },
    );
    const ms = (): number => Number(process.hrtime.bigint() - started) / 1e6;
    if (plan.kind === 'noop') {
      return {
        package_id: plan.package_id,
        version: plan.version,
        action: 'unchanged',
        previous_version: plan.version,
        files: 0,
        removed: 0,
        transfers: 0,
        dev_waiver: false,
        receipt: null,
        ms: ms(),
      };
    }
    const { journal } = plan;
    await stageFiles(session.root, journal, archive);
    (env.hook ?? noHook)('before-journal', journal.package_id);
    writeJournal(session.root, journal);
    journalWritten = true;
    const receipt = await commitJournal(session, journal, env.hook ?? noHook);
    return {
      package_id: plan.package_id,
      version: plan.version,
      action: plan.kind === 'upgrade' ? 'upgraded' : 'installed',
      previous_version: plan.previous?.version ?? null,
      files: journal.place.length,
      removed: journal.remove.length,
      transfers: journal.transfers.length,
      dev_waiver: journal.receipt?.signature.dev_waiver ?? false,
      receipt,
      ms: ms(),
    };
  } catch (error) {
    // After the journal is written the commit belongs to crash repair: it will be rolled forward.
    if (!journalWritten) {
      const coded = toCpError(error);
      const id = archive?.manifest.package_id ?? request.expectId ?? guessPackageId(request.archivePath);
      try {
        recordInstallFailed(session.ledger, id, coded.code, coded.message, {
          archive_file: basename(request.archivePath),
          mode: request.mode,
          ...(archive ? { version: archive.manifest.version } : {}),
        });
      } catch (ledgerError) {
        // The refusal stays the error the caller sees; the failed record is named in it, not swallowed.
        throw new CpError(
          coded.code,
          `${coded.message} (and INSTALL_FAILED could not be recorded: ${toCpError(ledgerError).message})`,
          {
            hint: coded.hint,
            details: { ...coded.details, ledger_error: toCpError(ledgerError).code },
            cause: error,
          },
        );
      }
    }
    throw error;
  }
}

/** A refused archive may have no readable manifest; its file name still says which package it meant to be. */
function guessPackageId(archivePath: string): string {
  const name = basename(archivePath);
  return /^(PKG-[A-Z0-9-]+-\d{3})-/.exec(name)?.[1] ?? name;
}
