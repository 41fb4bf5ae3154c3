import { resolve } from 'node:path';
import { READ_LIMITS, readTextBounded } from '../../kernel/bounded-read.js';
import { readTrustStore, trustKey, trustStorePath } from '../../kernel/signing/index.js';
import { defineCommand, EXIT } from '../command.js';
import { resolveRoot, rootOption } from '../root-option.js';

export default defineCommand({
  name: 'trust',
  describe: "trust a publisher's public key in a root's trust store",
  positionals: { pubfile: { type: 'string', demandOption: true, describe: 'the public key file (.pub)' } },
  options: {
    ...rootOption('the root whose trust store to use'),
    'may-replace': {
      type: 'string',
      array: true,
      describe: 'package ids this key may take over (replaces/upgrade) although another key signed them',
    },
  },
  examples: [
    ['cplane keys trust --root R ~/.cplane/cplane-signing.pub', 'trust the key in root R'],
    [
      'cplane keys trust --root R vendor.pub --may-replace PKG-ROUTER-001',
      "let vendor.pub's packages take over PKG-ROUTER-001's files",
    ],
  ],
  handler(args, ctx) {
    const root = resolveRoot(args.root, ctx);
    const file = resolve(ctx.cwd, args.pubfile);
    const pem = readTextBounded(file, {
      maxBytes: READ_LIMITS.key,
      what: 'the public key',
      unreadableCode: 'ERR_KEY_INVALID',
      unreadableHint: 'pass the .pub file written by `cplane keys generate`',
    });
    const before = readTrustStore(root).length;
    const entry = trustKey(root, pem, { mayReplace: (args.mayReplace ?? []).map(String) });
    const added = readTrustStore(root).length > before;
    const replaces = entry.may_replace?.length ? `; may replace ${entry.may_replace.join(', ')}` : '';
    ctx.report(
      args,
      { ...entry, added, trust_store: trustStorePath(root) },
      `${added ? 'trusted' : 'already trusted'} ${entry.key_id} in ${trustStorePath(root)}${replaces}`,
    );
    return EXIT.OK;
  },
});
