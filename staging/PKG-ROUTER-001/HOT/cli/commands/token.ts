import { defineCommand, EXIT } from '#cli/command.js';
import issue from '../token/issue.js';
import listRevoked from '../token/list-revoked.js';
import revoke from '../token/revoke.js';

export default defineCommand({
  command: 'token',
  describe: 'route tokens: HMAC-signed, expiring, scoped, revocable (key from $CPLANE_AUTH_SECRET or router.auth)',
  builder: (y) => y,
  subcommands: [issue, revoke, listRevoked],
  // Unreachable: yargs demands a subcommand, and the subcommand's own run is called.
  run: () => EXIT.USAGE,
});
