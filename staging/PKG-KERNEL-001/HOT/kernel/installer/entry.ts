import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CpError, isCpError } from '../errors.js';
import { envError } from '../env-errors.js';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { installPackages } from './batch.js';
import { createRoot } from './genesis.js';
import type { CommitStep } from './hooks.js';
// Re-exported so a caller holding only this module (the CP_BOOTSTRAP entry) maps CPLANE_TEST_CRASH_AT the same way.
export { testCrashHook } from './hooks.js';
import type { InstallOutcome } from './install.js';
import { outcomeLine } from './report.js';

export interface InstallEntryOptions {
  argv: readonly string[];
  /** The HOT directory this installer runs from. */
  hot: string;
  defaultRoot: string;
  /** Names --genesis tolerates in the root (the CP_BOOTSTRAP entry's mark of an unfinished genesis). */
  genesisAllow?: readonly string[];
  crash?: ((step: CommitStep, packageId: string) => void) | undefined;
  /**
   * The SRI each archive must have, by its resolved path: the CP_BOOTSTRAP entry passes bootstrap.json's pins,
   * so an archive swapped after the entry checked it is still refused as it is read.
   */
  integrity?: ReadonlyMap<string, string> | undefined;
  out?: (line: string) => void;
  err?: (line: string) => void;
}

const USAGE =
  'usage: node HOT/scripts/install.js [--root R] [--dev] [--upgrade [--allow-downgrade]] [--id PKG] [--genesis [--trust KEY.pub]…] [--json] ARCHIVE…';

/**
 * The root's own installer entry. In --genesis mode it first creates the root (which may hold only the
 * names the caller allows), then installs the archives.
 */
export async function runInstallEntry(options: InstallEntryOptions): Promise<number> {
  const out =
    options.out ??
    ((line: string) => {
      process.stdout.write(`${line}\n`);
    });
  const err =
    options.err ??
    ((line: string) => {
      process.stderr.write(`${line}\n`);
    });
  let json = false;
  try {
    const { values, positionals } = parseEntryArgs(options.argv);
    json = values.json === true;
    if (values.help) {
      out(USAGE);
      return 0;
    }
    if (positionals.length === 0 && !values.genesis)
      throw new CpError('ERR_USAGE', 'name at least one archive to install', { hint: USAGE });
    if (values.id !== undefined && positionals.length !== 1)
      throw new CpError('ERR_USAGE', '--id needs exactly one archive', { hint: USAGE });
    const root = resolve(values.root ?? options.defaultRoot);
    if (values.genesis) {
      if (values.root === undefined) throw new CpError('ERR_USAGE', '--genesis needs --root', { hint: USAGE });
      createRoot(root, {
        allow: options.genesisAllow ?? [],
        trustKeys: (values.trust ?? []).map((file) =>
          readTextBounded(resolve(file), {
            maxBytes: READ_LIMITS.key,
            what: 'the trusted key',
            unreadableCode: 'ERR_KEY_INVALID',
          }),
        ),
        ...(values['bootstrap-version'] ? { bootstrapVersion: values['bootstrap-version'] } : {}),
      });
    }
    const outcomes: InstallOutcome[] = await installPackages(
      root,
      positionals.map((archive) => ({
        archivePath: resolve(archive),
        integrity: options.integrity?.get(resolve(archive)),
        mode: values.upgrade ? ('upgrade' as const) : ('install' as const),
        expectId: values.id,
        dev: values.dev,
        allowDowngrade: values['allow-downgrade'],
      })),
      { hook: options.crash },
      ({ index, total, outcome }) => {
        if (!json) out(`[${index + 1}/${total}] ${outcomeLine(outcome)}`);
      },
    );
    if (json) out(JSON.stringify({ root, packages: outcomes.map(({ receipt: _r, ...rest }) => rest) }, null, 2));
    return 0;
  } catch (thrown) {
    const error = isCpError(thrown) ? thrown : envError(thrown);
    if (!error) throw thrown;
    if (json) out(JSON.stringify({ error: error.toJSON() }, null, 2));
    else err(`cplane: ${error.code}: ${error.message}${error.hint ? `\n  hint: ${error.hint}` : ''}`);
    return error.code === 'ERR_USAGE' ? 2 : 3;
  }
}

function parseEntryArgs(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        root: { type: 'string' },
        dev: { type: 'boolean' },
        genesis: { type: 'boolean' },
        trust: { type: 'string', multiple: true },
        upgrade: { type: 'boolean' },
        'allow-downgrade': { type: 'boolean' },
        id: { type: 'string' },
        json: { type: 'boolean' },
        'bootstrap-version': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (cause) {
    throw new CpError('ERR_USAGE', cause instanceof Error ? cause.message : String(cause), { hint: USAGE, cause });
  }
}
