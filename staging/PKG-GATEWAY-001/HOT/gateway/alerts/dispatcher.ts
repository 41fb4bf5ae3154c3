import { createHmac } from 'node:crypto';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { Alert, AlertOutbox } from './outbox.js';
import type { AlertClaims } from './pg-claims.js';

export interface AlertDispatcherOptions {
  outbox: AlertOutbox;
  url: string;
  /** The HMAC-SHA256 key of the signature header (from the operator's environment; never recorded). */
  secret: string;
  /** Records each delivery (ALERT_SENT) in the ledger. */
  record: (records: AppendInput[]) => Promise<unknown>;
  fetch?: typeof fetch;
  clock?: () => number;
  timeoutMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Alerts queued in memory between two writes to the outbox, at most (more are dropped and counted). */
  maxQueued?: number;
}

/** The header holding `sha256=<hex HMAC-SHA256 of the raw body>` under the operator's secret. */
export const SIGNATURE_HEADER = 'x-cplane-signature';
const SEEN_MAX = 4096;
const BATCH = 16;

export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Delivers alerts to the operator's webhook, at least once, off the call path: `enqueue` (called on the call path)
 * only remembers the alert in a bounded queue; the queue is written to the durable outbox on a later tick, and
 * delivery runs on a timer, retrying a failed one with exponential backoff. A slow or dead webhook therefore delays
 * only the alerts behind it, never a call. The receiver dedupes by the alert's id (sent once, retried until a 2xx).
 */
export class AlertDispatcher {
  private readonly queue: Alert[] = [];
  /** Ids already queued by this process: a scope exhausted for many calls writes the outbox once. */
  private readonly seen = new Set<string>();
  private flushing = false;
  private delivering = false;
  private timer: NodeJS.Timeout | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Delivery waits for start(): its ALERT_SENT records need the router's ledger. */
  private started = false;
  private readonly fetch: typeof fetch;
  private readonly clock: () => number;
  /** Alerts dropped because the in-memory queue was full. */
  dropped = 0;
  sent = 0;
  /** Alerts another host delivered (the shared claims said so): not sent by this one. */
  deduped = 0;
  /** On a shared store, who of the hosts sends each alert; null: this host sends all it holds. */
  claims: AlertClaims | null = null;

  constructor(private readonly options: AlertDispatcherOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.clock = options.clock ?? Date.now;
  }

  /** O(1) and never throws: called on the call path (a budget step's crossing, a breaker's transition). */
  enqueue(alert: Alert): void {
    if (this.closed || this.seen.has(alert.id)) return;
    if (this.queue.length >= (this.options.maxQueued ?? 1024)) {
      this.dropped += 1;
      return;
    }
    this.seen.add(alert.id);
    if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.values().next().value as string);
    this.queue.push(alert);
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  /** Start delivering what the outbox holds (alerts a previous process left undelivered). */
  start(): void {
    this.started = true;
    this.wake(0);
  }

  private flush(): void {
    this.flushing = false;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0);
    try {
      this.options.outbox.add(batch, this.clock());
    } catch {
      // The outbox file refused the write (a full disk): `seen` keeps a later crossing of these ids out of the
      // queue, so they wait here (the queue's bound still holds) and are written again after the retry delay.
      this.queue.unshift(...batch);
      if (this.closed) return;
      this.flushing = true;
      this.flushTimer = setTimeout(() => this.flush(), this.options.retryMinMs ?? 1000);
      this.flushTimer.unref();
      return;
    }
    this.wake(0);
  }

  private wake(delayMs: number): void {
    if (this.closed || this.delivering || !this.started) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.deliverDue(), Math.max(0, delayMs));
    this.timer.unref();
  }

  private async deliverDue(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    this.delivering = true;
    let next: number | null = null;
    try {
      for (;;) {
        const due = this.options.outbox.due(this.clock(), BATCH);
        if (due.length === 0 || this.closed) break;
        await Promise.all(due.map(({ alert, attempts }) => this.deliver(alert, attempts)));
      }
      next = this.closed ? null : this.options.outbox.nextDue();
    } catch {
      // The outbox file refused a read or write (or was closed meanwhile): what it holds is tried again later.
      next = this.closed ? null : this.clock() + (this.options.retryMinMs ?? 1000);
    } finally {
      this.delivering = false;
    }
    if (next !== null) this.wake(next - this.clock());
  }

  private async deliver(alert: Alert, attempts: number): Promise<void> {
    const { claims } = this;
    if (claims !== null && !(await this.claimed(claims, alert, attempts))) return;
    const problem = await this.post(alert);
    const now = this.clock();
    if (problem !== null) {
      this.options.outbox.markFailed(alert.id, now + this.backoff(attempts + 1), problem);
      // Any host may try it next; a release that fails leaves the lease to run out.
      await claims?.release(alert).catch(() => undefined);
      return;
    }
    this.options.outbox.markSent(alert.id, now);
    this.sent += 1;
    // Unmarked (the database away), another host delivers it again once the lease ran out: at least once.
    await claims?.sent(alert, now).catch(() => undefined);
    try {
      await this.options.record([sentRecord(alert, attempts + 1, this.options.url)]);
    } catch {
      // Delivered: the record is what failed, and delivering again would send the alert twice.
    }
  }

  /** Whether this host delivers the alert now; else the outbox is told when to ask again (or that it is done). */
  private async claimed(claims: AlertClaims, alert: Alert, attempts: number): Promise<boolean> {
    const now = this.clock();
    // Longer than one delivery attempt can take, so a claim is not taken over while its host is still posting.
    const leaseMs = 2 * (this.options.timeoutMs ?? 10_000) + 5000;
    try {
      const verdict = await claims.claim(alert, now, leaseMs);
      if (verdict.kind === 'mine') return true;
      if (verdict.kind === 'done') {
        this.options.outbox.markSent(alert.id, now);
        this.deduped += 1;
      } else {
        // Asked again before the lease ends: the holder usually finishes within a second.
        this.options.outbox.defer(alert.id, Math.min(verdict.retryAt, now + Math.max(this.backoff(1), 1000)));
      }
    } catch {
      // The shared store is away: nothing is sent unclaimed (it would be sent by every host); tried again later.
      this.options.outbox.markFailed(alert.id, now + this.backoff(attempts + 1), 'the alert claims did not answer');
    }
    return false;
  }

  /** Null when the receiver answered 2xx; else what went wrong (never the secret). */
  private async post(alert: Alert): Promise<string | null> {
    const body = JSON.stringify(alert);
    try {
      const response = await this.fetch(this.options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signature(this.options.secret, body),
          'x-cplane-alert-id': alert.id,
        },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      await response.body?.cancel();
      return response.ok ? null : `HTTP ${response.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: unknown } }).cause?.code;
      return typeof cause === 'string' ? cause : error instanceof Error ? error.name : 'failed';
    }
  }

  private backoff(attempt: number): number {
    const min = this.options.retryMinMs ?? 1000;
    return Math.min(this.options.retryMaxMs ?? 300_000, min * 2 ** Math.min(attempt - 1, 30));
  }

  /** Writes what is queued to the outbox and stops delivering (a delivery under way finishes on its own). */
  close(): void {
    this.closed = true;
    this.flush();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

function sentRecord(alert: Alert, attempts: number, url: string): AppendInput {
  return {
    event_type: 'ALERT_SENT',
    submission_id: alert.id,
    decision: 'SENT',
    reason: `${alert.type} delivered to the webhook after ${attempts} attempt${attempts === 1 ? '' : 's'}`,
    metadata: {
      alert_id: alert.id,
      attempts,
      detail: alert.detail,
      occurred_at: alert.occurred_at,
      type: alert.type,
      // The webhook's origin only: a path or query may carry a token.
      webhook: new URL(url).origin,
    },
  };
}
