import { defineCommand, EXIT } from '#cli/command.js';
import { rootOption } from '#cli/root-option.js';
import { listKeys } from '../../router/key-admin.js';
import { STORE_OPTION, withInventory } from './inventory.js';

export default defineCommand({
  name: 'list',
  describe: 'the key inventory: every key issued (KEY_ISSUED), its state, expiry and rotation (never the key itself)',
  options: { ...rootOption('the cplane root whose inventory to list'), store: STORE_OPTION },
  async handler(args, ctx) {
    const keys = await withInventory(args, ctx, (ports) => listKeys(ports));
    const lines = keys.map(
      (k) =>
        `${k.key_id}  ${k.state.padEnd(7)}  ${k.agent}  ${k.scopes.join(',')}  expires ${k.expires_at}` +
        `${k.budget_scope === null ? '' : `  budget ${k.budget_scope}`}${k.rotated_to === null ? '' : `  rotated to ${k.rotated_to}`}`,
    );
    ctx.report(args, { keys }, lines.length > 0 ? lines : ['no keys in the inventory']);
    return EXIT.OK;
  },
});
