import { defineGroup } from '#cli/command.js';
import { diff, importCommand, list } from '../prices/commands.js';

export default defineGroup({
  name: 'prices',
  describe:
    "the budget's price table: the shipped prices and the operator's, and imports from LiteLLM or models.dev catalogues (list, diff, import)",
  subcommands: [list, diff, importCommand],
});
