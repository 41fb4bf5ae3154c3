// cplane serve beside a peer, the Portkey open-source gateway (@portkey-ai/gateway, pinned by its own lockfile in
// scripts/bench/peers/portkey/), in the same run on the same local upstream: each gateway, the upstream and the
// client are separate processes. cplane serve runs on a freshly bootstrapped root: latency with `--durability
// relaxed` (no fsync on the call path: what Portkey, which records nothing durable, is compared with), throughput at
// the default `full` (every exchange durable before its answer). Sequential calls are interleaved (direct, Portkey,
// cplane) so all three see the same machine state; throughput is 64 concurrent clients for a fixed time, alternated.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { BUILD, REPO } from '../../lib/repo.js';
import { bootstrapServedRoot, startProcess, startServe, stopAll } from '../../lib/served-root.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';
import { call, startUpstreamProcess, throughput } from '../peers/load.js';

const PORTKEY_VERSION = '1.15.2';
const PEER_SOURCE = join(REPO, 'scripts', 'bench', 'peers', 'portkey');
const PEER_DIR = join(BUILD, 'peers', 'portkey');
const AUTH_SECRET = 'bench-peers-auth-secret-0123456789abcdef';
const UPSTREAM_KEY = 'sk-ant-bench-upstream';

/** Portkey from its pinned lockfile into build/peers/portkey (once; kept between runs). Null: cannot be installed. */
function installPortkey(log: (line: string) => void): string | null {
  const entry = join(PEER_DIR, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  const installed = join(PEER_DIR, 'node_modules', '@portkey-ai', 'gateway', 'package.json');
  const lockChanged =
    !existsSync(join(PEER_DIR, 'package-lock.json')) ||
    readFileSync(join(PEER_DIR, 'package-lock.json'), 'utf8') !==
      readFileSync(join(PEER_SOURCE, 'package-lock.json'), 'utf8');
  if (
    existsSync(entry) &&
    !lockChanged &&
    (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version === PORTKEY_VERSION
  )
    return entry;
  mkdirSync(PEER_DIR, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(PEER_SOURCE, file), join(PEER_DIR, file));
  log(`bench: installing @portkey-ai/gateway ${PORTKEY_VERSION} from its lockfile…`);
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: PEER_DIR,
    encoding: 'utf8',
  });
  if (npm.status !== 0 || !existsSync(entry)) {
    log(`bench: Portkey could not be installed (npm ci exited ${npm.status}): ${npm.stderr.slice(-400)}`);
    return null;
  }
  return entry;
}

export default defineSuite({
  name: 'gateway-peers',
  async run({ quick, tmp, log }) {
    const portkeyEntry = installPortkey(log);
    if (portkeyEntry === null) return [];
    const { root, key } = bootstrapServedRoot(tmp, AUTH_SECRET, 'AGENT-BENCH');
    const children: ChildProcess[] = [];
    try {
      const up = await startUpstreamProcess();
      children.push(up.child);
      const portkeyPort = 18_000 + Math.floor(Math.random() * 2000);
      const portkey = await startProcess(
        process.execPath,
        [portkeyEntry, `--port=${portkeyPort}`, '--headless'],
        {},
        (o) => (/Ready for connections|running at/.test(o) ? `http://127.0.0.1:${portkeyPort}` : null),
        PEER_DIR,
      );
      children.push(portkey.child);
      const serveEnv = { CPLANE_AUTH_SECRET: AUTH_SECRET, ANTHROPIC_BASE_URL: up.url, ANTHROPIC_API_KEY: UPSTREAM_KEY };
      const relaxed = await startServe(root, serveEnv, ['--durability', 'relaxed']);
      children.push(relaxed.child);

      const direct = (): Record<string, string> => ({ 'x-api-key': UPSTREAM_KEY });
      const viaPortkey = (): Record<string, string> => ({
        'x-api-key': UPSTREAM_KEY,
        'x-portkey-provider': 'anthropic',
        'x-portkey-custom-host': `${up.url}/v1`,
      });
      // Spread over sessions: a session's rate limit (600 calls a minute) is not what this measures.
      const viaCplane = (i: number): Record<string, string> => ({
        'x-api-key': key,
        'x-cplane-session': `SES-PEER-${i % 4096}`,
      });

      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const agents = { direct: new Agent({ keepAlive: true }), portkey: new Agent({ keepAlive: true }), cplane: agent };
      const n = quick ? 150 : 600;
      // The first calls warm up connections and JIT on every path: a gateway's p50 keeps falling over its first
      // ~1,500 calls, so a short warm-up would compare a cold process with a warm one.
      const warm = quick ? 600 : 1500;
      const samples = { direct: [] as number[], portkey: [] as number[], cplane: [] as number[] };
      for (let i = 0; i < n + warm; i += 1) {
        const d = await call(agents.direct, up.url, direct());
        const p = await call(agents.portkey, portkey.url, viaPortkey());
        const c = await call(agents.cplane, relaxed.url, viaCplane(i));
        if (i < warm) continue;
        samples.direct.push(d);
        samples.portkey.push(p);
        samples.cplane.push(c);
      }
      for (const a of Object.values(agents)) a.destroy();
      const us = (ms: number): number => Math.round(ms * 1000);
      const p50 = (s: number[]): number => percentile(s, 50);
      const cplaneAdded = us(p50(samples.cplane) - p50(samples.direct));
      const portkeyAdded = us(p50(samples.portkey) - p50(samples.direct));

      await stopAll([relaxed.child]);
      const served = await startServe(root, serveEnv);
      children.push(served.child);
      const seconds = quick ? 2000 : 5000;
      const rps = { portkey: [] as number[], cplane: [] as number[] };
      for (let round = 0; round < 2; round += 1) {
        rps.portkey.push(await throughput(portkey.url, viaPortkey, 64, seconds));
        rps.cplane.push(await throughput(served.url, viaCplane, 64, seconds));
      }
      const best = (xs: number[]): number => Math.max(...xs);
      const cplaneRps = Math.round(best(rps.cplane));
      const portkeyRps = Math.round(best(rps.portkey));
      const pRatio = portkeyAdded > 0 ? cplaneAdded / portkeyAdded : Number.POSITIVE_INFINITY;
      const rRatio = cplaneRps / portkeyRps;
      const rows: BenchRow[] = [
        {
          name: 'gateway_vs_portkey_p50',
          value: cplaneAdded,
          unit: 'µs added (relaxed)',
          baseline: portkeyAdded,
          ratio: Math.round(pRatio * 1000) / 1000,
          target: '<= 0.5',
          ok: pRatio <= 0.5,
        },
        {
          name: 'gateway_rps_c64',
          value: cplaneRps,
          unit: 'req/s (full)',
          baseline: portkeyRps,
          ratio: Math.round(rRatio * 1000) / 1000,
          target: '>= 1.5',
          ok: rRatio >= 1.5,
        },
      ];
      // What cplane serve did meanwhile is on the record: the chain verifies.
      const verified = spawnSync(
        process.execPath,
        [join(REPO, 'bin', 'cplane.js'), 'ledger', 'verify', '--root', root],
        {
          encoding: 'utf8',
        },
      );
      log(
        `bench: gateway-peers: direct p50 ${us(p50(samples.direct))} µs; Portkey added ${portkeyAdded} µs, cplane ${cplaneAdded} µs; ` +
          `rps Portkey ${rps.portkey.map(Math.round).join('/')}, cplane ${rps.cplane.map(Math.round).join('/')}; ` +
          `ledger verify exit ${verified.status}: ${verified.stdout.trim().split('\n')[0] ?? ''}`,
      );
      return rows;
    } finally {
      await stopAll(children);
    }
  },
});
