// A server under test in its own process, for the gateway bench: the bare forwarder or the in-process Gateway at a
// durability level. The client stays in the bench process, so it reads a reply's bytes when the server writes them,
// not when the server's synchronous work (a durable commit) hands the thread back. Argument: one JSON ServedSpec.
// Prints {"url","key","control"} once listening; GET <control>/commits answers the stores' durable commits so far.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bareProxy } from './bare-proxy.js';

export type ServedSpec =
  | { kind: 'bare'; upstreamUrl: string }
  | {
      kind: 'gateway';
      tmp: string;
      name: string;
      upstreamUrl: string;
      durability: 'full' | 'exchange' | 'relaxed';
      /** Budget and rate limits no call reaches (the growth row's thousands of calls). */
      roomy?: boolean;
      /** Spans exported to this OTLP/HTTP URL (one nothing listens on: a receiver that is down). */
      tracesUrl?: string;
    };

const roomy = { max_tokens: 1e12, max_cost: 1e6 };

interface Served {
  url: string;
  key: string;
  commits(): number;
  close(): Promise<void>;
}

async function serve(spec: ServedSpec): Promise<Served> {
  if (spec.kind === 'bare') {
    const bare = await bareProxy(spec.upstreamUrl);
    return { url: bare.url, key: '', commits: () => 0, close: bare.close };
  }
  const { inProcessGateway } = await import('./in-process-gateway.js');
  const served = await inProcessGateway({
    tmp: spec.tmp,
    name: spec.name,
    upstreamUrl: spec.upstreamUrl,
    durability: spec.durability,
    ...(spec.tracesUrl === undefined ? {} : { tracesUrl: spec.tracesUrl }),
    ...(spec.roomy === true
      ? {
          budget: (base: Record<string, unknown>) => ({
            ...base,
            limits: { session: { default: roomy }, work_order: { default: roomy }, agent: { default: roomy } },
            rate_limits: { session: { window_ms: 60_000, max_requests: 1e6, max_tokens: 1e12 } },
          }),
        }
      : {}),
  });
  return { url: served.url, key: served.key, commits: () => served.durableCommits(), close: served.close };
}

const served = await serve(JSON.parse(process.argv[2] ?? '{}') as ServedSpec);
const control = createServer((_req, res) => res.end(String(served.commits())));
control.listen(0, '127.0.0.1', () => {
  const port = (control.address() as AddressInfo).port;
  process.stdout.write(
    `${JSON.stringify({ url: served.url, key: served.key, control: `http://127.0.0.1:${port}` })}\n`,
  );
});
process.once('SIGTERM', () => void served.close().finally(() => process.exit(0)));
