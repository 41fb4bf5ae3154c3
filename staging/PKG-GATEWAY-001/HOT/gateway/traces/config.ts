import { CpError, show } from '#kernel/errors.js';

/** Where and how spans are exported: from the gateway config's `traces` section, else the OTEL_* variables. */
export interface TraceSettings {
  url: string;
  protocol: 'http/json' | 'http/protobuf';
  headers: Record<string, string>;
  serviceName: string;
  timeoutMs: number;
  /** Prompt and response text on the span (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT); off by default. */
  captureContent: boolean;
}

/** The gateway config's `traces` section (HOT/schemas/gateway-config.schema.json). */
export interface TraceConfig {
  enabled?: boolean;
  endpoint?: string;
  protocol?: TraceSettings['protocol'];
  /** Each header's value is read from the environment variable it names: a collector's key never sits in config. */
  headers?: { name: string; value_env: string }[];
  service_name?: string;
  timeout_ms?: number;
  capture_content?: boolean;
}

const DEFAULT_BASE = 'http://localhost:4318';
const DEFAULT_SERVICE = 'cplane-gateway';
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The trace export of a gateway: its config's `traces` section when the operator set one, else the environment.
 * The section, when present, is the whole story and the OTEL_* variables are not read, as OpenTelemetry's
 * declarative configuration treats a config file (an explicit operator choice is never overridden by an ambient
 * variable); only the header variables it names are read from the environment.
 */
export function gatewayTraceSettings(config: TraceConfig | undefined, env: NodeJS.ProcessEnv): TraceSettings | null {
  return config === undefined ? traceSettings(env) : traceSettingsFromConfig(config, env);
}

export function traceSettingsFromConfig(config: TraceConfig, env: NodeJS.ProcessEnv): TraceSettings | null {
  if (config.enabled === false) return null;
  const url = config.endpoint ?? `${DEFAULT_BASE}/v1/traces`;
  checkUrl(url);
  const headers: Record<string, string> = {};
  for (const { name, value_env } of config.headers ?? []) {
    const value = set(env[value_env]);
    if (value === undefined)
      throw new CpError(
        'ERR_GATEWAY_CONFIG_INVALID',
        `the traces header ${show(name)} reads the environment variable ${show(value_env)}, which is not set`,
        {
          hint: `export ${value_env} in the gateway's environment, or remove the header with \`cplane config set gateway.traces.headers …\``,
          details: { pointer: '/traces/headers', problem: 'header variable not set' },
        },
      );
    headers[name.toLowerCase()] = value;
  }
  return {
    url,
    protocol: config.protocol ?? 'http/protobuf',
    headers,
    serviceName: config.service_name ?? DEFAULT_SERVICE,
    timeoutMs: config.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    captureContent: config.capture_content === true,
  };
}
const PROTOCOLS: ReadonlySet<string> = new Set(['http/json', 'http/protobuf']);

const set = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
};

/**
 * The trace export the environment asks for; null when none. As the OpenTelemetry SDK specification reads them:
 * `OTEL_TRACES_EXPORTER` (a list: `otlp` exports, `none` or unset does not, unless an OTLP endpoint is set, which
 * says where spans should go), the signal-specific `OTEL_EXPORTER_OTLP_TRACES_*` over the generic `OTEL_EXPORTER_OTLP_*`
 * (a generic endpoint gets `/v1/traces` appended, a signal's is used as is), `OTEL_SDK_DISABLED=true` turns it off.
 * Only the OTLP/HTTP protocols are spoken; `grpc` (or any other) is refused with ERR_GATEWAY_CONFIG_INVALID.
 */
export function traceSettings(env: NodeJS.ProcessEnv): TraceSettings | null {
  if (set(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return null;
  const exporters = (set(env.OTEL_TRACES_EXPORTER) ?? '').split(',').map((e) => e.trim().toLowerCase());
  const signalEndpoint = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const baseEndpoint = set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const named = exporters.includes('otlp');
  if (!named && (exporters.some((e) => e !== '') || (signalEndpoint ?? baseEndpoint) === undefined)) return null;
  const protocol =
    set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? set(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf';
  if (!PROTOCOLS.has(protocol))
    throw new CpError(
      'ERR_GATEWAY_CONFIG_INVALID',
      `OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(protocol)} is not spoken: traces are exported over OTLP/HTTP`,
      { hint: 'set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf or http/json (port 4318 on a collector)' },
    );
  const url = signalEndpoint ?? `${(baseEndpoint ?? DEFAULT_BASE).replace(/\/+$/, '')}/v1/traces`;
  checkUrl(url);
  const timeout = Number(
    set(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) ?? set(env.OTEL_EXPORTER_OTLP_TIMEOUT) ?? DEFAULT_TIMEOUT_MS,
  );
  return {
    url,
    protocol: protocol as TraceSettings['protocol'],
    headers: {
      ...parseHeaders(set(env.OTEL_EXPORTER_OTLP_HEADERS)),
      ...parseHeaders(set(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS)),
    },
    serviceName: set(env.OTEL_SERVICE_NAME) ?? DEFAULT_SERVICE,
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? Math.min(timeout, 60_000) : DEFAULT_TIMEOUT_MS,
    captureContent: set(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)?.toLowerCase() === 'true',
  };
}

function checkUrl(url: string): void {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new CpError(
      'ERR_GATEWAY_CONFIG_INVALID',
      `the OTLP traces endpoint ${JSON.stringify(url.slice(0, 200))} is not an http(s) URL`,
      {
        hint: 'set gateway.traces.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT to the collector, e.g. http://localhost:4318',
      },
    );
}

/** `key1=value1,key2=value2`, each part URL-encoded (the W3C baggage format the specification names). */
function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (text === undefined) return headers;
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    try {
      const name = decodeURIComponent(pair.slice(0, eq).trim()).toLowerCase();
      const value = decodeURIComponent(pair.slice(eq + 1).trim());
      if (name !== '') headers[name] = value;
    } catch {
      // A malformed escape: the pair is skipped, as the SDKs do.
    }
  }
  return headers;
}
