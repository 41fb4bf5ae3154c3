// The CP_BOOTSTRAP build ships only what the layer-0 installer can load: its import graph over the packed files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ImportReach } from '../../scripts/build/reach.js';

const tree = (files: Record<string, string>): Map<string, Buffer> =>
  new Map(Object.entries(files).map(([p, t]) => [p, Buffer.from(t)]));

test('ESM, CJS, exports under every condition, data URLs, scope package.json files and native addons are reached', () => {
  const reached = new ImportReach(
    tree({
      'HOT/package.json': '{"type":"module"}',
      'HOT/scripts/install.js': "import { a } from '../kernel/a.js';\nimport 'node:fs';\nimport fs from 'fs';",
      'HOT/kernel/a.js':
        "import{p}from\"tar/parse\";import Database from 'better-sqlite3';export const s = new URL('./s.json', import.meta.url);\n// require('not-installed')",
      'HOT/kernel/s.json': '{}',
      'HOT/kernel/unused.js': "import 'semver';",
      'HOT/node_modules/tar/package.json': JSON.stringify({
        exports: {
          './parse': { import: './dist/esm/parse.js', require: './dist/cjs/parse.js' },
          '.': './dist/esm/index.js',
        },
      }),
      'HOT/node_modules/tar/dist/esm/package.json': '{"type":"module"}',
      'HOT/node_modules/tar/dist/esm/parse.js': "import { Minipass } from 'minipass';",
      'HOT/node_modules/tar/dist/esm/index.js': '',
      'HOT/node_modules/tar/dist/cjs/parse.js': "require('./header')",
      'HOT/node_modules/tar/dist/cjs/header.js': '',
      'HOT/node_modules/minipass/package.json': '{"main":"lib/index.js"}',
      'HOT/node_modules/minipass/lib/index.js': '',
      'HOT/node_modules/better-sqlite3/package.json': '{"main":"lib/index.js"}',
      'HOT/node_modules/better-sqlite3/lib/index.js': "module.exports = require('bindings')('addon.node');",
      'HOT/node_modules/better-sqlite3/build/Release/addon.node': 'ELF',
      'HOT/node_modules/bindings/package.json': '{"main":"./bindings.js"}',
      'HOT/node_modules/bindings/bindings.js': '',
      'HOT/node_modules/semver/package.json': '{}',
      'HOT/node_modules/semver/index.js': '',
    }),
  ).from('HOT/scripts/install.js');
  assert.deepEqual([...reached].sort(), [
    'HOT/kernel/a.js',
    'HOT/kernel/s.json',
    'HOT/node_modules/better-sqlite3/build/Release/addon.node',
    'HOT/node_modules/better-sqlite3/lib/index.js',
    'HOT/node_modules/better-sqlite3/package.json',
    'HOT/node_modules/bindings/bindings.js',
    'HOT/node_modules/bindings/package.json',
    'HOT/node_modules/minipass/lib/index.js',
    'HOT/node_modules/minipass/package.json',
    'HOT/node_modules/tar/dist/cjs/header.js',
    'HOT/node_modules/tar/dist/cjs/parse.js',
    'HOT/node_modules/tar/dist/esm/package.json',
    'HOT/node_modules/tar/dist/esm/parse.js',
    'HOT/node_modules/tar/package.json',
    'HOT/package.json',
    'HOT/scripts/install.js',
  ]);
});

test('a nested node_modules wins over the outer one, as in Node', () => {
  const reached = new ImportReach(
    tree({
      'HOT/x.js': "require('dep')",
      'HOT/node_modules/dep/index.js': '',
      'HOT/node_modules/outer/index.js': "require('dep')",
      'HOT/node_modules/outer/node_modules/dep/index.js': '',
      'HOT/y.js': "require('outer')",
    }),
  ).from('HOT/y.js');
  assert.deepEqual([...reached].sort(), [
    'HOT/node_modules/outer/index.js',
    'HOT/node_modules/outer/node_modules/dep/index.js',
    'HOT/y.js',
  ]);
});
