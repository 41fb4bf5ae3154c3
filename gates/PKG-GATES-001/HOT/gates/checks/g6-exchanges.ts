import { DEFAULT_MAX_CLOCK_SKEW_MS } from '../../kernel/ledger/index.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { ledgerOf } from '../root-state.js';

/** G6: no DISPATCH is left without its EXCHANGE beyond the orphan timeout or dated in the future; every EXCHANGE links to a DISPATCH. */
export default defineGate({
  id: 'G6',
  name: 'EXCHANGES',
  describe: 'no DISPATCH without its EXCHANGE beyond the orphan timeout; every EXCHANGE links to a DISPATCH',
  run(ctx) {
    const ledger = ledgerOf(ctx);
    const errors: Finding[] = [];
    const exchanges = ledger.query({ event_type: 'EXCHANGE', order: 'oldest' });
    const answered = new Set<string>();
    for (const exchange of exchanges) {
      const link = exchange.metadata.dispatch_entry_id;
      const dispatch = typeof link === 'string' ? ledger.get(link) : undefined;
      if (!dispatch || dispatch.event_type !== 'DISPATCH') {
        errors.push({ code: 'EXCHANGE_WITHOUT_DISPATCH', message: `EXCHANGE ${exchange.id} links to ${JSON.stringify(link)}, which is not a DISPATCH` });
      } else {
        answered.add(dispatch.id);
      }
    }
    const now = ctx.now();
    const cutoff = now - ctx.orphanTimeoutMs;
    // A DISPATCH dated in the future never ages into an orphan: it is reported instead of counted as in flight.
    const future = now + DEFAULT_MAX_CLOCK_SKEW_MS;
    let pending = 0;
    const dispatches = ledger.query({ event_type: 'DISPATCH', order: 'oldest' });
    for (const dispatch of dispatches) {
      if (answered.has(dispatch.id)) continue;
      const at = Date.parse(dispatch.timestamp);
      if (at > future) {
        errors.push({ code: 'FUTURE_DATED_DISPATCH', message: `DISPATCH ${dispatch.id} is dated ${dispatch.timestamp}, in the future of the checker's clock: it can never be seen as orphaned` });
      } else if (at <= cutoff) {
        errors.push({ code: 'ORPHAN_DISPATCH', message: `DISPATCH ${dispatch.id} (${dispatch.timestamp}) has no EXCHANGE after ${ctx.orphanTimeoutMs} ms` });
      } else {
        pending += 1;
      }
    }
    return verdict(this, errors, `${exchanges.length} exchanges linked to their dispatches${pending ? `; ${pending} in flight` : ''}`);
  },
});
