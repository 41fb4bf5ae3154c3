import { defineCommand } from '../command.js';
import { intOption, MAX_LIST_LIMIT } from '../option-values.js';
import type { LedgerQuery } from '../../kernel/ledger/index.js';
import { entryLine, withLedger, withLedgerTarget, type LedgerTargetArgs } from './target.js';

interface QueryArgs extends LedgerTargetArgs {
  'event-type'?: string | undefined;
  'submission-id'?: string | undefined;
  session?: string | undefined;
  agent?: string | undefined;
  'work-order'?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: number | undefined;
  oldest?: boolean | undefined;
}

export default defineCommand<QueryArgs>({
  command: 'query',
  describe: 'entries matching every filter, newest first',
  builder: (y) =>
    withLedgerTarget(y)
      .option('event-type', { type: 'string' })
      .option('submission-id', { type: 'string' })
      .option('session', { type: 'string', describe: 'metadata.session_id' })
      .option('agent', { type: 'string', describe: 'metadata.agent_id' })
      .option('work-order', { type: 'string', describe: 'metadata.work_order_id' })
      .option('since', { type: 'string', describe: 'ISO-8601 time, inclusive' })
      .option('until', { type: 'string', describe: 'ISO-8601 time, inclusive' })
      .option('limit', { type: 'number' })
      .option('oldest', { type: 'boolean', describe: 'oldest first' }),
  run(args, ctx) {
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
    const entries = withLedger(args, ctx, { readonly: true }, (ledger) => ledger.query(query));
    ctx.report(args, entries, entries.map(entryLine));
    return 0;
  },
});
