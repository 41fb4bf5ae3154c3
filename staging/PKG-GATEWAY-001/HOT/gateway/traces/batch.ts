import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';

/** Counts /metrics shows: spans handed to the exporter and accepted, and spans lost (a full queue, a failed export). */
export interface SpanCounts {
  exported: number;
  droppedQueueFull: number;
  droppedExportFailed: number;
}

export interface BatchOptions {
  /** The most ended spans held for export; one more is dropped (and counted). */
  maxQueue: number;
  maxBatch: number;
  /** How long an ended span may wait for a batch to fill. */
  delayMs: number;
}

export const DEFAULT_BATCH: BatchOptions = { maxQueue: 2048, maxBatch: 512, delayMs: 1000 };

/**
 * Ended spans into a bounded queue, exported in batches by a timer, one export at a time, never on a call's path:
 * `onEnd` is an O(1) push (or a counted drop), so an exporter that is slow or down costs a call nothing. A batch
 * the exporter refuses or cannot deliver is counted lost, not retried here (the exporter retries what OTLP says
 * may be retried).
 */
export class BoundedBatch implements SpanProcessor {
  readonly counts: SpanCounts = { exported: 0, droppedQueueFull: 0, droppedExportFailed: 0 };
  private queue: ReadableSpan[] = [];
  private timer: NodeJS.Timeout | null = null;
  private exporting: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly options: BatchOptions = DEFAULT_BATCH,
  ) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.closed) return;
    if (this.queue.length >= this.options.maxQueue) {
      this.counts.droppedQueueFull += 1;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.options.maxBatch) this.schedule(0);
    else this.schedule(this.options.delayMs);
  }

  async forceFlush(): Promise<void> {
    while (this.queue.length > 0 || this.exporting !== null) {
      if (this.exporting !== null) await this.exporting;
      else this.exportNext();
    }
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.exporter.shutdown();
  }

  private schedule(ms: number): void {
    if (this.exporting !== null) return;
    if (this.timer !== null) {
      if (ms > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.exportNext();
    }, ms);
    // A pending batch never holds the process open.
    this.timer.unref();
  }

  private exportNext(): void {
    if (this.exporting !== null || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxBatch);
    this.exporting = new Promise<void>((resolve) => {
      const done = (result: ExportResult): void => {
        if (result.code === ExportResultCode.SUCCESS) this.counts.exported += batch.length;
        else this.counts.droppedExportFailed += batch.length;
        resolve();
      };
      try {
        this.exporter.export(batch, done);
      } catch {
        done({ code: ExportResultCode.FAILED });
      }
    }).then(() => {
      this.exporting = null;
      if (this.queue.length > 0) this.schedule(this.queue.length >= this.options.maxBatch ? 0 : this.options.delayMs);
    });
  }
}
