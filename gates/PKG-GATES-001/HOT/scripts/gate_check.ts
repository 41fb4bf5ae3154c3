#!/usr/bin/env node
// `node ROOT/HOT/scripts/gate_check.js --root ROOT --all`: the root checks itself with its installed gates.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../cli/main.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.exitCode = await runCli({ argv: process.argv.slice(2), prefix: ['gate-check'], defaultRoot: root });
