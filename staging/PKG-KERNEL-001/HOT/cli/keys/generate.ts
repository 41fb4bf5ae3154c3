import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { withEnvErrors } from '../../kernel/env-errors.js';
import { CpError, show } from '../../kernel/errors.js';
import { generateSigningKeyPair } from '../../kernel/signing/index.js';
import { defineCommand, EXIT } from '../command.js';

export const PRIVATE_KEY_FILE = 'cplane-signing.key';
export const PUBLIC_KEY_FILE = 'cplane-signing.pub';

export default defineCommand({
  name: 'generate',
  describe: 'write a new ed25519 signing key pair (cplane-signing.key, 0600, and cplane-signing.pub)',
  options: {
    out: { type: 'string', describe: 'directory for cplane-signing.key and .pub (default .)' },
    force: { type: 'boolean', describe: 'replace an existing key pair' },
  },
  examples: [['cplane keys generate --out ~/.cplane', 'write cplane-signing.key (0600) and cplane-signing.pub']],
  handler(args, ctx) {
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
    return EXIT.OK;
  },
});
