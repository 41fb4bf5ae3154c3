#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/install.js [--root R] [--dev] [--genesis] ARCHIVE…` installs archives in the
// order given, in one process, one progress line per package. The CP_BOOTSTRAP entry drives genesis through it.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInstallEntry, testCrashHook } from '../kernel/installer/entry.js';

const here = dirname(fileURLToPath(import.meta.url));

process.exitCode = await runInstallEntry({
  argv: process.argv.slice(2),
  hot: resolve(here, '..'),
  defaultRoot: resolve(here, '..', '..'),
  crash: testCrashHook(process.env.CPLANE_TEST_CRASH_AT),
});
