import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** One alert as the webhook receives it (snake_case: it is the wire body) and as the outbox keeps it. */
export interface Alert {
  /** Names the event once: an alert with a key already kept is the same alert (once per scope per period). */
  id: string;
  type: 'budget_warn' | 'budget_exhausted' | 'breaker_opened' | 'breaker_closed' | 'spool_quarantined';
  occurred_at: string;
  detail: Record<string, unknown>;
}

export interface PendingAlert {
  alert: Alert;
  attempts: number;
}

/**
 * The alerts not yet delivered, kept in a SQLite file under the root so a restart resumes them, keyed by the alert's
 * id so the same alert is kept (and sent) once. Sent alerts stay as a tombstone that keeps the id taken; at most
 * `maxPending` wait at once (more are dropped and counted: a dead webhook never grows the file without bound).
 */
export class AlertOutbox {
  private readonly db: Database.Database;
  private readonly stmts;
  /** Alerts refused because `maxPending` were waiting. */
  dropped = 0;

  constructor(
    path: string,
    private readonly maxPending: number,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS alert_outbox (
      id TEXT PRIMARY KEY,
      body TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_at INTEGER NOT NULL,
      sent_at INTEGER,
      last_error TEXT
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS alert_outbox_due ON alert_outbox (next_at) WHERE sent_at IS NULL;`);
    this.stmts = {
      add: this.db.prepare('INSERT INTO alert_outbox (id, body, next_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING'),
      pending: this.db.prepare('SELECT COUNT(*) FROM alert_outbox WHERE sent_at IS NULL').pluck(),
      due: this.db.prepare(
        'SELECT body, attempts FROM alert_outbox WHERE sent_at IS NULL AND next_at <= ? ORDER BY next_at, id LIMIT ?',
      ),
      next: this.db.prepare('SELECT MIN(next_at) FROM alert_outbox WHERE sent_at IS NULL').pluck(),
      sent: this.db.prepare('UPDATE alert_outbox SET sent_at = ?, attempts = attempts + 1 WHERE id = ?'),
      defer: this.db.prepare('UPDATE alert_outbox SET next_at = ? WHERE id = ? AND sent_at IS NULL'),
      failed: this.db.prepare(
        'UPDATE alert_outbox SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ? AND sent_at IS NULL',
      ),
    };
  }

  /** Keep alerts (one transaction); those whose id is kept already are the same alerts and change nothing. */
  add(alerts: readonly Alert[], now: number): void {
    this.db.transaction(() => {
      let waiting = this.stmts.pending.get() as number;
      for (const alert of alerts) {
        if (waiting >= this.maxPending) {
          this.dropped += 1;
          continue;
        }
        waiting += this.stmts.add.run(alert.id, JSON.stringify(alert), now).changes;
      }
    })();
  }

  due(now: number, limit: number): PendingAlert[] {
    return (this.stmts.due.all(now, limit) as { body: string; attempts: number }[]).map((r) => ({
      alert: JSON.parse(r.body) as Alert,
      attempts: r.attempts,
    }));
  }

  /** When the earliest waiting alert is due; null when none waits. */
  nextDue(): number | null {
    return (this.stmts.next.get() as number | null) ?? null;
  }

  pending(): number {
    return this.stmts.pending.get() as number;
  }

  markSent(id: string, now: number): void {
    this.stmts.sent.run(now, id);
  }

  /** Try it again at `nextAt`, no attempt counted (another host is delivering it). */
  defer(id: string, nextAt: number): void {
    this.stmts.defer.run(nextAt, id);
  }

  markFailed(id: string, nextAt: number, error: string): void {
    this.stmts.failed.run(nextAt, error.slice(0, 500), id);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
