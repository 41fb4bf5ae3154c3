// Routing on three `cplane serve` hosts sharing one PostgreSQL database: a 429 with retry-after that one host sees
// from deployment A stops the other two from using A until the retry-after has passed; the calls go to B meanwhile.
// And a deployment's RPM is counted once across the hosts: the call past it, on whichever host, goes to the next.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, configSet, issueKey, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';

const skip = pgSkip();
const KEY_A = 'sk-ant-3h-route-A-0123456789abcdef';
const KEY_B = 'sk-ant-3h-route-B-0123456789abcdef';

interface Host {
  url: string;
  child: ChildProcess;
  stderr: () => string;
}

let server: PgServer | undefined;
let storeUrl = '';
let work = '';
let family: Upstream;
let A: Upstream;
let B: Upstream;
let hosts: Host[] = [];
let key = '';
let db: pg.Pool;

function start(root: string): Promise<Host> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CPLANE_AUTH_SECRET: AUTH_SECRET,
    ANTHROPIC_BASE_URL: family.url,
    ANTHROPIC_API_KEY: KEYS.anthropic,
    OPENAI_BASE_URL: family.url,
    OPENAI_API_KEY: KEYS.openai,
    ROUTE_3H_A: KEY_A,
    ROUTE_3H_B: KEY_B,
  };
  const args = [join(root, 'HOT', 'scripts', 'cplane.js'), 'serve', '--root', root, '--port', '0', '--json-log'];
  const child = spawn(process.execPath, [...args, '--store', storeUrl], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise<Host>((resolve, reject) => {
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const match = /"url":"([^"]+)"/.exec(err);
      if (match?.[1]) resolve({ url: match[1], child, stderr: () => err });
    });
    child.once('exit', (code) => reject(new Error(`cplane serve exited ${code}: ${err}`)));
  });
}

const RPM = 4;

const ask = (host: Host, session: string, model = 'cool') =>
  new Anthropic({
    apiKey: key,
    baseURL: host.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': session },
  }).messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
const toA = (model = 'cool-a'): number => A.requests.filter((r) => r.body?.model === model).length;

describe('routing on three gateway hosts sharing PostgreSQL', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'routing_three_hosts');
    db = new pg.Pool({ connectionString: storeUrl, max: 2 });
    [family, A, B] = await Promise.all([
      startUpstream(KEYS),
      startUpstream({ anthropic: KEY_A, openai: 'unused-openai-key-A' }),
      startUpstream({ anthropic: KEY_B, openai: 'unused-openai-key-B' }),
    ]);
    work = mkdtempSync(join(tmpdir(), 'cp-route-3h-'));
    const first = join(work, 'root-0');
    bootstrapSignedRoot(join(work, 'build'), first);
    const price = {
      input_per_mtok: 3,
      output_per_mtok: 15,
      cache_read_per_mtok: 0.3,
      cache_write_5m_per_mtok: 3.75,
      cache_write_1h_per_mtok: 6,
    };
    configSet(
      first,
      'budget.pricing',
      JSON.stringify({ 'cool-a': price, 'cool-b': price, 'metered-a': price, 'metered-b': price }),
    );
    const deployment = (id: string, url: string, env: string, model: string, rpm?: number) => ({
      id,
      provider: 'anthropic',
      base_url: url,
      credential_env: env,
      model,
      ...(rpm === undefined ? {} : { rpm }),
    });
    configSet(
      first,
      'gateway.routing',
      JSON.stringify({
        deployments: [
          deployment('ca', A.url, 'ROUTE_3H_A', 'cool-a'),
          deployment('cb', B.url, 'ROUTE_3H_B', 'cool-b'),
          deployment('ma', A.url, 'ROUTE_3H_A', 'metered-a', RPM),
          deployment('mb', B.url, 'ROUTE_3H_B', 'metered-b'),
        ],
        aliases: { cool: { targets: ['ca', 'cb'] }, metered: { targets: ['ma', 'mb'] } },
      }),
    );
    cpSync(first, join(work, 'root-1'), { recursive: true });
    cpSync(first, join(work, 'root-2'), { recursive: true });
    key = issueKey('AGENT-ROUTE-3H');
    hosts = await Promise.all([0, 1, 2].map((i) => start(join(work, `root-${i}`))));
  });
  after(async () => {
    for (const h of hosts) h.child.kill('SIGKILL');
    await db?.end();
    await Promise.all([family?.close(), A?.close(), B?.close()]);
    server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("A's 429 (retry-after 3 s) seen by host 0 stops hosts 1 and 2 from using A; then A takes traffic again", async () => {
    for (const [i, host] of hosts.entries()) assert.equal((await ask(host, `SES-3H-WARM-${i}`)).model, 'cool-a');
    A.faults.push({
      status: 429,
      headers: { 'retry-after': '3' },
      body: { type: 'error', error: { type: 'rate_limit_error', message: 'rate limited' } },
    });
    const limitedAt = Date.now();
    assert.equal((await ask(hosts[0] as Host, 'SES-3H-429')).model, 'cool-b', 'host 0 falls back to B');
    const seenByA = toA();
    // Published by host 0 (bounded wait for the row), then adopted by the others within their poll (500 ms).
    for (let i = 0; ; i += 1) {
      const rows = await db.query("SELECT until_ms FROM cplane_cooldowns WHERE key = 'ca'");
      if (rows.rows.length > 0) break;
      assert.ok(i < 100, 'host 0 published the cooldown');
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 1200));
    for (const host of hosts.slice(1))
      for (let i = 0; i < 3; i += 1) assert.equal((await ask(host, 'SES-3H-COOL')).model, 'cool-b');
    assert.equal(toA(), seenByA, 'no host sent A anything during its cooldown');
    await new Promise((r) => setTimeout(r, Math.max(0, limitedAt + 3300 - Date.now())));
    assert.equal((await ask(hosts[2] as Host, 'SES-3H-AGAIN')).model, 'cool-a', 'A takes traffic again');
  });

  test('an RPM of 4 on A: the 5th call across the hosts goes to B, and so do the next ones on every host', async () => {
    const served: string[] = [];
    for (let i = 0; i < RPM + 1; i += 1)
      served.push((await ask(hosts[i % 3] as Host, `SES-RPM-3H-${i}`, 'metered')).model);
    assert.deepEqual(served, [...Array.from({ length: RPM }, () => 'metered-a'), 'metered-b']);
    for (const [i, host] of hosts.entries())
      assert.equal((await ask(host, `SES-RPM-3H-NEXT-${i}`, 'metered')).model, 'metered-b');
    assert.equal(toA('metered-a'), RPM, 'A was sent exactly its RPM, counted across the hosts');
    // One row for A; a minute that turned during the test carries the earlier minute's calls in prev_requests.
    const rows = await db.query<{ taken: string }>(
      "SELECT requests + prev_requests AS taken FROM cplane_rate_counts WHERE key = 'ma'",
    );
    assert.equal(rows.rows.length, 1, 'one row for A');
    assert.equal(Number(rows.rows[0]?.taken), RPM, 'the row counts the calls A took');
  });
});
