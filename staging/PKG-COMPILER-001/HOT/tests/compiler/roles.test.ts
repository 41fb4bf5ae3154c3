import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROLES } from '../../compiler/roles.js';

const HOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test("the prompt-spec schema's role enum is compiler/roles.ts's ROLES, and every role ships its template", () => {
  const schema = JSON.parse(readFileSync(join(HOT, 'schemas', 'prompt-spec.schema.json'), 'utf8')) as {
    properties: { role: { enum: unknown } };
  };
  assert.deepEqual(schema.properties.role.enum, [...ROLES]);
  for (const role of ROLES) assert.ok(existsSync(join(HOT, 'compiler', 'roles', `${role}.md`)), role);
});
