#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/cplane.js <command> …` runs the code installed in this root.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../cli/main.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.exitCode = await runCli({ argv: process.argv.slice(2), defaultRoot: root });
