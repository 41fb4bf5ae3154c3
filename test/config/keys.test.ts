// Route keys on a real signed root through the root's CLI: `token issue` names each key (jti) and its scopes,
// `token revoke` adds it to the root's list (KEY_REVOKED) and the next route refuses it with a PROMPT_REJECTED
// while other keys still route, and a list that was tampered with refuses every key instead of allowing all.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapSignedRoot } from '../lib/signed-root.js';

const work = mkdtempSync(join(tmpdir(), 'cp-keys-'));
const pristine = join(work, 'pristine');
const SECRET = 'keys-test-auth-secret-0123456789';
let caseNo = 0;

before(() => bootstrapSignedRoot(work, pristine));
after(() => rmSync(work, { recursive: true, force: true }));

function copyRoot(): string {
  caseNo += 1;
  const root = join(work, `case-${caseNo}`);
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  return root;
}

function cp(root: string, args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'HOT', 'scripts', 'cplane.js'), ...args], {
    cwd: tmpdir(),
    encoding: 'utf8',
    env: { ...process.env, CPLANE_AUTH_SECRET: SECRET },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function issue(
  root: string,
  extra: string[] = [],
): { token: string; claims: { jti: string; scopes: string[]; budget_scope?: string } } {
  const r = cp(root, ['token', 'issue', '--agent', 'A1', ...extra, '--json']);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof issue>;
}

function route(
  root: string,
  token: string,
  extra: string[] = [],
): { outcome: string; error_code: string | null; exchange_entry_id: string } {
  const r = cp(root, [
    'route',
    '--root',
    root,
    '--prompt',
    'hi',
    '--agent',
    'A1',
    '--token',
    token,
    ...extra,
    '--json',
  ]);
  return JSON.parse(r.stdout) as ReturnType<typeof route>;
}

function entries(root: string, type: string): Array<{ id: string; metadata: Record<string, unknown> }> {
  return JSON.parse(cp(root, ['ledger', 'query', '--root', root, '--event-type', type, '--json']).stdout) as ReturnType<
    typeof entries
  >;
}

test('issue, revoke, list-revoked: a revoked key is refused by route() with PROMPT_REJECTED, an unrevoked one still routes', () => {
  const root = copyRoot();
  const a = issue(root, ['--scope', 'model:mock-model-1', '--budget-scope', 'team-a']);
  assert.match(a.claims.jti, /^[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(a.claims.scopes, ['route:*', 'model:mock-model-1']);
  assert.equal(a.claims.budget_scope, 'team-a');
  const b = issue(root);
  assert.notEqual(a.claims.jti, b.claims.jti);
  assert.equal(route(root, a.token).outcome, 'success');
  assert.equal(route(root, a.token, ['--model', 'mock-model-2']).error_code, 'AUTH_MODEL_SCOPE');

  const revoked = cp(root, [
    'token',
    'revoke',
    '--root',
    root,
    '--key-id',
    a.claims.jti,
    '--reason',
    'laptop lost',
    '--json',
  ]);
  assert.equal(revoked.status, 0, revoked.stderr);
  const refused = route(root, a.token);
  assert.equal(refused.outcome, 'rejected');
  assert.equal(refused.error_code, 'AUTH_REVOKED');
  const rejections = entries(root, 'PROMPT_REJECTED');
  assert.equal(rejections[0]?.id, refused.exchange_entry_id);
  assert.equal(rejections[0]?.metadata.error_code, 'AUTH_REVOKED');
  assert.equal(route(root, b.token).outcome, 'success');

  // Revoking by the token itself names the same key; doing it twice changes nothing.
  const again = JSON.parse(cp(root, ['token', 'revoke', '--root', root, '--token', a.token, '--json']).stdout) as {
    key_id: string;
    changed: boolean;
  };
  assert.deepEqual([again.key_id, again.changed], [a.claims.jti, false]);
  const listed = JSON.parse(cp(root, ['token', 'list-revoked', '--root', root, '--json']).stdout) as {
    revoked: Array<{ key_id: string; reason: string }>;
  };
  assert.deepEqual(
    listed.revoked.map((e) => [e.key_id, e.reason]),
    [[a.claims.jti, 'laptop lost']],
  );
  const records = entries(root, 'KEY_REVOKED');
  assert.equal(records.length, 1);
  assert.equal(records[0]?.metadata.key_id, a.claims.jti);
  const exported = cp(root, ['ledger', 'export', '--root', root]).stdout;
  assert.equal(
    exported.includes(a.token) || exported.includes(b.token) || exported.includes(SECRET),
    false,
    'no token or secret reaches the ledger',
  );
});

test('revoke refuses what is not a token or a key id, and writes nothing', () => {
  const root = copyRoot();
  for (const args of [
    ['--token', 'not-a-token'],
    ['--key-id', '*'],
    ['--key-id', 'sha256:abc'],
  ]) {
    const r = cp(root, ['token', 'revoke', '--root', root, ...args]);
    assert.equal(r.status, 3, args.join(' '));
    assert.match(r.stderr, /ERR_TOKEN_INVALID: /);
    assert.equal(r.stderr.includes('not-a-token'), false, 'a token is never echoed');
  }
  assert.equal(cp(root, ['token', 'revoke', '--root', root]).status, 2);
  assert.deepEqual(entries(root, 'KEY_REVOKED'), []);
});

test('a revoked key stays revoked when its entry, or the whole list, is deleted: the ledger recorded KEY_REVOKED', () => {
  const root = copyRoot();
  const a = issue(root);
  const b = issue(root);
  assert.equal(cp(root, ['token', 'revoke', '--root', root, '--key-id', a.claims.jti]).status, 0);
  assert.equal(route(root, a.token).error_code, 'AUTH_REVOKED');
  const list = join(root, 'HOT', 'registries', 'revoked-keys.json');
  writeFileSync(list, `${JSON.stringify({ schema_version: '1', revoked: [] })}\n`);
  assert.equal(route(root, a.token).error_code, 'AUTH_REVOKED', 'the entry was deleted from the list');
  rmSync(list);
  assert.equal(route(root, a.token).error_code, 'AUTH_REVOKED', 'the list was deleted');
  assert.equal(route(root, b.token).outcome, 'success');
});

test('a tampered revocation list refuses every key with a code, never allows all; a link there refuses the root', () => {
  const root = copyRoot();
  const key = issue(root);
  const list = join(root, 'HOT', 'registries', 'revoked-keys.json');
  assert.equal(cp(root, ['token', 'revoke', '--root', root, '--key-id', 'ZZZZZZZZZZZZZZZZZZZZZZ']).status, 0);
  assert.equal(route(root, key.token).outcome, 'success');
  writeFileSync(list, '{"schema_version": "1", "revoked": [');
  assert.equal(route(root, key.token).error_code, 'AUTH_REVOCATION_LIST_INVALID');
  const listRun = cp(root, ['token', 'list-revoked', '--root', root]);
  assert.equal(listRun.status, 3);
  assert.match(listRun.stderr, /ERR_REVOCATION_LIST_INVALID/);
  assert.match(
    cp(root, ['token', 'revoke', '--root', root, '--key-id', 'YYYYYYYYYYYYYYYYYYYYYY']).stderr,
    /ERR_REVOCATION_LIST_INVALID/,
  );
  writeFileSync(list, JSON.stringify({ schema_version: '1', revoked: {} }));
  assert.equal(route(root, key.token).error_code, 'AUTH_REVOCATION_LIST_INVALID');
  const gate = spawnSync(
    process.execPath,
    [join(root, 'HOT', 'scripts', 'gate_check.js'), '--root', root, '--gate', 'G3', '--json'],
    { encoding: 'utf8' },
  );
  const g3 = (
    JSON.parse(gate.stdout) as { gates: Array<{ id: string; status: string; findings: Array<{ code: string }> }> }
  ).gates[0];
  assert.deepEqual([g3?.status, g3?.findings.map((f) => f.code)], ['FAIL', ['REVOCATION_LIST_INVALID']]);
  rmSync(list);
  const outside = join(work, `outside-${caseNo}.json`);
  writeFileSync(outside, JSON.stringify({ schema_version: '1', revoked: [] }));
  symlinkSync(outside, list);
  const linked = cp(root, ['route', '--root', root, '--prompt', 'hi', '--agent', 'A1', '--token', key.token]);
  assert.equal(linked.status, 3);
  assert.match(linked.stderr, /ERR_ROOT_SYMLINK: "HOT\/registries\/revoked-keys\.json"/);
  assert.equal(readFileSync(outside, 'utf8'), JSON.stringify({ schema_version: '1', revoked: [] }));
});

test('the signing secret can come from a file the operator config names: token issue --root and route() both use it', () => {
  const root = copyRoot();
  const secretFile = join(work, `auth-secret-${caseNo}`);
  writeFileSync(secretFile, 'a-secret-kept-in-a-file-0123456789\n');
  const before = issue(root);
  assert.equal(cp(root, ['config', 'set', 'router.auth.secret_file', secretFile, '--root', root]).status, 0);
  const fromFile = JSON.parse(cp(root, ['token', 'issue', '--root', root, '--agent', 'A1', '--json']).stdout) as {
    token: string;
  };
  assert.equal(route(root, fromFile.token).outcome, 'success');
  // A token signed with the environment's secret no longer verifies: the configured source wins.
  assert.equal(route(root, before.token).error_code, 'AUTH_BAD_SIGNATURE');
  assert.equal(cp(root, ['ledger', 'export', '--root', root]).stdout.includes('a-secret-kept-in-a-file'), false);
});
