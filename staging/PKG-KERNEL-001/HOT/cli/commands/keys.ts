// `cplane keys generate --out DIR | trust --root R PUBFILE | list --root R`: ed25519 signing keys and a root's trust store.
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { CpError, show } from '../../kernel/errors.js';
import { withEnvErrors } from '../../kernel/env-errors.js';
import { READ_LIMITS, readTextBounded } from '../../kernel/bounded-read.js';
import { generateSigningKeyPair, readTrustStore, trustKey, trustStorePath } from '../../kernel/signing/index.js';
import { defineCommand, type CliContext } from '../command.js';
import { resolveRoot } from '../root-option.js';

export const PRIVATE_KEY_FILE = 'cplane-signing.key';
export const PUBLIC_KEY_FILE = 'cplane-signing.pub';

interface KeysArgs {
  action?: string;
  out?: string;
  root?: string;
  pubfile?: string;
  force?: boolean;
  'may-replace'?: string[];
}

function generate(args: KeysArgs & { json?: boolean }, ctx: CliContext): number {
  const dir = resolve(ctx.cwd, args.out ?? '.');
  const privatePath = join(dir, PRIVATE_KEY_FILE);
  const publicPath = join(dir, PUBLIC_KEY_FILE);
  if (!args.force && (existsSync(privatePath) || existsSync(publicPath))) {
    throw new CpError('ERR_KEY_EXISTS', `${show(privatePath)} or its .pub already exists`, {
      hint: 'choose another --out directory, or pass --force to replace the key pair',
      details: { path: privatePath },
    });
  }
  const pair = generateSigningKeyPair();
  try {
    withEnvErrors(dir, 'writing the key pair', () => {
      mkdirSync(dir, { recursive: true });
      // The private key is created 0600 (not chmod-ed after the fact), so it is never readable by others.
      writeFileSync(privatePath, pair.private_key_pem, { mode: 0o600, flag: args.force ? 'w' : 'wx' });
      chmodSync(privatePath, 0o600);
      writeFileSync(publicPath, pair.public_key_pem, { mode: 0o644 });
    });
  } catch (error) {
    // Neither file existed before (checked above): a half-written pair is removed, not left to be trusted.
    if (!args.force) for (const path of [privatePath, publicPath]) rmSync(path, { force: true });
    throw error;
  }
  ctx.report(args, { key_id: pair.key_id, private_key: privatePath, public_key: publicPath }, [
    `generated ${pair.key_id}`,
    `  private key ${privatePath} (0600; keep it secret, pass it to cplane build --sign-key)`,
    `  public key  ${publicPath} (trust it in a root: cplane keys trust --root R ${publicPath})`,
  ]);
  return 0;
}

function trust(args: KeysArgs & { json?: boolean }, ctx: CliContext): number {
  const root = resolveRoot(args.root, ctx);
  if (!args.pubfile)
    throw new CpError('ERR_USAGE', 'keys trust needs the public key file', {
      hint: 'cplane keys trust --root R cplane-signing.pub',
    });
  const file = resolve(ctx.cwd, args.pubfile);
  const pem = readTextBounded(file, {
    maxBytes: READ_LIMITS.key,
    what: 'the public key',
    unreadableCode: 'ERR_KEY_INVALID',
    unreadableHint: 'pass the .pub file written by `cplane keys generate`',
  });
  const before = readTrustStore(root).length;
  const entry = trustKey(root, pem, { mayReplace: (args['may-replace'] ?? []).map(String) });
  const added = readTrustStore(root).length > before;
  const replaces = entry.may_replace?.length ? `; may replace ${entry.may_replace.join(', ')}` : '';
  ctx.report(
    args,
    { ...entry, added, trust_store: trustStorePath(root) },
    `${added ? 'trusted' : 'already trusted'} ${entry.key_id} in ${trustStorePath(root)}${replaces}`,
  );
  return 0;
}

function list(args: KeysArgs & { json?: boolean }, ctx: CliContext): number {
  const root = resolveRoot(args.root, ctx);
  const keys = readTrustStore(root);
  ctx.report(
    args,
    { trust_store: trustStorePath(root), keys },
    keys.length === 0
      ? `no trusted keys in ${trustStorePath(root)}`
      : keys.map(
          (k) =>
            `${k.key_id}  added ${k.added_at}${k.role === 'checkpoint' ? '  (root key: checkpoints only)' : ''}${k.may_replace?.length ? `  may replace ${k.may_replace.join(', ')}` : ''}`,
        ),
  );
  return 0;
}

export default defineCommand<KeysArgs>({
  command: 'keys <action> [pubfile]',
  describe: "signing keys: generate a pair, trust a public key in a root, list a root's trusted keys",
  builder: (y: Argv) =>
    y
      .positional('action', { choices: ['generate', 'trust', 'list'] as const, describe: 'generate | trust | list' })
      .positional('pubfile', { type: 'string', describe: 'public key file (trust)' })
      .option('out', { type: 'string', describe: 'generate: directory for cplane-signing.key and .pub (default .)' })
      .option('force', { type: 'boolean', describe: 'generate: replace an existing key pair' })
      .option('root', { type: 'string', describe: 'trust/list: the root whose trust store to use' })
      .option('may-replace', {
        type: 'string',
        array: true,
        describe: 'trust: package ids this key may take over (replaces/upgrade) although another key signed them',
      })
      .example('cplane keys generate --out ~/.cplane', 'write cplane-signing.key (0600) and cplane-signing.pub')
      .example('cplane keys trust --root R ~/.cplane/cplane-signing.pub', 'trust the key in root R')
      .example(
        'cplane keys trust --root R vendor.pub --may-replace PKG-ROUTER-001',
        "let vendor.pub's packages take over PKG-ROUTER-001's files",
      ) as unknown as Argv<KeysArgs>,
  run(args, ctx) {
    switch (args.action) {
      case 'generate':
        return generate(args, ctx);
      case 'trust':
        return trust(args, ctx);
      default:
        return list(args, ctx);
    }
  },
});
