import { defineGroup } from '#cli/command.js';
import compile from '../prompt/compile.js';

export default defineGroup({
  name: 'prompt',
  describe: 'compile a prompt spec into a stable-prefix-first, cache-tiered prompt (`prompt compile`)',
  subcommands: [compile],
});
