// The trace exporter's settings as the OpenTelemetry specification reads the OTEL_* variables, and the span's life:
// it ends when the client's response closed, not when the EXCHANGE was written; a full queue drops and counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { ObservedCall, ObservedConclusion } from '#router/observer.js';
import { gatewayTraceSettings, traceSettings } from '../../gateway/traces/config.js';
import { GatewayTracer } from '../../gateway/traces/tracer.js';

test('settings: off unless asked; endpoints, protocol, headers and service name as the specification reads them', () => {
  assert.equal(traceSettings({}), null);
  assert.equal(traceSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), null);
  assert.equal(traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), null);
  const defaults = traceSettings({ OTEL_TRACES_EXPORTER: 'otlp' });
  assert.equal(defaults?.url, 'http://localhost:4318/v1/traces');
  assert.equal(defaults?.protocol, 'http/protobuf');
  assert.equal(defaults?.serviceName, 'cplane-gateway');
  assert.equal(defaults?.captureContent, false);
  const base = traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/' });
  assert.equal(base?.url, 'https://collector.example:4318/v1/traces');
  const signal = traceSettings({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:9999/custom',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%2Cb,x-team=one',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=two',
    OTEL_SERVICE_NAME: 'gw',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE',
  });
  assert.equal(signal?.url, 'http://collector:9999/custom');
  assert.equal(signal?.protocol, 'http/json');
  assert.deepEqual(signal?.headers, { 'api-key': 'a,b', 'x-team': 'two' });
  assert.equal(signal?.serviceName, 'gw');
  assert.equal(signal?.captureContent, true);
  assert.throws(
    () => traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    (e: Error & { code?: string }) => e.code === 'ERR_GATEWAY_CONFIG_INVALID' && /grpc/.test(e.message),
  );
  assert.throws(
    () => traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'file:///etc/passwd' }),
    (e: Error & { code?: string }) => e.code === 'ERR_GATEWAY_CONFIG_INVALID',
  );
});

test('settings from the gateway config: the section alone decides, headers read from the variables it names', () => {
  const env = {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://from-env:4318',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-env=1',
    OTEL_SERVICE_NAME: 'env-name',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    COLLECTOR_KEY: 'k-123',
  };
  assert.equal(
    gatewayTraceSettings(undefined, env)?.url,
    'http://from-env:4318/v1/traces',
    'no section: the variables',
  );
  const defaults = gatewayTraceSettings({}, env);
  assert.deepEqual(defaults, {
    url: 'http://localhost:4318/v1/traces',
    protocol: 'http/protobuf',
    headers: {},
    serviceName: 'cplane-gateway',
    timeoutMs: 10_000,
    captureContent: false,
  });
  const configured = gatewayTraceSettings(
    {
      endpoint: 'http://collector:9999/custom',
      protocol: 'http/json',
      headers: [{ name: 'X-Collector-Key', value_env: 'COLLECTOR_KEY' }],
      service_name: 'gw',
      timeout_ms: 2500,
      capture_content: true,
    },
    env,
  );
  assert.equal(configured?.url, 'http://collector:9999/custom', 'used as is');
  assert.equal(configured?.protocol, 'http/json');
  assert.deepEqual(configured?.headers, { 'x-collector-key': 'k-123' });
  assert.equal(configured?.serviceName, 'gw');
  assert.equal(configured?.timeoutMs, 2500);
  assert.equal(configured?.captureContent, true);
  assert.equal(gatewayTraceSettings({ enabled: false }, env), null);
  assert.equal(gatewayTraceSettings({}, { OTEL_SDK_DISABLED: 'true' })?.protocol, 'http/protobuf');
  assert.throws(
    () => gatewayTraceSettings({ headers: [{ name: 'authorization', value_env: 'MISSING_VAR' }] }, env),
    (e: Error & { code?: string }) =>
      e.code === 'ERR_GATEWAY_CONFIG_INVALID' && /MISSING_VAR/.test(e.message) && /authorization/.test(e.message),
  );
});

class Captured implements SpanExporter {
  spans: ReadableSpan[] = [];
  constructor(private readonly succeed = true) {}
  export(spans: ReadableSpan[], done: (r: { code: ExportResultCode }) => void): void {
    if (this.succeed) this.spans.push(...spans);
    done({ code: this.succeed ? ExportResultCode.SUCCESS : ExportResultCode.FAILED });
  }
  async shutdown(): Promise<void> {}
}

const SETTINGS = {
  url: 'http://127.0.0.1:1/v1/traces',
  protocol: 'http/json' as const,
  headers: {},
  serviceName: 's',
  timeoutMs: 1000,
  captureContent: false,
};

function observed(id: string): ObservedCall {
  return {
    request: {
      request_id: id,
      provider_id: 'openai',
      model_id: 'gpt-4.1-mini',
      session_id: 'SES-1',
      contract_id: 'openai.chat',
      agent_id: 'A',
      prompt: 'p',
    },
    start: 0,
    secrets: [],
  };
}

const conclusion: ObservedConclusion = {
  exchange: {
    event_type: 'EXCHANGE',
    submission_id: 'openai.chat',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { attempts: [{ attempt: 1, outcome: 'success', status: 200, kind: null, latency_ms: 5 }] },
  },
  exchangeId: 'E-1',
  cost: null,
  latencyMs: 5,
};

test('the span ends when the response closes, after the EXCHANGE; without a response, at conclusion', async () => {
  // Epoch milliseconds, as the gateway's clock gives: the SDK reads a number no later than performance.now() as a
  // performance timestamp (time since the process started), so a small fake time turns wall-clock once the test
  // process has run that long.
  const T0 = 1_700_000_000_000;
  let now = T0 + 1_000;
  const exporter = new Captured();
  const tracer = new GatewayTracer(SETTINGS, exporter, { maxQueue: 10, maxBatch: 10, delayMs: 1 }, () => now);
  const response = new EventEmitter();
  tracer.inbound('req-1', {}, response);
  const call = observed('req-1');
  tracer.admitted(call);
  tracer.attemptStarted(call);
  now = T0 + 1_010;
  tracer.concluded(call, conclusion);
  await tracer.shutdown().catch(() => {});
  assert.equal(exporter.spans.filter((s) => s.name === 'chat gpt-4.1-mini' && s.parentSpanContext).length, 1);
  assert.equal(
    exporter.spans.some((s) => s.attributes['cplane.exchange_id'] === 'E-1'),
    false,
    'not ended before the response closed',
  );
  const later = new Captured();
  const second = new GatewayTracer(SETTINGS, later, { maxQueue: 10, maxBatch: 10, delayMs: 1 }, () => now);
  const res = new EventEmitter();
  second.inbound('req-2', {}, res);
  const call2 = observed('req-2');
  second.admitted(call2);
  now = T0 + 1_020;
  second.concluded(call2, conclusion);
  now = T0 + 1_500;
  res.emit('close');
  now = T0 + 1_600;
  const direct = observed('route-1');
  second.admitted(direct);
  second.concluded(direct, { ...conclusion, exchangeId: 'E-2' });
  await second.shutdown();
  const spans = later.spans.filter((s) => s.attributes['cplane.exchange_id'] !== undefined);
  const [gateway, route] = ['E-1', 'E-2'].map((id) => spans.find((s) => s.attributes['cplane.exchange_id'] === id));
  assert.ok(gateway && route);
  assert.deepEqual(gateway.endTime, [1_700_000_001, 500_000_000], 'ended when the response closed (t=1.5 s)');
  assert.deepEqual(route.endTime, [1_700_000_001, 600_000_000], 'a call with no response ends at its conclusion');
});

test('a full queue drops spans and counts them; a failed export is counted lost', async () => {
  const failing = new Captured(false);
  const tracer = new GatewayTracer(SETTINGS, failing, { maxQueue: 2, maxBatch: 100, delayMs: 10_000 });
  for (let i = 0; i < 3; i++) {
    const call = observed(`r-${i}`);
    tracer.admitted(call);
    tracer.concluded(call, { ...conclusion, exchange: { ...conclusion.exchange, metadata: {} } });
  }
  assert.equal(tracer.counts.droppedQueueFull, 1);
  await tracer.shutdown();
  assert.equal(tracer.counts.droppedExportFailed, 2);
  assert.equal(tracer.counts.exported, 0);
});
