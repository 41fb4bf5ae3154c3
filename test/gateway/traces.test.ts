// OpenTelemetry GenAI traces from `cplane serve`, configured by the standard OTEL_* environment variables: a local
// OTLP/HTTP receiver decodes what the exporter sends (OTLP/JSON, and protobuf with the opentelemetry-proto trace
// messages) and finds one `chat {model}` span per call whose attributes equal the call's EXCHANGE, parented to the
// client's traceparent, with a child span per upstream attempt; with the receiver down, calls still succeed and the
// lost spans are counted in /metrics.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';
import { cli, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

/** The opentelemetry-proto messages a trace export holds (opentelemetry/proto/{collector/trace,trace,common,resource}/v1). */
const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10; repeated Event events = 11; uint32 dropped_events_count = 12;
  repeated Link links = 13; uint32 dropped_links_count = 14; Status status = 15; fixed32 flags = 16;
}
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7; }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;
const ExportRequest = protobuf.parse(OTLP_PROTO).root.lookupType('otlp.ExportTraceServiceRequest');

interface SeenSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  start: number;
  end: number;
  attributes: Record<string, unknown>;
  service: string;
}

interface Receiver {
  url: string;
  spans: SeenSpan[];
  requests: { contentType: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** An AnyValue as either encoding gives it (JSON: camelCase members, int64 as a string or number). */
function anyValue(value: Json | undefined): unknown {
  if (value === undefined) return undefined;
  const v = value as Json;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return ((v.arrayValue as Json).values as Json[] | undefined)?.map(anyValue) ?? [];
  return undefined;
}

const attributesOf = (list: Json[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key as string, anyValue(kv.value as Json)]));

/** Both encodings read into one shape: protobuf decoded to an object with hex ids, JSON as OTLP/JSON writes them. */
function spansOf(body: Json, hex: (id: unknown) => string): SeenSpan[] {
  const out: SeenSpan[] = [];
  for (const rs of (body.resourceSpans as Json[] | undefined) ?? []) {
    const service = attributesOf((rs.resource as Json | undefined)?.attributes as Json[])['service.name'] as string;
    for (const ss of (rs.scopeSpans as Json[] | undefined) ?? [])
      for (const span of (ss.spans as Json[] | undefined) ?? [])
        out.push({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: hex(span.parentSpanId),
          name: span.name as string,
          start: Number(span.startTimeUnixNano) / 1e6,
          end: Number(span.endTimeUnixNano) / 1e6,
          attributes: attributesOf(span.attributes as Json[]),
          service,
        });
  }
  return out;
}

async function startReceiver(): Promise<Receiver> {
  const spans: SeenSpan[] = [];
  const requests: Receiver['requests'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const contentType = req.headers['content-type'] ?? '';
      requests.push({ contentType, headers: req.headers });
      if (req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith('application/x-protobuf')) {
        const decoded = ExportRequest.toObject(ExportRequest.decode(bytes), { longs: String, bytes: Buffer }) as Json;
        spans.push(...spansOf(decoded, (id) => (Buffer.isBuffer(id) ? id.toString('hex') : '')));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else {
        const decoded = JSON.parse(bytes.toString('utf8')) as Json;
        spans.push(...spansOf(decoded, (id) => (typeof id === 'string' ? id.toLowerCase() : '')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function serveTraced(env: NodeJS.ProcessEnv, configure: (root: string) => void = () => {}): Promise<Served> {
  const served = await startServed([], configure, env);
  cleanups.push(() => served.cleanup());
  return served;
}

async function until<T>(what: string, read: () => T | null): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = read();
    if (value !== null) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

async function post(served: Served, path: string, headers: Record<string, string>, body: unknown): Promise<number> {
  const res = await fetch(`${served.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

/** A scripted run (whole and streamed, both APIs, a retried call) checked span by span against its EXCHANGEs. */
async function checkRun(protocol: 'http/json' | 'http/protobuf'): Promise<void> {
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const served = await serveTraced({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=abc%20123',
    OTEL_SERVICE_NAME: 'gateway-under-test',
  });
  const key = issueKey('AGENT-TRACES');
  const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`;
  const anthropic = {
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
    'x-cplane-session': 'SES-TRACE',
    traceparent,
  };
  const openai = { authorization: `Bearer ${key}`, 'x-cplane-session': 'SES-TRACE-2' };
  const message = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };
  const chat = { model: 'gpt-4.1-mini', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };
  assert.equal(await post(served, '/v1/messages', anthropic, message), 200);
  assert.equal(await post(served, '/v1/messages', anthropic, { ...message, stream: true }), 200);
  const overloaded = { type: 'error', error: { type: 'api_error', message: 'boom' } };
  served.upstream.faults.push({ status: 500, body: overloaded });
  assert.equal(await post(served, '/v1/messages', anthropic, message), 200);
  assert.equal(await post(served, '/v1/chat/completions', openai, { ...chat, stream: true }), 200);
  const exchanges = ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE');
  assert.equal(exchanges.length, 4);
  const calls = await until('a span per call', () => {
    const chats = receiver.spans.filter((s) => s.name.startsWith('chat ') && s.attributes['cplane.exchange_id']);
    return chats.length >= 4 ? chats : null;
  });
  assert.equal(calls.length, 4, 'one span per call, no more');
  for (const exchange of exchanges) {
    const meta = exchange.metadata;
    const span = calls.find((s) => s.attributes['cplane.exchange_id'] === exchange.id);
    assert.ok(span, `a span for EXCHANGE ${exchange.id}`);
    const a = span.attributes;
    assert.equal(span.service, 'gateway-under-test');
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.provider.name'], meta.contract_id === 'openai.chat' ? 'openai' : 'anthropic');
    assert.equal(span.name, `chat ${a['gen_ai.request.model']}`);
    assert.equal(a['gen_ai.response.model'], meta.model_id);
    assert.equal(a['gen_ai.usage.input_tokens'], meta.input_tokens);
    assert.equal(a['gen_ai.usage.output_tokens'], meta.output_tokens);
    assert.equal(a['gen_ai.usage.cache_read.input_tokens'], meta.cache_read_tokens ?? undefined);
    assert.equal(a['gen_ai.usage.cache_creation.input_tokens'], meta.cache_write_tokens ?? undefined);
    assert.deepEqual(a['gen_ai.response.finish_reasons'], [meta.raw_stop_reason ?? meta.finish_reason]);
    assert.equal(a['cplane.session_id'], meta.session_id);
    assert.equal(a['gen_ai.conversation.id'], meta.session_id);
    assert.equal(a['cplane.dispatch_id'], meta.dispatch_entry_id);
    // Content is off unless the operator turns it on.
    assert.equal(a['gen_ai.input.messages'], undefined);
    assert.equal(a['gen_ai.output.messages'], undefined);
    if (meta.session_id === 'SES-TRACE') {
      assert.equal(span.traceId, TRACE_ID, 'the span joins the client trace');
      assert.equal(span.parentSpanId, PARENT_ID, 'parented to the client span');
    } else {
      assert.notEqual(span.traceId, TRACE_ID);
      assert.equal(span.parentSpanId, '');
    }
    const attempts = meta.attempts as { outcome: string; status: number | null }[];
    const children = await until('a child per attempt', () => {
      const found = receiver.spans.filter((s) => s.parentSpanId === span.spanId);
      return found.length >= attempts.length ? found : null;
    });
    assert.equal(children.length, attempts.length);
    children.sort((x, y) => (x.attributes['cplane.attempt'] as number) - (y.attributes['cplane.attempt'] as number));
    children.forEach((child, i) => {
      assert.equal(child.traceId, span.traceId);
      assert.equal(child.attributes['http.response.status_code'], attempts[i]?.status ?? undefined);
      assert.ok(child.start >= span.start && child.end <= span.end, 'an attempt lies within its call');
    });
    assert.ok(span.end >= span.start);
  }
  const retried = exchanges.find((e) => (e.metadata.attempts as unknown[]).length === 2);
  assert.ok(retried, 'the retried call has two attempts');
  const sent = receiver.requests.find((r) => r.headers['x-collector-key'] !== undefined);
  assert.equal(sent?.headers['x-collector-key'], 'abc 123', 'OTEL_EXPORTER_OTLP_HEADERS sent');
  assert.ok(
    receiver.requests.every((r) =>
      r.contentType.startsWith(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf'),
    ),
  );
}

test('OTLP/HTTP protobuf: one chat span per call, equal to its EXCHANGE, under the client traceparent', async () => {
  await checkRun('http/protobuf');
});

test('OTLP/HTTP JSON: the same spans', async () => {
  await checkRun('http/json');
});

test('content capture is an operator switch: prompt and answer on the span, scrubbed of the client key', async () => {
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const served = await serveTraced({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
  });
  const key = issueKey('AGENT-TRACES');
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-cplane-session': 'SES-CONTENT' };
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: `Hi ${key}` }] };
  assert.equal(await post(served, '/v1/messages', headers, body), 200);
  const span = await until('the span', () => receiver.spans.find((s) => s.attributes['cplane.exchange_id']) ?? null);
  const input = span.attributes['gen_ai.input.messages'] as string;
  assert.match(input, /Hi /);
  assert.ok(!input.includes(key), 'the client key is scrubbed');
  const output = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as { role: string }[];
  assert.equal(output[0]?.role, 'assistant');
});

test('configured by `cplane config set gateway.traces.…` alone: spans arrive; the OTEL_* variables are not read', async () => {
  const configured = await startReceiver();
  const ambient = await startReceiver();
  cleanups.push(
    () => configured.close(),
    () => ambient.close(),
  );
  const served = await serveTraced(
    {
      // The variables would send elsewhere: the operator's section is the whole story (OpenTelemetry's own rule for a
      // config file), so the ambient receiver hears nothing.
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: ambient.url,
      OTEL_SERVICE_NAME: 'from-the-environment',
      COLLECTOR_TEAM_KEY: 'team key 42',
    },
    (root) => {
      configSet(root, 'gateway.traces.endpoint', `${configured.url}/v1/traces`);
      configSet(root, 'gateway.traces.protocol', 'http/json');
      configSet(root, 'gateway.traces.service_name', 'gateway-from-config');
      configSet(root, 'gateway.traces.headers', '[{"name": "x-collector-key", "value_env": "COLLECTOR_TEAM_KEY"}]');
      configSet(root, 'gateway.traces.capture_content', 'true');
      // A header's value is never config: a key-shaped value is refused before it is written.
      const refused = cli([
        'config',
        'set',
        'gateway.traces.headers',
        '[{"name": "authorization", "value_env": "X", "value": "Bearer sk-live-0123456789abcdef"}]',
        '--root',
        root,
      ]);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /ERR_CONFIG_SECRET/);
    },
  );
  const key = issueKey('AGENT-TRACES');
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-cplane-session': 'SES-CONFIG' };
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello config' }] };
  assert.equal(await post(served, '/v1/messages', headers, body), 200);
  assert.equal(await post(served, '/v1/messages', headers, { ...body, stream: true }), 200);
  const exchanges = ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE');
  assert.equal(exchanges.length, 2);
  const spans = await until('a span per call', () => {
    const found = configured.spans.filter((s) => s.attributes['cplane.exchange_id'] !== undefined);
    return found.length >= 2 ? found : null;
  });
  assert.deepEqual(spans.map((s) => s.attributes['cplane.exchange_id']).sort(), exchanges.map((e) => e.id).sort());
  for (const span of spans) {
    assert.equal(span.service, 'gateway-from-config');
    assert.equal(span.attributes['gen_ai.conversation.id'], 'SES-CONFIG');
    assert.match(span.attributes['gen_ai.input.messages'] as string, /Hello config/, 'content capture from config');
  }
  assert.ok(configured.requests.length > 0);
  for (const r of configured.requests) {
    assert.ok(r.contentType.startsWith('application/json'), 'the configured protocol (http/json)');
    assert.equal(r.headers['x-collector-key'], 'team key 42', 'the header read from the variable the config names');
  }
  assert.equal(ambient.requests.length, 0, 'OTEL_EXPORTER_OTLP_ENDPOINT is not read when the section is set');
});

test('with the receiver down, calls succeed and the lost spans are counted in /metrics', async () => {
  const down = await startReceiver();
  const url = down.url;
  await down.close();
  const served = await serveTraced({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: url,
    OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
  });
  const key = issueKey('AGENT-TRACES');
  const scraper = issueKey('AGENT-SCRAPER', ['metrics:read']);
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-cplane-session': 'SES-DOWN' };
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };
  const statuses = await Promise.all(Array.from({ length: 5 }, () => post(served, '/v1/messages', headers, body)));
  assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
  const dropped = await (async () => {
    for (let i = 0; i < 300; i++) {
      const res = await fetch(`${served.url}/metrics`, { headers: { authorization: `Bearer ${scraper}` } });
      const text = await res.text();
      const match = /^cplane_trace_spans_dropped_total\{reason="export_failed"\} (\d+)$/m.exec(text);
      if (match && Number(match[1]) > 0) return Number(match[1]);
      await new Promise((r) => setTimeout(r, 100));
    }
    return 0;
  })();
  assert.ok(dropped >= 5, `the call spans are counted lost (${dropped})`);
});
