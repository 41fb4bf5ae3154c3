import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROLES } from '#compiler/roles.js';
import { DISPATCH_ROLES } from '../../dispatch/compiler-port.js';

const HOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test("dispatch's roles and the dispatch-results schema's role enum are the compiler's ROLES", () => {
  assert.deepEqual(DISPATCH_ROLES, ROLES);
  const schema = JSON.parse(readFileSync(join(HOT, 'schemas', 'dispatch-results.schema.json'), 'utf8')) as unknown;
  const enums: unknown[] = [];
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    const role = (node as { properties?: { role?: { enum?: unknown } } }).properties?.role;
    if (role?.enum !== undefined) enums.push(role.enum);
    for (const child of Object.values(node)) visit(child);
  };
  visit(schema);
  assert.ok(enums.length > 0, 'the schema names the role');
  for (const found of enums) assert.deepEqual(found, [...ROLES]);
});
