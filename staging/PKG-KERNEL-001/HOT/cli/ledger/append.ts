import { defineCommand, EXIT } from '../command.js';
import { CpError, show } from '../../kernel/errors.js';
import { validateAppendInput } from '../../kernel/ledger/index.js';
import { LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'append',
  describe: 'append one entry (creates the ledger on first append); prints its id',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('to the chain'),
    'event-type': { type: 'string', demandOption: true, describe: 'UPPER_SNAKE_CASE event type, e.g. EXCHANGE' },
    'submission-id': { type: 'string', demandOption: true },
    decision: { type: 'string', demandOption: true },
    reason: { type: 'string', demandOption: true },
    metadata: { type: 'string', default: '{}', describe: 'a JSON object' },
  },
  async handler(args, ctx) {
    // verify counts a block without its text as redacted when a REDACTED entry names it: one appended by hand
    // would let text removed behind the command's back pass, or fail a ledger whose text was never removed.
    if (args.eventType === 'REDACTED')
      throw new CpError('ERR_LEDGER_ENTRY_INVALID', 'a REDACTED entry is written only by `cplane ledger redact`', {
        hint: 'remove content with `cplane ledger redact --exchange|--session|--block … --reason …`',
        details: { field: 'event_type' },
      });
    // Everything is validated before the ledger is opened, so bad input creates and writes nothing.
    const input = validateAppendInput({
      event_type: args.eventType,
      submission_id: args.submissionId,
      decision: args.decision,
      reason: args.reason,
      metadata: parseMetadata(args.metadata),
    });
    const entry =
      args.store === undefined
        ? withLedger(args, ctx, { create: true }, (ledger) => ledger.append(input))
        : await withPgLedger(args.store, (store) => store.append(input), { create: true });
    ctx.report(args, entry, entry.id);
    return EXIT.OK;
  },
});

function parseMetadata(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new CpError('ERR_LEDGER_ENTRY_INVALID', `--metadata is not valid JSON: ${show(text, 80)}`, {
      hint: `pass a JSON object, e.g. --metadata '{"session_id":"S1"}'`,
      details: { field: 'metadata' },
      cause,
    });
  }
}
