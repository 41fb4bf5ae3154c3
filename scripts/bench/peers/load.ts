// Load for the gateway benches: one Anthropic Messages call over a keep-alive agent, and requests per second with
// many concurrent clients.
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { TSC_OUT } from '../../lib/repo.js';
import { startProcess } from '../../lib/served-root.js';
import type { ServedSpec } from './served-child.js';

/** The local Anthropic upstream (peers/upstream.ts) in its own process; its URL. */
export async function startUpstreamProcess(): Promise<{ child: ChildProcess; url: string }> {
  return startProcess(process.execPath, [join(TSC_OUT, 'scripts', 'bench', 'peers', 'upstream.js')], {}, (o) => {
    const m = /\{"port":(\d+)\}/.exec(o);
    return m ? `http://127.0.0.1:${m[1]}` : null;
  });
}

/** A server under test (peers/served-child.ts) in its own process: its URL, cplane key and durable-commit count. */
export async function startServedProcess(
  spec: ServedSpec,
): Promise<{ child: ChildProcess; url: string; key: string; durableCommits: () => Promise<number> }> {
  const { child, url } = await startProcess(
    process.execPath,
    [join(TSC_OUT, 'scripts', 'bench', 'peers', 'served-child.js'), JSON.stringify(spec)],
    {},
    (o) => /^\{"url".*\}$/m.exec(o)?.[0] ?? null,
  );
  const started = JSON.parse(url) as { url: string; key: string; control: string };
  const durableCommits = async (): Promise<number> => Number(await (await fetch(`${started.control}/commits`)).text());
  return { child, url: started.url, key: started.key, durableCommits };
}

const BODY = JSON.stringify({
  model: 'claude-sonnet-4-5',
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Hello' }],
});

/** One non-streaming call over a keep-alive agent; resolves with its milliseconds. */
export function call(agent: Agent, base: string, headers: Record<string, string>): Promise<number> {
  const url = new URL('/v1/messages', base);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(BODY)),
          'anthropic-version': '2023-06-01',
          ...headers,
        },
      },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`${base} answered ${res.statusCode}`));
          else resolve(Number(process.hrtime.bigint() - started) / 1e6);
        });
      },
    );
    req.on('error', reject);
    req.end(BODY);
  });
}

/** Requests per second with `clients` concurrent keep-alive clients for `ms`. */
export async function throughput(
  base: string,
  headers: (i: number) => Record<string, string>,
  clients: number,
  ms: number,
): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  let done = 0;
  const until = Date.now() + ms;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = c; Date.now() < until; i += clients) {
        await call(agent, base, headers(i));
        done += 1;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  agent.destroy();
  return done / seconds;
}
