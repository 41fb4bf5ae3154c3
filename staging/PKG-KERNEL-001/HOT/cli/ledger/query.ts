import { defineCommand, EXIT } from '../command.js';
import { intOption, MAX_LIST_LIMIT } from '../option-values.js';
import type { LedgerQuery } from '../../kernel/ledger/index.js';
import { entryLine, LEDGER_TARGET_OPTIONS, storeOption, withLedger, withPgLedger } from './target.js';

export default defineCommand({
  name: 'query',
  describe: 'entries matching every filter, newest first',
  options: {
    ...LEDGER_TARGET_OPTIONS,
    ...storeOption('the entries'),
    'event-type': { type: 'string' },
    'submission-id': { type: 'string' },
    session: { type: 'string', describe: 'metadata.session_id' },
    agent: { type: 'string', describe: 'metadata.agent_id' },
    'work-order': { type: 'string', describe: 'metadata.work_order_id' },
    since: { type: 'string', describe: 'ISO-8601 time, inclusive' },
    until: { type: 'string', describe: 'ISO-8601 time, inclusive' },
    limit: { type: 'number' },
    oldest: { type: 'boolean', describe: 'oldest first' },
  },
  async handler(args, ctx) {
    const query: LedgerQuery = {};
    const set = <K extends keyof LedgerQuery>(key: K, value: LedgerQuery[K] | undefined): void => {
      if (value !== undefined) query[key] = value;
    };
    set('event_type', args.eventType);
    set('submission_id', args.submissionId);
    set('session_id', args.session);
    set('agent_id', args.agent);
    set('work_order_id', args.workOrder);
    set('since', args.since);
    set('until', args.until);
    set('limit', intOption('limit', args.limit, 1, MAX_LIST_LIMIT));
    if (args.oldest) query.order = 'oldest';
    const entries =
      args.store === undefined
        ? withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query(query))
        : await withPgLedger(args.store, (store) => store.query(query));
    ctx.report(args, entries, entries.map(entryLine));
    return EXIT.OK;
  },
});
