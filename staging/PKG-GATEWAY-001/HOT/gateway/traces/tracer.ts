import type { IncomingHttpHeaders } from 'node:http';
import {
  type Context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import type { GovernedObserver, ObservedCall, ObservedConclusion } from '#router/observer.js';
import { attemptAttributes, contentAttributes, exchangeAttributes, requestAttributes } from './attributes.js';
import { type BatchOptions, BoundedBatch, DEFAULT_BATCH, type SpanCounts } from './batch.js';
import type { TraceSettings } from './config.js';

/** A gateway response the span waits for: its 'close' is when the client's last byte was released (or it left). */
export interface Released {
  once(event: 'close', listener: () => void): unknown;
}

/** One call being traced, by its request id. */
interface Pending {
  parent: Context;
  span: Span | null;
  /** When each upstream attempt was sent, in order (epoch ms). */
  attempts: number[];
  concluded: boolean;
  /** No response to wait for (a `cplane route` call), or the response closed. */
  released: boolean;
}

const propagator = new W3CTraceContextPropagator();

/**
 * One `chat {model}` span per governed call (the GenAI semantic conventions), told by the one pipeline's observer:
 * opened at admission under the client's `traceparent`, given the EXCHANGE's attributes at conclusion, a child span
 * per upstream attempt, and ended when the client's last byte was released. All of it O(1) on the call's path; spans
 * leave through a bounded queue exported off it (batch.ts).
 */
export class GatewayTracer implements GovernedObserver {
  /** Gateway requests by id, until their response closes (bounded by the connections the gateway holds). */
  private readonly pending = new Map<string, Pending>();
  private readonly calls = new WeakMap<ObservedCall, Pending>();
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;
  private readonly batch: BoundedBatch;

  constructor(
    private readonly settings: TraceSettings,
    exporter: SpanExporter = exporterFor(settings),
    batch: BatchOptions = DEFAULT_BATCH,
    private readonly now: () => number = Date.now,
  ) {
    this.batch = new BoundedBatch(exporter, batch);
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
      spanProcessors: [this.batch],
    });
    this.tracer = this.provider.getTracer('cplane-gateway');
  }

  get counts(): SpanCounts {
    return this.batch.counts;
  }

  /** A gateway request arrived: its trace context is kept for the call it may become, until its response closes. */
  inbound(requestId: string, headers: IncomingHttpHeaders, response: Released): void {
    const carrier = { traceparent: headers.traceparent, tracestate: headers.tracestate };
    const parent = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
    const pending: Pending = { parent, span: null, attempts: [], concluded: false, released: false };
    this.pending.set(requestId, pending);
    response.once('close', () => {
      pending.released = true;
      this.pending.delete(requestId);
      if (pending.concluded) pending.span?.end(this.now());
    });
  }

  admitted(call: ObservedCall): void {
    const id = call.request.request_id;
    const pending = (id === undefined ? undefined : this.pending.get(id)) ?? {
      parent: ROOT_CONTEXT,
      span: null,
      attempts: [],
      concluded: false,
      released: true,
    };
    this.calls.set(call, pending);
    pending.span = this.tracer.startSpan(
      `chat ${call.request.model_id}`,
      { kind: SpanKind.CLIENT, startTime: this.now(), attributes: requestAttributes(call) },
      pending.parent,
    );
  }

  refused(): void {}

  firstToken(call: ObservedCall, ms: number): void {
    this.find(call)?.span?.addEvent('gen_ai.first_token', { 'cplane.ms_after_admission': ms }, this.now());
  }

  attemptStarted(call: ObservedCall): void {
    this.find(call)?.attempts.push(this.now());
  }

  concluded(call: ObservedCall, seen: ObservedConclusion): void {
    const pending = this.find(call);
    const span = pending?.span;
    if (pending === undefined || span === null || span === undefined) return;
    span.setAttributes(exchangeAttributes(seen));
    if (this.settings.captureContent) span.setAttributes(contentAttributes(call, seen));
    if (seen.exchange.decision !== 'SUCCESS')
      span.setStatus({ code: SpanStatusCode.ERROR, message: seen.exchange.reason.slice(0, 200) });
    this.attemptSpans(span, pending.attempts, seen, call.request.model_id);
    pending.concluded = true;
    if (pending.released) span.end(this.now());
  }

  /** Spans still queued are sent (bounded by the exporter's timeout); the exporter is closed. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  private find(call: ObservedCall): Pending | undefined {
    return this.calls.get(call);
  }

  /** A child per attempt the EXCHANGE lists, from when it was sent for as long as its record says it took. */
  private attemptSpans(span: Span, starts: readonly number[], seen: ObservedConclusion, requested: string): void {
    const meta = (seen.exchange.metadata ?? {}) as Record<string, unknown>;
    const records = Array.isArray(meta.attempts) ? (meta.attempts as Record<string, unknown>[]) : [];
    const parent = trace.setSpan(ROOT_CONTEXT, span);
    const model = typeof meta.model_id === 'string' && meta.model_id !== '' ? meta.model_id : requested;
    records.forEach((record, i) => {
      const start = starts[i] ?? this.now();
      const took = typeof record.latency_ms === 'number' && record.latency_ms >= 0 ? record.latency_ms : 0;
      const child = this.tracer.startSpan(
        `chat ${typeof record.model === 'string' ? record.model : model}`,
        { kind: SpanKind.CLIENT, startTime: start, attributes: attemptAttributes(record) },
        parent,
      );
      if (record.outcome !== 'success') child.setStatus({ code: SpanStatusCode.ERROR });
      child.end(start + took);
    });
  }
}

function exporterFor(settings: TraceSettings): SpanExporter {
  const config = {
    url: settings.url,
    headers: settings.headers,
    timeoutMillis: settings.timeoutMs,
    concurrencyLimit: 1,
  };
  return settings.protocol === 'http/json' ? new JsonExporter(config) : new ProtobufExporter(config);
}
