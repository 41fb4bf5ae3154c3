// rootStoreUrl: the flag, then CPLANE_DATABASE_URL, then the root's effective gateway.store (default merged with
// the operator's override), then SQLite (null); an empty value is no choice at every level.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootStoreUrl } from '../../../kernel/config/root-store.js';

const FLAG = 'postgres://flag@h/db';
const ENV = 'postgres://env@h/db';
const CONFIG = 'postgres://config@h/db';

function fakeRoot(gateway: Record<string, unknown> | null, override?: Record<string, unknown>): string {
  const root = mkdtempSync(join(tmpdir(), 'cp-root-store-'));
  mkdirSync(join(root, 'HOT', 'config'), { recursive: true });
  mkdirSync(join(root, 'HOT', 'registries'), { recursive: true });
  if (gateway !== null) writeFileSync(join(root, 'HOT', 'config', 'gateway.json'), JSON.stringify(gateway));
  if (override !== undefined)
    writeFileSync(
      join(root, 'HOT', 'registries', 'operator-config.json'),
      JSON.stringify({ schema_version: '1', overrides: { gateway: override } }),
    );
  return root;
}

test('the flag wins, then a non-empty CPLANE_DATABASE_URL, then the config, then SQLite', () => {
  const root = fakeRoot({ port: 8080 }, { store: CONFIG });
  try {
    assert.equal(rootStoreUrl(root, { CPLANE_DATABASE_URL: ENV }, FLAG), FLAG);
    assert.equal(rootStoreUrl(root, { CPLANE_DATABASE_URL: ENV }, ''), ENV);
    assert.equal(rootStoreUrl(root, { CPLANE_DATABASE_URL: '' }, undefined), CONFIG);
    assert.equal(rootStoreUrl(root, {}), CONFIG);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('no gateway.store, or no gateway package at all: SQLite (null)', () => {
  for (const root of [fakeRoot({ port: 8080 }), fakeRoot(null)]) {
    try {
      assert.equal(rootStoreUrl(root, {}), null);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
});

test('a gateway.store that is not a string is refused with ERR_STORE_URL', () => {
  const root = fakeRoot({ store: 42 });
  try {
    assert.throws(() => rootStoreUrl(root, {}), { code: 'ERR_STORE_URL' });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
