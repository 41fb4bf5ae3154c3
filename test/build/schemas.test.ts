import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import {
  BOOTSTRAP_SCHEMA,
  MANIFEST_SCHEMA,
  compileSchemaFile,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import { SIGNATURE_SCHEMA } from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/signature-schema.js';
import { TRUST_SCHEMA } from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/trust-schema.js';
import { CHECKPOINT_SCHEMA } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/checkpoint-schema.js';

// The kernel embeds these schemas (it validates before PKG-SCHEMAS-001 is installed); the shipped files must not drift.
const copies: Array<[string, unknown]> = [
  ['manifest.schema.json', MANIFEST_SCHEMA],
  ['bootstrap.schema.json', BOOTSTRAP_SCHEMA],
  ['signature.schema.json', SIGNATURE_SCHEMA],
  ['trust.schema.json', TRUST_SCHEMA],
  ['checkpoint.schema.json', CHECKPOINT_SCHEMA],
];
for (const [file, embedded] of copies) {
  test(`PKG-SCHEMAS-001 HOT/schemas/${file} equals the kernel's embedded schema`, () => {
    assert.deepEqual(
      JSON.parse(readFileSync(join(REPO, 'staging', 'PKG-SCHEMAS-001', 'HOT', 'schemas', file), 'utf8')),
      embedded,
    );
  });
}

test('every shipped schema compiles under ajv strict mode (compileSchemaFile)', () => {
  for (const [file] of copies) {
    const check = compileSchemaFile(join(REPO, 'staging', 'PKG-SCHEMAS-001', 'HOT', 'schemas', file));
    assert.ok(check({}).length > 0, `${file} rejects an empty object`);
  }
});
