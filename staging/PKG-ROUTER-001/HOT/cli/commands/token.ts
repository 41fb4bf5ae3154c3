import { defineGroup } from '#cli/command.js';
import issue from '../token/issue.js';

export default defineGroup({
  name: 'token',
  describe: 'route tokens: HMAC-signed, expiring, scoped (key from $CPLANE_AUTH_SECRET)',
  subcommands: [issue],
});
