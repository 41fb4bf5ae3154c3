// The README's error table is the contract users read: every code the code can raise is listed there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const abs = join(dir, name);
    if (statSync(abs).isDirectory()) return name === 'tests' || name === 'node_modules' ? [] : sources(abs);
    return name.endsWith('.ts') ? [abs] : [];
  });
}

test('every ERR_ code raised by a package, a script or the bin is documented in the README', async () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const files = [
    ...sources(join(REPO, 'staging')),
    ...sources(join(REPO, 'gates')),
    ...sources(join(REPO, 'scripts')),
    ...sources(join(REPO, 'bootstrap')),
    join(REPO, 'bin', 'cplane.js'),
  ];
  const codes = new Set<string>();
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(/['`](ERR_[A-Z0-9_]*[A-Z0-9])['`:]/g))
      codes.add(match[1] as string);
  }
  const { PROVIDER_ERROR_KINDS } =
    await fromDevRoot<typeof import('../../staging/PKG-PROVIDER-SPEC-001/HOT/providers/errors.js')>(
      'HOT/providers/errors.js',
    );
  for (const kind of PROVIDER_ERROR_KINDS) codes.add(`ERR_PROVIDER_${kind.toUpperCase()}`);
  assert.ok(codes.size > 40, `found only ${codes.size} codes: the scan is broken`);
  const missing = [...codes].filter((code) => !readme.includes(`\`${code}\``)).sort();
  assert.deepEqual(missing, [], `README.md does not document: ${missing.join(', ')}`);
});
