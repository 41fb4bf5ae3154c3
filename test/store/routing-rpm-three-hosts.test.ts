// Routing on three `cplane serve` hosts sharing one PostgreSQL database: deployment A's RPM of 4 is counted once
// across the hosts, so the 5th call, whichever host takes it, goes to B (each host alone is far below 4).
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
const RPM = 4;
const KEY_A = 'sk-ant-3h-rpm-A-0123456789abcdef';
const KEY_B = 'sk-ant-3h-rpm-B-0123456789abcdef';

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
    RPM_3H_A: KEY_A,
    RPM_3H_B: KEY_B,
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

const ask = (host: Host, session: string) =>
  new Anthropic({
    apiKey: key,
    baseURL: host.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': session },
  }).messages.create({ model: 'cool', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
const toA = (): number => A.requests.filter((r) => r.body?.model === 'cool-a').length;

describe('RPM counted across three gateway hosts sharing PostgreSQL', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'routing_rpm_three_hosts');
    db = new pg.Pool({ connectionString: storeUrl, max: 2 });
    [family, A, B] = await Promise.all([
      startUpstream(KEYS),
      startUpstream({ anthropic: KEY_A, openai: 'unused-openai-key-A' }),
      startUpstream({ anthropic: KEY_B, openai: 'unused-openai-key-B' }),
    ]);
    work = mkdtempSync(join(tmpdir(), 'cp-rpm-3h-'));
    const first = join(work, 'root-0');
    bootstrapSignedRoot(join(work, 'build'), first);
    const price = {
      input_per_mtok: 3,
      output_per_mtok: 15,
      cache_read_per_mtok: 0.3,
      cache_write_5m_per_mtok: 3.75,
      cache_write_1h_per_mtok: 6,
    };
    configSet(first, 'budget.pricing', JSON.stringify({ 'cool-a': price, 'cool-b': price }));
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
          deployment('ca', A.url, 'RPM_3H_A', 'cool-a', RPM),
          deployment('cb', B.url, 'RPM_3H_B', 'cool-b'),
        ],
        aliases: { cool: { targets: ['ca', 'cb'] } },
      }),
    );
    cpSync(first, join(work, 'root-1'), { recursive: true });
    cpSync(first, join(work, 'root-2'), { recursive: true });
    key = issueKey('AGENT-RPM-3H');
    hosts = await Promise.all([0, 1, 2].map((i) => start(join(work, `root-${i}`))));
  });
  after(async () => {
    for (const h of hosts) h.child.kill('SIGKILL');
    await db?.end();
    await Promise.all([family?.close(), A?.close(), B?.close()]);
    server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('an RPM of 4 on A: the 5th call across the hosts goes to B, and so do the next ones on every host', async () => {
    const served: string[] = [];
    for (let i = 0; i < RPM + 1; i += 1) served.push((await ask(hosts[i % 3] as Host, `SES-RPM-3H-${i}`)).model);
    assert.deepEqual(served, [...Array.from({ length: RPM }, () => 'cool-a'), 'cool-b']);
    for (const [i, host] of hosts.entries()) assert.equal((await ask(host, `SES-RPM-3H-NEXT-${i}`)).model, 'cool-b');
    assert.equal(toA(), RPM, 'A was sent exactly its RPM, counted across the hosts');
    const rows = await db.query<{ requests: string }>("SELECT requests FROM cplane_rate_counts WHERE key = 'ca'");
    assert.equal(Number(rows.rows[0]?.requests), RPM, 'one row for A, counting the calls it took');
  });
});
