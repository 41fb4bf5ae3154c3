// The floor of any Node gateway on this machine: a plain node:http keep-alive forwarder, no governance, no parsing.
import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Headers that belong to one hop (RFC 9110 §7.6.1), not forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP.has(name)) out[name] = value;
  return out;
}

export interface BareProxy {
  url: string;
  close(): Promise<void>;
}

/** A forwarder to `upstreamUrl` (http://host:port) on 127.0.0.1, one pooled keep-alive connection per call in flight. */
export function bareProxy(upstreamUrl: string): Promise<BareProxy> {
  const upstream = new URL(upstreamUrl);
  const agent = new Agent({ keepAlive: true });
  const server: Server = createServer((req, res) => {
    const out = request(
      {
        agent,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: forwardable(req.headers),
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () =>
          new Promise((done) => {
            agent.destroy();
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    ),
  );
}
