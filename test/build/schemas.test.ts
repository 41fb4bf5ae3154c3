import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

// The kernel validates with its own copies (it is installed before PKG-SCHEMAS-001); they must not drift.
const copies: Array<[string, string]> = [
  ['staging/PKG-KERNEL-001/HOT/kernel/manifest/manifest.schema.json', 'staging/PKG-SCHEMAS-001/HOT/schemas/manifest.schema.json'],
  ['staging/PKG-KERNEL-001/HOT/kernel/manifest/bootstrap.schema.json', 'staging/PKG-SCHEMAS-001/HOT/schemas/bootstrap.schema.json'],
  ['staging/PKG-KERNEL-001/HOT/kernel/signing/signature.schema.json', 'staging/PKG-SCHEMAS-001/HOT/schemas/signature.schema.json'],
  ['staging/PKG-KERNEL-001/HOT/kernel/signing/trust.schema.json', 'staging/PKG-SCHEMAS-001/HOT/schemas/trust.schema.json'],
];
for (const [kernel, shipped] of copies) {
  test(`${shipped} is byte-identical to the kernel's copy`, () => {
    assert.equal(readFileSync(join(REPO, shipped), 'utf8'), readFileSync(join(REPO, kernel), 'utf8'));
  });
}
