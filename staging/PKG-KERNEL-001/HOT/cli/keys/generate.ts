import { chmodSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '../../kernel/atomic.js';
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
    // lstat, so a link planted in place of a key file (even a dangling one) counts as a file that exists.
    if (!args.force && (kindOf(privatePath) !== 'absent' || kindOf(publicPath) !== 'absent')) {
      throw new CpError('ERR_KEY_EXISTS', `${show(privatePath)} or its .pub already exists`, {
        hint: 'choose another --out directory, or pass --force to replace the key pair',
        details: { path: privatePath },
      });
    }
    const pair = generateSigningKeyPair();
    try {
      withEnvErrors(dir, 'writing the key pair', () => {
        makeDir(dir);
        // The private key is created 0600 (not chmod-ed after the fact), so it is never readable by others. A
        // replaced pair is written beside and renamed over the old files, never through them: the old file's mode
        // would be kept, and a link in its place would have the key written wherever it points.
        if (args.force) {
          writeFileAtomic(privatePath, pair.private_key_pem, { mode: 0o600 });
          writeFileAtomic(publicPath, pair.public_key_pem);
        } else {
          writeFileSync(privatePath, pair.private_key_pem, { mode: 0o600, flag: 'wx' });
          chmodSync(privatePath, 0o600);
          writeFileSync(publicPath, pair.public_key_pem, { mode: 0o644, flag: 'wx' });
        }
      });
    } catch (error) {
      // Neither file existed before (checked above): a half-written pair is removed, not left to be trusted. The
      // cleanup never hides the error that caused it.
      if (!args.force)
        for (const path of [privatePath, publicPath]) {
          try {
            rmSync(path, { force: true });
          } catch {}
        }
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

/** `--out` and its parents, created as needed: a file, FIFO or device on that path is the user's mistake. */
function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST' && code !== 'ENOTDIR') throw error;
    throw new CpError('ERR_OUTPUT_DIR_MISSING', `cannot write the key pair into ${show(dir)}: it is not a directory`, {
      hint: '--out names the directory for cplane-signing.key and .pub: pick a directory, or a path to create one',
      details: { path: dir },
      cause: error,
    });
  }
}

function kindOf(path: string): 'absent' | 'directory' | 'a file' | 'a symlink' | 'a special file' {
  try {
    const found = lstatSync(path);
    if (found.isDirectory()) return 'directory';
    if (found.isSymbolicLink()) return 'a symlink';
    return found.isFile() ? 'a file' : 'a special file';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
    throw error;
  }
}
