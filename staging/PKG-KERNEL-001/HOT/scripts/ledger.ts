#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/ledger.js verify|query|… ` runs this root's ledger commands (verified
// module loading, as in cplane.js).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEntry, verifyModuleLoading } from '../kernel/loader/register.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
verifyModuleLoading(root);
process.exitCode = await runEntry(async () => {
  const { runCli } = await import('../cli/main.js');
  return runCli({ argv: process.argv.slice(2), prefix: ['ledger'], defaultRoot: root });
});
