#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/cplane.js <command> …` runs the code installed in this root, every
// module checked against what the root's packages own before it runs.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEntry, verifyModuleLoading } from '../kernel/loader/register.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
verifyModuleLoading(root);
process.exitCode = await runEntry(async () => {
  const { runCli } = await import('../cli/main.js');
  return runCli({ argv: process.argv.slice(2), defaultRoot: root });
});
