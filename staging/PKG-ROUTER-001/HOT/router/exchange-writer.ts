import { type Warning, warning } from '#kernel/catalogue/define.js';
import { show } from '#kernel/errors.js';
import { inlineContent, type AppendInput, type LedgerEntry } from '#kernel/ledger/index.js';
import type { LedgerStore } from '#kernel/ledger/store.js';
import { BUDGET_EVENTS, DELIVERED_ONCE, foldedSettlement, withoutFoldedBudget } from '#budgeter/records.js';
import type { CommitOptions } from './durability.js';
import { type Grouped, GroupCommit } from './group-commit.js';
import { isRecordFault } from './record-fault.js';
import { scrubRecords, scrubText, secretList } from './scrub.js';
import type { SecretPattern } from './secret-patterns.js';
import { ExchangeSpool, type SpoolDrain } from './spool.js';

/** Where a conclusion's records ended up: the EXCHANGE's entry id (empty if spooled), or the whole batch if nowhere. */
export interface Recorded {
  entryId: string;
  unrecorded: AppendInput[] | null;
}

export interface ExchangeWriterOptions {
  writer: LedgerStore;
  spoolDir?: string | null | undefined;
  spoolQuarantineDir?: string | null | undefined;
  secrets: readonly string[];
  patterns: readonly SecretPattern[];
  /** Appends of one batch before it is spooled (RouterConfig.ledger_write_attempts). */
  writeAttempts: number;
  /** Told of the entries a drain set aside (their quarantine paths): the gateway's alerts. */
  onQuarantine?: ((paths: readonly string[]) => void) | undefined;
}

/**
 * The router's one way onto the ledger: scrubbed appends, the group commit, the single-batch path that retries,
 * degrades and spools, and the spool's drain. Nothing is lost: a batch is committed, spooled, or handed back.
 */
export class ExchangeWriter {
  /** Calls in flight share transactions (router/group-commit.ts). */
  readonly groupCommit: GroupCommit;
  /** Warnings from starting up (spool recovery) or a failed drain, carried on route()'s next response. */
  readonly pendingWarnings: Warning[] = [];
  private readonly spool: ExchangeSpool | null;
  private draining: Promise<SpoolDrain> | null = null;
  /**
   * Whether the spool may hold exchanges: set when one is spooled (or a drain leaves some), cleared by a drain
   * that empties it. A ledger that takes a write again says so only by taking it: the call that commits next
   * starts the drain, so a long-running gateway needs no restart to record what it spooled.
   */
  private spoolHolds = true;
  private spoolPuts = 0;

  constructor(private readonly options: ExchangeWriterOptions) {
    const { spoolDir } = options;
    this.spool = spoolDir ? new ExchangeSpool(spoolDir, options.spoolQuarantineDir ?? `${spoolDir}-quarantine`) : null;
    this.groupCommit = new GroupCommit(
      (records, commit) => options.writer.appendBatch(records, commit),
      () => this.inFlight <= 1,
    );
  }

  /** Calls between their admission commit and their conclusion: with one, a group can have no other member. */
  private inFlight = 0;

  callStarted(): void {
    this.inFlight += 1;
  }

  callEnded(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  /** Append records in one transaction (one fsync); returns the last entry, the router's own record. */
  async appendAll(records: AppendInput[], authToken?: unknown, commit?: CommitOptions): Promise<LedgerEntry> {
    const secrets =
      typeof authToken === 'string' ? secretList([...this.options.secrets, authToken]) : this.options.secrets;
    const entries = await this.options.writer.appendBatch(
      scrubRecords(records, secrets, this.options.patterns),
      commit,
    );
    return entries[entries.length - 1] as LedgerEntry;
  }

  /** Append with the other batches ready in this turn (one transaction); the records must be scrubbed already. */
  commitGrouped(records: AppendInput[], commit?: CommitOptions): Promise<Grouped> {
    return this.groupCommit.commit(records, commit);
  }

  /** A conclusion committed: the ledger takes writes, so what an earlier failure spooled is appended now. */
  committed(): void {
    if (!this.spoolHolds || !this.spool || this.draining !== null) return;
    this.recoverSpool().catch((error: unknown) => {
      this.pendingWarnings.push(
        warning('SPOOL_PENDING', `the spool could not be drained (${describe(error)}); the next call tries again`),
      );
    });
  }

  /**
   * Append a conclusion's batch alone. `failed` is a first attempt that already failed (a group of this batch
   * only). The ledger refusing the records themselves (a value it cannot canonicalise) is not retried: the
   * `degraded` batch (raw usage dropped) is tried instead. If the ledger keeps refusing, the batch is spooled; if
   * the spool cannot be written either, the batch is returned (unrecorded) so the caller can hand it over whole.
   * Never throws.
   */
  async record(
    records: AppendInput[],
    warnings: Warning[],
    dispatchId: string,
    secrets: readonly string[],
    degraded: (() => AppendInput[]) | null,
    failed?: { error: unknown },
  ): Promise<Recorded> {
    const tried = await this.appendRetrying(records, secrets, failed);
    if ('entryId' in tried) return { entryId: tried.entryId, unrecorded: null };
    let lastError = tried.error;
    if (degraded && isRecordFault(lastError)) {
      try {
        const smaller = scrubRecords(degraded(), secrets, this.options.patterns);
        const entryId = (await this.options.writer.appendBatch(smaller))[0]?.id ?? '';
        warnings.push(
          warning(
            'EXCHANGE_RECORD_DEGRADED',
            `the ledger refused the exchange (${describe(lastError)}); it was recorded without the provider's raw usage`,
          ),
        );
        return { entryId, unrecorded: null };
      } catch (error) {
        lastError = error;
      }
    }
    return { entryId: '', unrecorded: this.spoolOrHandBack(tried.batch, warnings, dispatchId, secrets, lastError) };
  }

  /** Up to `writeAttempts` appends of the scrubbed batch; a record fault is not tried again as is. */
  private async appendRetrying(
    records: AppendInput[],
    secrets: readonly string[],
    failed: { error: unknown } | undefined,
  ): Promise<{ entryId: string } | { error: unknown; batch: AppendInput[] }> {
    const attempts = this.options.writeAttempts;
    let batch: AppendInput[];
    let lastError: unknown;
    try {
      batch = scrubRecords(records, secrets, this.options.patterns);
    } catch (error) {
      return { error, batch: records };
    }
    let attempt = 0;
    if (failed !== undefined) {
      attempt = 1;
      if (isRecordFault(failed.error) || attempts <= 1) return { error: failed.error, batch };
    }
    for (; lastError === undefined && attempt < attempts; attempt += 1) {
      try {
        const entryId = (await this.options.writer.appendBatch(batch))[0]?.id ?? '';
        this.committed();
        return { entryId };
      } catch (error) {
        if (isRecordFault(error) || attempt + 1 === attempts) lastError = error;
      }
    }
    return { error: lastError, batch };
  }

  private spoolOrHandBack(
    batch: AppendInput[],
    warnings: Warning[],
    dispatchId: string,
    secrets: readonly string[],
    lastError: unknown,
  ): AppendInput[] | null {
    const reason = scrubText(describe(lastError), secrets);
    if (!this.spool) {
      warnings.push(
        warning(
          'EXCHANGE_NOT_RECORDED',
          `the ledger refused the exchange (${reason}) and no spool directory is configured; the whole exchange is in unrecorded_exchange`,
        ),
      );
      return batch.map(inlineContent);
    }
    try {
      const path = this.spool.put(dispatchId, batch);
      this.spoolHolds = true;
      this.spoolPuts += 1;
      warnings.push(
        warning(
          'LEDGER_WRITE_FAILED',
          `exchange spooled to ${path} (${reason}); it is appended when the ledger takes writes again`,
        ),
      );
      return null;
    } catch (error) {
      warnings.push(
        warning(
          'EXCHANGE_NOT_RECORDED',
          `the ledger refused the exchange (${reason}) and the spool could not be written (${scrubText(describe(error), secrets)}); the whole exchange is in unrecorded_exchange`,
        ),
      );
      return batch.map(inlineContent);
    }
  }

  /** Exchanges waiting in the spool (a store that refused writes); 0 without a spool. */
  spooled(): number {
    return this.spool?.pending().length ?? 0;
  }

  /**
   * Append any exchanges spooled by an earlier process whose ledger write failed. Never throws: an entry
   * that cannot be read or appended is quarantined or left pending, and the warnings ride on the next
   * response (and are returned).
   */
  async recoverSpool(): Promise<SpoolDrain> {
    if (!this.spool) return { drained: 0, quarantined: [], pending: 0, warnings: [] };
    // One drain at a time: two would read the same entry and both append it.
    const spooledBefore = this.spoolPuts;
    this.draining ??= this.spool
      .drain((inputs) => this.drainOne(inputs))
      .then((drained) => {
        // An exchange spooled while the drain ran may have been listed after it: it keeps the spool marked.
        this.spoolHolds = drained.pending > 0 || this.spoolPuts !== spooledBefore;
        return drained;
      })
      .finally(() => {
        this.draining = null;
      });
    const drained = await this.draining;
    this.pendingWarnings.push(...drained.warnings);
    if (drained.quarantined.length > 0)
      try {
        this.options.onQuarantine?.(drained.quarantined);
      } catch {
        // A watcher's fault is its own: the drain's result stands.
      }
    return drained;
  }

  private async drainOne(inputs: AppendInput[]): Promise<{ refused: string } | undefined> {
    const records = scrubRecords(inputs, this.options.secrets, this.options.patterns);
    const refused = await this.unspooled(records[0] as AppendInput);
    if (refused !== null) return { refused };
    // A process that died between appending an entry and removing it left it behind: never append twice.
    // The budget's records may have been delivered from its outbox meanwhile (a spool older than the orphan
    // timeout): appended only if the chain does not hold them; a settlement folded into the EXCHANGE is dropped
    // from it then, so the reservation is settled once.
    const exchange = records[0] as AppendInput;
    if (await this.alreadyRecorded(exchange)) return undefined;
    const requestId = foldedSettlement(exchange);
    if (requestId !== null && (await this.settledStandalone(requestId))) records[0] = withoutFoldedBudget(exchange);
    await this.options.writer.appendBatch(records, { once: DELIVERED_ONCE });
    return undefined;
  }

  /** Whether the chain holds a standalone settlement (or release) of the request (an EXCHANGE carries it folded). */
  private settledStandalone(requestId: string): Promise<boolean> {
    const ends: readonly string[] = [BUDGET_EVENTS.settled, BUDGET_EVENTS.released];
    return this.options.writer
      .query({ submission_id: requestId })
      .then((found) => found.some((entry) => ends.includes(entry.event_type)));
  }

  /**
   * Why a spooled EXCHANGE is not one this router's calls could have left, or null. A router spools only the
   * answer to a DISPATCH the chain holds, of the same session and agent; a file planted in (or copied into) the
   * spool that names none, or another's, would otherwise be appended as a call nobody made, or be appended twice
   * under another session where the duplicate check does not look.
   */
  private async unspooled(exchange: AppendInput): Promise<string | null> {
    // The spool read checked the EXCHANGE has metadata and names the DISPATCH its file is named after.
    const metadata = exchange.metadata as Record<string, unknown>;
    const dispatchId = String(metadata.dispatch_entry_id);
    const dispatch = await this.options.writer.get(dispatchId);
    if (dispatch === undefined) return `names DISPATCH ${show(dispatchId)}, which the ledger does not hold`;
    if (dispatch.event_type !== 'DISPATCH')
      return `names ${show(dispatchId)}, which is a ${show(dispatch.event_type)}, not a DISPATCH`;
    for (const field of ['session_id', 'agent_id'])
      if (metadata[field] !== dispatch.metadata[field])
        return `has ${field} ${show(metadata[field])} where its DISPATCH ${show(dispatchId)} has ${show(dispatch.metadata[field])}`;
    return null;
  }

  /** True when the ledger already holds this spooled EXCHANGE (same DISPATCH link, found by its session). */
  private async alreadyRecorded(exchange: AppendInput | undefined): Promise<boolean> {
    const sessionId = exchange?.metadata?.session_id;
    const dispatchId = exchange?.metadata?.dispatch_entry_id;
    if (typeof sessionId !== 'string' || sessionId === '' || typeof dispatchId !== 'string') return false;
    return this.options.writer.hasExchange(sessionId, dispatchId);
  }
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
