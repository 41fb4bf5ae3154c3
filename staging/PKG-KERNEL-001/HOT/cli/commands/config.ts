import { defineGroup } from '../command.js';
import diff from '../config/diff.js';
import get from '../config/get.js';
import set from '../config/set.js';
import show from '../config/show.js';
import unset from '../config/unset.js';

export default defineGroup({
  name: 'config',
  describe:
    "operator configuration: overrides of the packages' defaults, kept apart from every package (get, set, unset, show, diff)",
  subcommands: [get, set, unset, show, diff],
});
