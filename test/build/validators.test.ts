import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { COMPILED_VALIDATORS, compiledValidatorsSource } from '../../scripts/build/validators.js';
import { AJV_OPTIONS, type CompiledValidator } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/schema-issues.js';
import { MANIFEST_SCHEMA } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/manifest-schema.js';
import { validateManifestSchema as compiled } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/compiled-validators.js';

const validateManifestSchema: CompiledValidator = compiled;

test("the kernel's ahead-of-time validators are what ajv generates from the current schemas", () => {
  assert.equal(
    readFileSync(COMPILED_VALIDATORS, 'utf8'),
    compiledValidatorsSource(),
    'compiled-validators.ts is stale: run `npm run build && node build/tsc/scripts/build/write-validators.js`',
  );
});

test('the compiled manifest validator reports the same errors as ajv compiling the schema at run time', () => {
  const runtime = new Ajv(AJV_OPTIONS).compile(MANIFEST_SCHEMA);
  const samples: unknown[] = [
    {},
    null,
    [],
    { package_id: 'nope', version: 1, extra: true },
    {
      package_id: 'PKG-A-001',
      version: '1.0.0',
      schema_version: '1.0',
      title: '',
      description: 'd',
      layer: 9,
      plane_id: 'hot',
      dependencies: [{}],
      replaces: ['x'],
      assets: [{ path: 'HOT/a', sha256: 'md5:1', size: -1, classification: 'nope' }],
    },
  ];
  for (const sample of samples) {
    assert.equal(validateManifestSchema(sample), runtime(sample));
    assert.deepEqual(validateManifestSchema.errors ?? null, runtime.errors ?? null);
  }
});
