import { CpError } from '#kernel/errors.js';
import { effectiveConfig } from '#kernel/config/effective.js';
import { readOverrides } from '#kernel/config/overrides.js';
import { validateSection } from '#kernel/config/section-schema.js';
import type { Family } from './surfaces.js';
import type { AlertSettings } from './alerts/open-alerts.js';
import type { TraceConfig } from './traces/config.js';
import type { WitnessTarget } from '#kernel/ledger/merkle/witness-push.js';

/** The root's `gateway` config section (HOT/schemas/gateway-config.schema.json), as `cplane serve` uses it. */
export interface GatewayConfig {
  host: string;
  port: number;
  body_limit_bytes: number;
  drain_timeout_ms: number;
  /** Open client connections at once; more are closed as they arrive. */
  max_connections: number;
  /** Time a client has to send its request headers. */
  headers_timeout_ms: number;
  /** Time a client has to send its whole request (headers and body); the reply is not bounded by it. */
  request_timeout_ms: number;
  /** The longest one call may take upstream, its reply and retries included. */
  call_deadline_ms: number;
  /** Refusals without an authentic key recorded one by one per second; the rest are counted. */
  unauthenticated_refusals_per_second: number;
  checkpoint?: { every_entries: number; every_seconds: number; witnesses?: WitnessTarget[] };
  /** A postgres:// URL: the ledger, budgets, breakers and revocations shared by several hosts; absent: SQLite. */
  store?: string;
  /** The provider serving each client family, by installed id (`bedrock` for the Anthropic surface); absent: the default. */
  upstreams?: Partial<Record<Family, string>>;
  /** Model aliases over upstream deployments (gateway/routing.ts parses it, docs/routing.md); absent: none. */
  routing?: unknown;
  /** The operator's alert webhook (gateway/alerts/, docs/production.md); absent: no alerts. */
  alerts?: AlertSettings;
  /** The trace export (gateway/traces/config.ts, docs/production.md); absent: the OTEL_* environment variables. */
  traces?: TraceConfig;
  /** Input counted upstream for reservations (docs/production.md, "How much a call reserves"); absent: off. */
  count_input_tokens?: { anthropic?: boolean; gemini?: boolean; timeout_ms?: number };
}

/** What a root without these keys in its default (one bootstrapped before they existed) gets. */
export const GATEWAY_DEFAULTS = {
  max_connections: 4096,
  headers_timeout_ms: 30_000,
  request_timeout_ms: 120_000,
  call_deadline_ms: 3_600_000,
  unauthenticated_refusals_per_second: 20,
} as const;

/** The effective `gateway` section: the package default with the operator's overrides, validated. */
export function loadGatewayConfig(root: string): GatewayConfig {
  const overrides = readOverrides(root).value;
  const value = effectiveConfig(root, 'gateway', undefined, overrides);
  const verdict = validateSection(root, 'gateway', value);
  if (!verdict.ok) {
    throw new CpError(
      'ERR_GATEWAY_CONFIG_INVALID',
      `the gateway config${overrides.overrides.gateway ? ' with the operator overrides' : ''} is invalid at ${verdict.pointer}: ${verdict.message}`,
      {
        hint: 'see `cplane config show gateway`; fix the override with `cplane config set` or `cplane config unset`',
        details: { pointer: verdict.pointer, problem: verdict.message },
      },
    );
  }
  const config = { ...GATEWAY_DEFAULTS, ...(value as Partial<GatewayConfig>) } as GatewayConfig;
  if (config.headers_timeout_ms > config.request_timeout_ms) {
    throw new CpError(
      'ERR_GATEWAY_CONFIG_INVALID',
      `the gateway config's headers_timeout_ms (${config.headers_timeout_ms}) is longer than request_timeout_ms (${config.request_timeout_ms})`,
      {
        hint: 'the headers are part of the request: make headers_timeout_ms at most request_timeout_ms',
        details: { headers_timeout_ms: config.headers_timeout_ms, request_timeout_ms: config.request_timeout_ms },
      },
    );
  }
  return config;
}

/** The same defaults as the Gateway's options (in-process gateways: benches and tests). */
export const GATEWAY_LIMITS = {
  maxConnections: GATEWAY_DEFAULTS.max_connections,
  headersTimeoutMs: GATEWAY_DEFAULTS.headers_timeout_ms,
  requestTimeoutMs: GATEWAY_DEFAULTS.request_timeout_ms,
} as const;
