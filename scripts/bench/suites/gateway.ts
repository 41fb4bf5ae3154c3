// The gateway's added latency: the same local upstream called directly, through a bare node:http forwarder and
// through a Gateway at each durability level with the root's budget config, sequential calls. Each level is timed in
// its own run, interleaved with the direct and bare paths after the same warm-up, so its targets are the floors
// measured beside it: the bare forwarder's overhead (what any Node gateway pays) and one fdatasync on the ledger's
// disk (what a durable commit pays). The upstream, the forwarder and each gateway run in their own processes and the
// client in the bench's, so a reply's first byte is timed when the server writes it, not when the server's
// synchronous commit returns.
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stopAll } from '../../lib/served-root.js';
import { UPSTREAM_KEY } from '../peers/anthropic-reply.js';
import { commitFloor } from '../peers/commit-floor.js';
import { fsyncFloor } from '../peers/fsync-floor.js';
import { startServedProcess, startUpstreamProcess } from '../peers/load.js';
import { defineSuite, growthRow, percentile, type BenchRow } from '../row.js';

const HELLO = [{ role: 'user', content: 'Hello' }];

/** One call; resolves with [ms to the first body byte, ms to the end]. */
async function timed(
  target: string,
  headers: Record<string, string>,
  stream: boolean,
  body: Record<string, unknown> = { messages: HELLO },
): Promise<[number, number]> {
  const start = process.hrtime.bigint();
  const res = await fetch(`${target}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, ...body }),
  });
  const reader = res.body!.getReader();
  let first = 0;
  for (;;) {
    const { done } = await reader.read();
    if (first === 0) first = Number(process.hrtime.bigint() - start) / 1e6;
    if (done) break;
  }
  if (res.status !== 200) throw new Error(`bench call answered ${res.status}`);
  return [first, Number(process.hrtime.bigint() - start) / 1e6];
}

const direct = { 'x-api-key': UPSTREAM_KEY };
// Spread over sessions: a session's rate limit (600 calls a minute) is not what this measures.
const governedBy =
  (key: string) =>
  (i: number): Record<string, string> => ({ 'x-api-key': key, 'x-cplane-session': `SES-BENCH-${i % 64}` });

/** Latencies (ms) of one path, whole replies and streams' first bytes. */
interface PathSamples {
  whole: number[];
  ttft: number[];
}

/** The floors measured in the same run, in µs. */
interface Floors {
  bare: number;
  bareTtft: number;
  fsync: number;
  /** A SQLite WAL commit that does not wait for the disk (peers/commit-floor.ts). */
  commit: number;
}

const us = (ms: number): number => Math.round(ms * 1000);

/**
 * One durability level's rows: its added latency over the direct upstream, held to the bare forwarder's plus
 * `fsyncs` durable commits (and `ttftFsyncs` before a stream's first byte, when given) plus 300 µs of governance.
 * The default level keeps the plain row names; another level's rows carry its label.
 */
function levelRows(
  label: string,
  fsyncs: number,
  ttftFsyncs: number | null,
  gateway: PathSamples,
  plain: PathSamples,
  floors: Floors,
): BenchRow[] {
  const suffix = label === 'full' ? '' : `_${label}`;
  const p50 = us(percentile(gateway.whole, 50) - percentile(plain.whole, 50));
  const p99 = us(percentile(gateway.whole, 99) - percentile(plain.whole, 99));
  const limit = Math.round(floors.bare + fsyncs * floors.fsync + 300);
  const rows: BenchRow[] = [
    {
      name: `gateway_overhead_p50${suffix}`,
      value: p50,
      unit: `µs (${label})`,
      baseline: us(percentile(plain.whole, 50)),
      ratio: null,
      target: `<= bare + ${fsyncs}×fsync + 300 = ${limit} µs`,
      ok: p50 <= limit,
    },
    {
      name: `gateway_overhead_p99${suffix}`,
      value: p99,
      unit: `µs (${label})`,
      baseline: us(percentile(plain.whole, 99)),
      ratio: p99 / p50,
      target: `<= 3 × p50 = ${3 * p50} µs`,
      ok: p99 <= 3 * p50,
    },
  ];
  if (ttftFsyncs === null) return rows;
  const ttft = us(percentile(gateway.ttft, 50) - percentile(plain.ttft, 50));
  const ttftLimit = Math.round(floors.bareTtft + ttftFsyncs * floors.fsync + 300);
  rows.push({
    name: `gateway_ttft_overhead_p50${suffix}`,
    value: ttft,
    unit: `µs (${label})`,
    baseline: us(percentile(plain.ttft, 50)),
    ratio: null,
    target: `<= bare + ${ttftFsyncs}×fsync + 300 = ${ttftLimit} µs`,
    ok: ttft <= ttftLimit,
  });
  return rows;
}

/** Whole and streamed calls to each path in turn, one fsync sample per round: all see the same machine state. */
async function interleaved(
  n: number,
  paths: readonly Path[],
  fsync: () => number,
  commit: () => number,
): Promise<{ samples: PathSamples[]; fsyncs: number[]; commits: number[] }> {
  const samples = paths.map((): PathSamples => ({ whole: [], ttft: [] }));
  const fsyncs: number[] = [];
  const commits: number[] = [];
  for (let i = 0; i < n; i += 1) {
    // Each path leads a round in turn: none is always the one timed right after the gateway's work.
    const order = paths.map((_, k) => (i + k) % paths.length);
    for (const p of order) {
      samples[p]!.whole.push((await timed(paths[p]!.target, paths[p]!.headers(i), false))[1]);
      await settle();
    }
    for (const p of order) {
      samples[p]!.ttft.push((await timed(paths[p]!.target, paths[p]!.headers(i), true))[0]);
      await settle();
    }
    fsyncs.push(fsync());
    commits.push(commit());
  }
  return { samples, fsyncs, commits };
}

/**
 * A few turns of the client's event loop between calls: what it defers past a reply (a socket's cleanup) runs
 * before the next call is timed instead of landing on it, whichever path that is.
 */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

interface Path {
  target: string;
  headers: (i: number) => Record<string, string>;
}

/** `calls` untimed rounds over the paths, whole and streamed replies alike. */
async function warmUp(paths: readonly Path[], calls: number): Promise<void> {
  for (let i = 0; i < calls; i += 1) for (const path of paths) await timed(path.target, path.headers(i), i % 2 === 1);
}

/** One run's floors: the bare forwarder's added latency over the direct path, and the disk's fdatasync. */
function floorsOf(plain: PathSamples, viaBare: PathSamples, fsyncs: number[], commits: number[]): Floors {
  return {
    commit: us(percentile(commits, 50)),
    bare: us(percentile(viaBare.whole, 50) - percentile(plain.whole, 50)),
    bareTtft: us(percentile(viaBare.ttft, 50) - percentile(plain.ttft, 50)),
    fsync: us(percentile(fsyncs, 50)),
  };
}

/** The levels measured, each with the durable commits its whole call and its stream's first byte wait for. */
const LEVELS = [
  { label: 'full', fsyncs: 2, ttftFsyncs: 1 },
  { label: 'exchange', fsyncs: 1, ttftFsyncs: 0 },
  { label: 'relaxed', fsyncs: 0, ttftFsyncs: 0 },
] as const;

export default defineSuite({
  name: 'gateway',
  async run({ quick, tmp, log }) {
    const n = quick ? 200 : 1000;
    // A gateway's JIT settles over its first ~1,500 calls; timed before, its rows read its compiler, not its work.
    const warm = quick ? 600 : 1500;
    const children: ChildProcess[] = [];
    const floor = fsyncFloor(tmp);
    const commit = commitFloor(tmp);
    const rows: BenchRow[] = [];
    try {
      const up = await startUpstreamProcess();
      children.push(up.child);
      const bare = await startServedProcess({ kind: 'bare', upstreamUrl: up.url });
      children.push(bare.child);
      const served = await Promise.all(
        LEVELS.map((level) =>
          startServedProcess({
            kind: 'gateway',
            tmp,
            name: `gateway-${level.label}`,
            upstreamUrl: up.url,
            durability: level.label,
          }),
        ),
      );
      children.push(...served.map((s) => s.child));
      // Relaxed again, with spans exported to a receiver that is down: an exporter's failures must cost a call nothing.
      const traced = await startServedProcess({
        kind: 'gateway',
        tmp,
        name: 'gateway-traced',
        upstreamUrl: up.url,
        durability: 'relaxed',
        tracesUrl: `http://127.0.0.1:${await closedPort()}/v1/traces`,
      });
      children.push(traced.child);
      const directPath: Path = { target: up.url, headers: () => direct };
      const barePath: Path = { target: bare.url, headers: () => direct };
      // Each level beside its own direct and bare paths: what one gateway does after its reply (its process's
      // socket and memory clean-up) would otherwise land on the next gateway's timed call, not on its own.
      const levelRowsOut: BenchRow[] = [];
      const measured: Floors[] = [];
      for (const [k, level] of LEVELS.entries()) {
        const gateway = served[k]!;
        const paths = [directPath, barePath, { target: gateway.url, headers: governedBy(gateway.key) }];
        await warmUp(paths, warm);
        const before = await gateway.durableCommits();
        const { samples, fsyncs, commits } = await interleaved(n, paths, floor.sample, commit.sample);
        const counted = ((await gateway.durableCommits()) - before) / (2 * n);
        const [plain, viaBare, viaGateway] = samples as [PathSamples, PathSamples, PathSamples];
        const floors = floorsOf(plain, viaBare, fsyncs, commits);
        measured.push(floors);
        levelRowsOut.push(
          ...levelRows(level.label, level.fsyncs, level.ttftFsyncs, viaGateway, plain, floors),
          fsyncsRow(level.label, level.fsyncs, counted),
        );
      }
      const median = (pick: (f: Floors) => number): number => percentile(measured.map(pick), 50);
      rows.push(
        report(
          'bare_proxy_overhead_p50',
          median((f) => f.bare),
          "µs (median of the levels' runs)",
        ),
        report(
          'bare_proxy_ttft_overhead_p50',
          median((f) => f.bareTtft),
          "µs (median of the levels' runs)",
        ),
        report(
          'fsync_floor_p50',
          median((f) => f.fsync),
          'µs (4 KiB overwrite + fdatasync)',
        ),
        report(
          'sqlite_commit_floor_p50',
          median((f) => f.commit),
          'µs (one 1 KiB row, WAL, synchronous OFF: a relaxed call makes 4 such commits)',
        ),
        ...levelRowsOut,
      );
      const relaxed = served[LEVELS.findIndex((l) => l.label === 'relaxed')]!;
      const tracedPaths = [
        directPath,
        ...[relaxed, traced].map((s) => ({ target: s.url, headers: governedBy(s.key) })),
      ];
      await warmUp(tracedPaths, warm);
      const { samples: tracedSamples } = await interleaved(n, tracedPaths, floor.sample, commit.sample);
      rows.push(tracedRow(tracedSamples[2] as PathSamples, tracedSamples[1] as PathSamples));
      await stopAll(children.splice(1));
      rows.push(await growth(tmp, up.url, quick ? 5_000 : 50_000, log));
    } finally {
      await stopAll(children);
      floor.close();
      commit.close();
    }
    return rows;
  },
});

/** Durable commits per call as the stores counted them (whole and streamed calls alike), against the level's. */
function fsyncsRow(label: string, expected: number, counted: number): BenchRow {
  return {
    name: `gateway_fsyncs_per_call_${label}`,
    value: Number(counted.toFixed(3)),
    unit: 'durable commits',
    baseline: null,
    ratio: null,
    target: `<= ${expected}`,
    ok: counted <= expected,
  };
}

/** A port nothing listens on: connections to it are refused at once, as to a receiver that is down. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The relaxed gateway with its trace receiver down against the same gateway without traces, whole calls' p50. */
function tracedRow(traced: PathSamples, relaxed: PathSamples): BenchRow {
  const ratio = percentile(traced.whole, 50) / percentile(relaxed.whole, 50);
  return {
    name: 'gateway_traced_receiver_down_p50',
    value: ratio,
    unit: 'x (relaxed, spans exported to a receiver that refuses connections / no tracer; whole-call p50)',
    baseline: us(percentile(relaxed.whole, 50)),
    ratio,
    target: '<= 1.1',
    ok: ratio <= 1.1,
  };
}

function report(name: string, value: number, unit: string): BenchRow {
  return { name, value, unit, baseline: null, ratio: null, target: 'report', ok: null };
}

/** One system prompt and `calls` distinct user messages of one length (the piece memo's worst case), 64 sessions. */
function growthBody(i: number): Record<string, unknown> {
  return {
    system: 'You are a careful assistant. Answer briefly and cite the file you read. '.repeat(20),
    messages: [{ role: 'user', content: `Question ${String(i).padStart(7, '0')}: what does this function return?` }],
  };
}

/**
 * gateway_overhead_growth: the added latency over calls `calls`-999…`calls` against calls 1…1,000. Only those two
 * windows are timed (each call beside a direct one); the calls between only build the history, 16 at a time. The
 * durability is relaxed (no fsync on the call path): what grows with history is CPU and the files' size, and a busy
 * disk's fsyncs would drown the ratio in noise (the rows above hold the durable levels to the disk's floor).
 */
async function growth(tmp: string, upstreamUrl: string, calls: number, log: (line: string) => void): Promise<BenchRow> {
  const served = await startServedProcess({
    kind: 'gateway',
    tmp,
    name: 'gateway-growth',
    upstreamUrl,
    durability: 'relaxed',
    roomy: true,
  });
  const headers = governedBy(served.key);
  const started = Date.now();
  try {
    const window = async (from: number): Promise<number> => {
      const plain: number[] = [];
      const via: number[] = [];
      for (let i = from; i < from + 1000; i += 1) {
        plain.push((await timed(upstreamUrl, direct, false, growthBody(i)))[1]);
        via.push((await timed(served.url, headers(i), false, growthBody(i)))[1]);
      }
      return percentile(via, 50) - percentile(plain, 50);
    };
    const first = await window(0);
    let next = 1000;
    const fill = async (): Promise<void> => {
      for (let i = next++; i < calls - 1000; i = next++) await timed(served.url, headers(i), false, growthBody(i));
    };
    await Promise.all(Array.from({ length: 16 }, fill));
    const last = await window(calls - 1000);
    log(`bench: gateway_overhead_growth took ${((Date.now() - started) / 1000).toFixed(0)} s for ${calls} calls`);
    const row = growthRow('gateway_overhead_growth', calls, first, last);
    return { ...row, unit: `${row.unit}, relaxed` };
  } finally {
    await stopAll([served.child]);
  }
}
