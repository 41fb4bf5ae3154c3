import { defineCommand, EXIT } from '#cli/command.js';
import { rootOption } from '#cli/root-option.js';
import { parseGrace, rotateKey } from '../../router/key-admin.js';
import { STORE_OPTION, withInventory } from './inventory.js';

export default defineCommand({
  name: 'rotate',
  describe:
    'replace a key: a new key with its agent, scopes, lifetime and budget; the old one works for --grace seconds more, then is revoked (KEY_ROTATED)',
  options: {
    ...rootOption('the cplane root whose key to rotate'),
    'key-id': { type: 'string', demandOption: true, describe: 'the key to rotate (claims.jti)' },
    grace: { type: 'number', default: 0, describe: 'seconds the old key keeps working (0 to 2592000)' },
    store: STORE_OPTION,
  },
  async handler(args, ctx) {
    const grace = parseGrace({ grace_s: args.grace });
    const rotated = await withInventory(args, ctx, (ports) => rotateKey(ports, args.keyId, grace));
    ctx.report(args, rotated, rotated.token);
    return EXIT.OK;
  },
});
