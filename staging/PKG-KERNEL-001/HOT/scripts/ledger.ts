#!/usr/bin/env node
// Root entry: `node ROOT/HOT/scripts/ledger.js verify|query|… ` runs this root's ledger commands.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../cli/main.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.exitCode = await runCli({ argv: process.argv.slice(2), prefix: ['ledger'], defaultRoot: root });
