import { CpError } from '#kernel/errors.js';
import { Ledger, ledgerPathForRoot, type AppendInput, type LedgerEntry } from '#kernel/ledger/index.js';

/** Kernel ledger event types written by the dispatch runtime (distinct from the router's DISPATCH marker). */
export const DISPATCH_EVENTS = {
  runInitialized: 'DISPATCH_RUN_INITIALIZED',
  promptCompiled: 'DISPATCH_PROMPT_COMPILED',
  outputIngested: 'DISPATCH_OUTPUT_INGESTED',
  stallFlagged: 'DISPATCH_STALL_FLAGGED',
} as const;

export interface TelemetryEvent {
  event_type: (typeof DISPATCH_EVENTS)[keyof typeof DISPATCH_EVENTS];
  run_id: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
}

/**
 * Dispatch telemetry in the kernel ledger. `work_order_id` carries the run id so
 * `ledger query --work-order RUN` returns a run's history through the indexed column.
 */
export class DispatchTelemetry {
  private ledger: Ledger | undefined;
  private readonly owned: boolean;

  constructor(
    private readonly root: string,
    private readonly clock: () => number,
    ledger?: Ledger,
  ) {
    this.ledger = ledger;
    this.owned = ledger === undefined;
  }

  /** Open the root's ledger now, so an unusable ledger refuses an operation before it writes any state. */
  open(): Ledger {
    this.ledger ??= Ledger.open(ledgerPathForRoot(this.root), { create: true, clock: this.clock });
    return this.ledger;
  }

  /** Append the events in one batch; a failure names the snapshot revision that was already committed. */
  record(events: readonly TelemetryEvent[], snapshotRevision: number): LedgerEntry[] {
    const ledger = this.open();
    const inputs: AppendInput[] = events.map((event) => ({
      event_type: event.event_type,
      submission_id: event.run_id,
      decision: event.decision,
      reason: event.reason,
      metadata: { work_order_id: event.run_id, run_id: event.run_id, ...event.metadata },
    }));
    try {
      return ledger.appendBatch(inputs);
    } catch (cause) {
      throw new CpError(
        'ERR_DISPATCH_TELEMETRY_FAILED',
        `dispatch state was saved (snapshot revision ${snapshotRevision}) but its telemetry could not be appended to ${ledger.path}: ${(cause as Error).message}`,
        {
          hint: 'check the kernel ledger with `cplane ledger verify`; the dispatch state itself is intact',
          details: { snapshot_revision: snapshotRevision, events: events.map((event) => event.event_type) },
          cause,
        },
      );
    }
  }

  /** Closes the ledger only when this object opened it. */
  close(): void {
    if (this.owned) this.ledger?.close();
  }
}
