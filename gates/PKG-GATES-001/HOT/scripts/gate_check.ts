#!/usr/bin/env node
// `node ROOT/HOT/scripts/gate_check.js --root ROOT --all`: the root checks itself with its installed gates,
// every module checked against what the root's packages own before it runs (a refused gate module is
// reported as that gate's FAIL, not run).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEntry, verifyModuleLoading } from '#kernel/loader/register.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
verifyModuleLoading(root);
process.exitCode = await runEntry(async () => {
  const { runCli } = await import('#cli/main.js');
  return runCli({ argv: process.argv.slice(2), prefix: ['gate-check'], defaultRoot: root });
});
