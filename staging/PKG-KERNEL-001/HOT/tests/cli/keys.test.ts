import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../cli/main.js';
import { scratch } from '../kernel/archive/tar-fixture.js';

async function cli(argv: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    cwd,
    env: {},
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}

test('keys generate writes a 0600 private key and a public key; trust and list use the root trust store', async (t) => {
  const s = scratch(t);
  const gen = await cli(['keys', 'generate', '--out', 'keys', '--json'], s.dir);
  assert.equal(gen.code, 0, gen.err);
  const made = JSON.parse(gen.out) as { key_id: string; private_key: string; public_key: string };
  assert.equal(made.private_key, join(s.dir, 'keys', 'cplane-signing.key'));
  assert.equal(statSync(made.private_key).mode & 0o777, 0o600);
  assert.match(readFileSync(made.public_key, 'utf8'), /^-----BEGIN PUBLIC KEY-----/);

  const again = await cli(['keys', 'generate', '--out', 'keys'], s.dir);
  assert.equal(again.code, 3);
  assert.match(again.err, /ERR_KEY_EXISTS/);

  const root = join(s.dir, 'root');
  const empty = await cli(['keys', 'list', '--root', root, '--json'], s.dir);
  assert.deepEqual((JSON.parse(empty.out) as { keys: unknown[] }).keys, []);
  const trusted = await cli(['keys', 'trust', '--root', root, made.public_key, '--json'], s.dir);
  assert.equal(trusted.code, 0, trusted.err);
  assert.equal((JSON.parse(trusted.out) as { key_id: string; added: boolean }).added, true);
  const twice = await cli(['keys', 'trust', '--root', root, made.public_key], s.dir);
  assert.match(twice.out, /already trusted/);
  const listed = await cli(['keys', 'list', '--root', root], s.dir);
  assert.match(listed.out, new RegExp(made.key_id));
});

test('keys refuses a private key given as a public key, a missing file, and trust without a root', async (t) => {
  const s = scratch(t);
  await cli(['keys', 'generate', '--out', '.'], s.dir);
  const wrong = await cli(['keys', 'trust', '--root', 'r', 'cplane-signing.key', '--json'], s.dir);
  assert.equal(wrong.code, 3);
  assert.equal((JSON.parse(wrong.out) as { error: { code: string } }).error.code, 'ERR_KEY_INVALID');
  assert.equal((await cli(['keys', 'trust', '--root', 'r', 'absent.pub'], s.dir)).code, 3);
  assert.equal((await cli(['keys', 'trust', 'cplane-signing.pub'], s.dir)).code, 2);
  assert.equal((await cli(['keys', 'trust', '--root', 'r'], s.dir)).code, 2);
  assert.equal((await cli(['keys', 'rotate'], s.dir)).code, 2);
});
