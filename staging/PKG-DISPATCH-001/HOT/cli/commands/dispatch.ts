import { defineGroup } from '#cli/command.js';
import compile from '../dispatch/compile.js';
import ingest from '../dispatch/ingest.js';
import init from '../dispatch/init.js';
import status from '../dispatch/status.js';

export default defineGroup({
  name: 'dispatch',
  describe:
    "dispatch runtime over a spec's tasks.md: init | compile | ingest | status (task and progress ledgers, stall detection)",
  subcommands: [init, compile, ingest, status],
});
