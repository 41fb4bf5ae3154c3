#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/install.js [--root R] [--dev] [--genesis] ARCHIVE…` installs archives in the
// order given, in one process, one progress line per package. The CP_BOOTSTRAP entry drives genesis through it.
// The installer's own modules load verified against this root (see cplane.js).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEntry, verifyModuleLoading } from '../kernel/loader/register.js';

const here = dirname(fileURLToPath(import.meta.url));

verifyModuleLoading(resolve(here, '..', '..'));
process.exitCode = await runEntry(async () => {
  const { runInstallEntry, testCrashHook } = await import('../kernel/installer/entry.js');
  return runInstallEntry({
    argv: process.argv.slice(2),
    hot: resolve(here, '..'),
    defaultRoot: resolve(here, '..', '..'),
    crash: testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
  });
});
