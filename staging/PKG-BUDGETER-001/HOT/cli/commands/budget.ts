import { defineGroup } from '#cli/command.js';
import status from '../budget/status.js';

export default defineGroup({
  name: 'budget',
  describe: 'Token budgets of a root (session → work order → agent); `budget status` shows usage against limits',
  subcommands: [status],
});
