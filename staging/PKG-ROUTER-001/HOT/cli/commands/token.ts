import { defineGroup } from '#cli/command.js';
import issue from '../token/issue.js';
import list from '../token/list.js';
import listRevoked from '../token/list-revoked.js';
import revoke from '../token/revoke.js';
import rotate from '../token/rotate.js';

export default defineGroup({
  name: 'token',
  describe: 'route tokens: HMAC-signed, expiring, scoped, revocable (key from $CPLANE_AUTH_SECRET or router.auth)',
  subcommands: [issue, list, rotate, revoke, listRevoked],
});
