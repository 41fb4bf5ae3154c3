import { defineCommand, EXIT } from '../command.js';
import diff from '../config/diff.js';
import get from '../config/get.js';
import set from '../config/set.js';
import show from '../config/show.js';
import unset from '../config/unset.js';

export default defineCommand({
  command: 'config',
  describe: 'operator configuration: overrides of the packages\' defaults, owned by no package '
    + '(get, set, unset, show, diff)',
  builder: (y) => y,
  subcommands: [get, set, unset, show, diff],
  // Unreachable: yargs demands a subcommand, and the subcommand's own run is called.
  run: () => EXIT.USAGE,
});
