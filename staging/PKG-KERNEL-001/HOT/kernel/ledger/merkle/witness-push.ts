import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../atomic.js';
import { parseCheckpointBody, splitNote } from './note.js';
import { verifiedCosignatures } from './witness-http.js';

/** A witness the operator configured: its add-checkpoint URL prefix and its vkey (cosignature type 0x04). */
export interface WitnessTarget {
  url: string;
  vkey: string;
}

/** What happened to the checkpoints pushed to one witness. */
export interface PushCounts {
  /** Checkpoints handed to the pusher for this witness. */
  queued: number;
  cosigned: number;
  /** Refused by the witness (a 4xx other than the size conflict it resolves: a fork, a bad proof, an unknown log). */
  refused: number;
  /** Given up after every attempt failed (the witness down, timing out, or answering 5xx). */
  failed: number;
  retried: number;
  /** Replaced by a newer checkpoint before they were sent. */
  superseded: number;
}

export interface WitnessPusherOptions {
  witnesses: readonly WitnessTarget[];
  /** The consistency proof of the log's tree from `old` to `size` entries. */
  consistency(old: number, size: number): Promise<Buffer[]>;
  /** The note and the witness's verified cosignature lines, once one cosigned it. */
  record(note: string, cosignatures: readonly string[]): void;
  fetch?: typeof fetch;
  timeoutMs?: number;
  attempts?: number;
  backoffMs?: number;
  sleep?: (ms: number) => Promise<void>;
  log?: (line: string) => void;
}

interface Lane {
  target: WitnessTarget;
  counts: PushCounts;
  /** The size of the newest checkpoint this witness holds of the log, as far as the pusher knows. */
  held: number;
  /** The newest checkpoint not yet sent: one per witness, a newer one replaces it (bounded). */
  pending: string | null;
  running: Promise<void> | null;
}

type Outcome = 'done' | 'retry' | 'resend';

/**
 * Pushes each new checkpoint to the configured witnesses (C2SP tlog-witness add-checkpoint) in the background: a
 * call never waits for a witness. Per witness, one request in flight and one checkpoint waiting (the newest); each
 * request bounded by a timeout, retried with backoff, then given up and counted. A 409 tells the size the witness
 * holds: the checkpoint is sent again with a proof from it.
 */
export class WitnessPusher {
  private readonly lanes: Lane[];
  private readonly fetch: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private closed = false;

  constructor(private readonly options: WitnessPusherOptions) {
    this.fetch = options.fetch ?? fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms).unref()));
    this.lanes = options.witnesses.map((target) => ({
      target,
      counts: { queued: 0, cosigned: 0, refused: 0, failed: 0, retried: 0, superseded: 0 },
      held: 0,
      pending: null,
      running: null,
    }));
  }

  /** Queue `note` for every witness; returns at once. */
  push(note: string): void {
    if (this.closed) return;
    for (const lane of this.lanes) {
      lane.counts.queued += 1;
      if (lane.pending !== null) lane.counts.superseded += 1;
      lane.pending = note;
      lane.running ??= this.drain(lane).finally(() => {
        lane.running = null;
      });
    }
  }

  counts(): Record<string, PushCounts> {
    return Object.fromEntries(this.lanes.map((l) => [l.target.url, { ...l.counts }]));
  }

  /** Resolves once nothing is in flight or waiting. */
  async idle(): Promise<void> {
    while (this.lanes.some((l) => l.running !== null)) await Promise.all(this.lanes.map((l) => l.running));
  }

  /** No new pushes; waits for those in flight (their retries end early). */
  async close(): Promise<void> {
    this.closed = true;
    await this.idle();
  }

  private async drain(lane: Lane): Promise<void> {
    while (lane.pending !== null) {
      const note = lane.pending;
      lane.pending = null;
      await this.send(lane, note);
    }
  }

  private async send(lane: Lane, note: string): Promise<void> {
    const attempts = this.options.attempts ?? 4;
    let resends = 0;
    let lastError = '';
    for (let attempt = 1; ; ) {
      let outcome: Outcome;
      try {
        outcome = await this.attempt(lane, note);
      } catch (error) {
        lastError = (error as Error).message;
        outcome = 'retry';
      }
      if (outcome === 'done') return;
      // A size conflict resolved: send again at once, a bounded number of times (a witness moving under us).
      if (outcome === 'resend' && (resends += 1) <= 2) continue;
      if (lane.pending !== null) {
        lane.counts.superseded += 1;
        return;
      }
      if (attempt >= attempts || this.closed) {
        lane.counts.failed += 1;
        this.options.log?.(
          `witness ${lane.target.url}: gave up on the checkpoint after ${attempt} attempts (${lastError})`,
        );
        return;
      }
      lane.counts.retried += 1;
      await this.sleep((this.options.backoffMs ?? 500) * 2 ** (attempt - 1));
      attempt += 1;
    }
  }

  private async attempt(lane: Lane, note: string): Promise<Outcome> {
    const size = parseCheckpointBody(splitNote(note).text).size;
    if (lane.held > size) return 'done';
    const proof = lane.held === 0 ? [] : await this.options.consistency(lane.held, size);
    const body = `old ${lane.held}\n${proof.map((h) => `${h.toString('base64')}\n`).join('')}\n${note}`;
    const res = await this.fetch(`${lane.target.url.replace(/\/$/, '')}/add-checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body,
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
    });
    const text = (await res.text()).slice(0, 64 * 1024);
    if (res.status === 200) {
      const cosignatures = verifiedCosignatures(lane.target.vkey, note, text);
      if (cosignatures.length === 0) return this.refused(lane, 'its reply holds no cosignature by its vkey');
      lane.held = size;
      lane.counts.cosigned += 1;
      this.options.record(note, cosignatures);
      return 'done';
    }
    if (res.status === 409 && (res.headers.get('content-type') ?? '').startsWith('text/x.tlog.size')) {
      const held = Number(text.trim());
      // The witness holds another tree of the size it names: the log forked (or the witness did).
      if (!Number.isSafeInteger(held) || held === lane.held || held > size)
        return this.refused(lane, `it holds a tree of ${text.trim()} entries that this checkpoint does not extend`);
      lane.held = held;
      return 'resend';
    }
    if (res.status >= 400 && res.status < 500) return this.refused(lane, `${res.status} ${text.trim().slice(0, 200)}`);
    throw new Error(`${res.status} ${text.trim().slice(0, 200)}`);
  }

  private refused(lane: Lane, why: string): Outcome {
    lane.counts.refused += 1;
    this.options.log?.(`witness ${lane.target.url} refused the checkpoint: ${why}`);
    return 'done';
  }
}

/**
 * The cosignatures gathered for one checkpoint, beside the root's checkpoints: `DIR/<size, 16 digits>.cosigned`
 * holds the checkpoint note with every witness's cosignature line appended (a note any tlog client verifies).
 */
export function recordCosignatures(dir: string, note: string, lines: readonly string[]): string {
  const size = parseCheckpointBody(splitNote(note).text).size;
  const file = join(dir, `${String(size).padStart(16, '0')}.cosigned`);
  let current = note;
  try {
    const existing = readFileSync(file, 'utf8');
    if (existing.startsWith(note)) current = existing;
  } catch {
    // The first cosignature of this checkpoint.
  }
  const added = lines.filter((l) => !current.split('\n').includes(l));
  if (added.length === 0) return file;
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(file, `${current}${added.map((l) => `${l}\n`).join('')}`);
  return file;
}
