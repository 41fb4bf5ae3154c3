// `cplane keys generate --out DIR | trust --root R PUBFILE | list --root R`: ed25519 signing keys and a root's trust store.
import { defineGroup } from '../command.js';
import generate from '../keys/generate.js';
import list from '../keys/list.js';
import trust from '../keys/trust.js';

export default defineGroup({
  name: 'keys',
  describe: "signing keys: generate a pair, trust a public key in a root, list a root's trusted keys",
  subcommands: [generate, trust, list],
});
