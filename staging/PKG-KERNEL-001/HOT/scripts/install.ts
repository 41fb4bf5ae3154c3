#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/install.js [--root R] [--dev] [--genesis] ARCHIVE…` installs archives in the
// order given, in one process, one progress line per package. The CP_BOOTSTRAP entry drives genesis through it.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInstallEntry } from '../kernel/installer/entry.js';
import { COMMIT_STEPS, type CommitStep } from '../kernel/installer/hooks.js';

const here = dirname(fileURLToPath(import.meta.url));

/** Test-only crash injection: CPLANE_TEST_CRASH_AT=<step>[@PKG] kills this process at that commit step. */
function crashHook(spec: string | undefined): ((step: CommitStep, packageId: string) => void) | undefined {
  if (!spec) return undefined;
  const [step, pkg] = spec.split('@');
  if (!(COMMIT_STEPS as readonly string[]).includes(step ?? '')) return undefined;
  return (at, packageId) => {
    if (at === step && (pkg === undefined || pkg === packageId)) process.kill(process.pid, 'SIGKILL');
  };
}

process.exitCode = await runInstallEntry({
  argv: process.argv.slice(2),
  hot: resolve(here, '..'),
  defaultRoot: resolve(here, '..', '..'),
  crash: crashHook(process.env.CPLANE_TEST_CRASH_AT),
});
