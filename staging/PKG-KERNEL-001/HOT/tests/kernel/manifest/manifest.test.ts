import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MANIFEST_SCHEMA,
  validateManifest,
  parseManifest,
  isReservedPath,
  unsafePathReason,
  memberName,
} from '../../../kernel/manifest/index.js';
import { manifestFor } from '../archive/tar-fixture.js';

const valid = (): Record<string, unknown> =>
  manifestFor([{ path: 'HOT/kernel/a.js', data: 'a' }], {
    dependencies: [{ package_id: 'PKG-KERNEL-001', version: '^0.1.0' }],
    replaces: ['PKG-OLD-001'],
    platform: { os: 'linux', cpu: 'x64', node_abi: '115' },
  });

function pointers(value: unknown, strict = true): string[] {
  try {
    validateManifest(value, { strict });
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ERR_MANIFEST_INVALID');
    return (error as { details: { errors: Array<{ pointer: string }> } }).details.errors.map((e) => e.pointer);
  }
  return [];
}

test('a complete manifest validates and comes back unchanged', () => {
  const value = valid();
  const { manifest, warnings } = validateManifest(value);
  assert.equal(manifest, value);
  assert.deepEqual(warnings, []);
});

test('schema errors carry JSON pointers to each offending field', () => {
  const m = valid();
  m.package_id = 'kernel';
  m.layer = 4;
  (m.assets as Array<Record<string, unknown>>)[0]!.sha256 = 'md5:abc';
  (m.assets as Array<Record<string, unknown>>)[0]!.classification = 'binary';
  delete m.title;
  assert.deepEqual(
    pointers(m).sort(),
    ['/assets/0/classification', '/assets/0/sha256', '/layer', '/package_id', '/title'].sort(),
  );
});

test('unknown fields: errors when strict, warnings when not, at any depth', () => {
  const m = valid();
  m.spec_id = 'SPEC-1';
  (m.assets as Array<Record<string, unknown>>)[0]!.mode = 493;
  assert.deepEqual(pointers(m).sort(), ['/assets/0/mode', '/spec_id']);
  const { warnings } = validateManifest(m, { strict: false });
  assert.deepEqual(warnings.map((w) => `${w.code} ${w.message}`).sort(), [
    'MANIFEST_UNKNOWN_FIELD /assets/0/mode: unknown field "mode"',
    'MANIFEST_UNKNOWN_FIELD /spec_id: unknown field "spec_id"',
  ]);
});

test('semantic rules: semver version and ranges, no self-dependency, unique and safe asset paths', () => {
  const m = valid();
  m.version = '1.0.0.0';
  assert.deepEqual(pointers(m), ['/version']);
  const r = valid();
  r.dependencies = [
    { package_id: 'PKG-FIXTURE-001', version: '>=1' },
    { package_id: 'PKG-KERNEL-001', version: 'not a range' },
    { package_id: 'PKG-KERNEL-001', version: '1' },
  ];
  r.replaces = ['PKG-FIXTURE-001'];
  assert.deepEqual(pointers(r), [
    '/dependencies/0/package_id',
    '/dependencies/1/version',
    '/dependencies/2/package_id',
    '/replaces/0',
  ]);
  const a = valid();
  const asset = (a.assets as Array<Record<string, unknown>>)[0]!;
  a.assets = [
    asset,
    { ...asset },
    { ...asset, path: 'HOT/KERNEL/a.js' },
    { ...asset, path: 'HOT/kernel/../../x' },
    { ...asset, path: 'HOT/installed/PKG-X-001/receipt.json' },
    { ...asset, path: 'HOT/registries/trust.json' },
  ];
  assert.deepEqual(pointers(a), [
    '/assets/1/path',
    '/assets/2/path',
    '/assets/3/path',
    '/assets/4/path',
    '/assets/5/path',
  ]);
});

test('parseManifest reports non-JSON bytes with the root pointer', () => {
  assert.throws(
    () => parseManifest(Buffer.from('{')),
    (e: { code: string; details: { errors: Array<{ pointer: string }> } }) =>
      e.code === 'ERR_MANIFEST_INVALID' && e.details.errors[0]?.pointer === '',
  );
  assert.throws(() => validateManifest(null), { code: 'ERR_MANIFEST_INVALID' });
  assert.throws(() => validateManifest([]), { code: 'ERR_MANIFEST_INVALID' });
});

test('path helpers: ./ prefix dropped once, unsafe forms named, reserved state paths', () => {
  assert.equal(memberName('./manifest.json', false), 'manifest.json');
  assert.equal(memberName('././x', false), './x');
  assert.equal(unsafePathReason(memberName('././x', false)), '"." segment');
  assert.equal(memberName('HOT/kernel/', true), 'HOT/kernel');
  assert.equal(unsafePathReason('C:/x'), 'drive-letter path');
  assert.equal(unsafePathReason('a\0b'), 'NUL byte in path');
  assert.equal(unsafePathReason(''), 'empty path');
  assert.equal(unsafePathReason('HOT/kernel/a.js'), null);
  assert.equal(isReservedPath('HOT/ledger/ledger.sqlite'), true);
  assert.equal(isReservedPath('HOT/registries/trust.json'), true);
  assert.equal(isReservedPath('HOT/registries/routes.json'), false);
});

test('the manifest schema requires the documented fields', () => {
  assert.deepEqual(MANIFEST_SCHEMA.required, [
    'package_id',
    'version',
    'schema_version',
    'title',
    'description',
    'layer',
    'plane_id',
    'dependencies',
    'replaces',
    'assets',
  ]);
});
