// The exchange content store: a scripted 200-turn coding-agent session through an in-process gateway with a
// durable ledger (how much the ledger database grows against the session's unique and naive bytes), and the
// cost of recording one ~150k-token request whose history is already stored, against hashing it once.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Ledger as LedgerT } from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { assistantReply, codingSession, messagesAt, requestAt, type SessionShape } from '../../lib/coding-session.js';
import { inProcessGateway, Ledger } from '../peers/in-process-gateway.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';

const { checkGeneration } =
  await fromDevRoot<typeof import('../../../staging/PKG-GATEWAY-001/HOT/gateway/request-body.js')>(
    'HOT/gateway/request-body.js',
  );

const TURNS = 200;

/** Answers each turn with that turn's tool call, so every reply differs as a real agent's do. */
function upstream(reply: (n: number) => unknown = assistantReply): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: unknown[] };
      const n = (body.messages.length - 1) / 2;
      const message = JSON.stringify({
        id: `msg_${n}`,
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: reply(n),
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: {
          input_tokens: 1000,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 30_000,
          output_tokens: 80,
        },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(message)) });
      res.end(message);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** The database's size once the WAL is folded in and truncated. */
function dbBytes(ledger: LedgerT | Database.Database): number {
  const db = 'db' in ledger ? ledger.db : ledger;
  db.pragma('wal_checkpoint(TRUNCATE)');
  return (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
}

/** The turn's bytes a client would count as new: the conversation's unseen pieces and the reply. */
function newContent(body: Record<string, unknown>, unique: Set<string>): number {
  const gen = checkGeneration('anthropic.messages', body);
  if (typeof gen === 'string') throw new Error(gen);
  let bytes = 0;
  for (const piece of gen.promptPieces) {
    if (unique.has(piece)) continue;
    unique.add(piece);
    bytes += Buffer.byteLength(piece);
  }
  return bytes;
}

/** A small agent: each turn adds a short tool call and a short tool result, ~500 bytes of new content. */
const SMALL_AGENT: SessionShape = { systemChars: 2_000, tools: 2, toolChars: 400, resultChars: 215 };

/** The small agent's reply at turn `n`: one tool call, no remark. */
function smallReply(n: number): { type: string; [k: string]: unknown }[] {
  return [
    { type: 'tool_use', id: `toolu_${String(n).padStart(6, '0')}`, name: `tool_${n % 2}`, input: { path: `f${n}` } },
  ];
}

/** The small agent's request `n`: its own replies in the history, each followed by a short tool result. */
function smallRequest(session: ReturnType<typeof codingSession>, n: number): Record<string, unknown> {
  const messages: { role: string; content: unknown }[] = [{ role: 'user', content: session.task }];
  for (let i = 0; i < n; i += 1) {
    messages.push({ role: 'assistant', content: smallReply(i) });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: `toolu_${String(i).padStart(6, '0')}`, content: session.toolResult(i) },
      ],
    });
  }
  return { ...requestAt(session, 0), messages };
}
const BOOKKEEPING_WARMUP = 5;

/**
 * What a call costs the databases beyond its content: the ledger and the budget database's growth (each after a
 * TRUNCATE checkpoint) over an agent session's turns, less the bytes each turn adds that were never sent before.
 * The chain rows, their index entries and the budget rows are what is left.
 */
async function bookkeeping(tmp: string, quick: boolean, log: (line: string) => void): Promise<BenchRow> {
  const up = await upstream(smallReply);
  const roomy = { max_tokens: 1e10, max_cost: 1e6 };
  const served = await inProcessGateway({
    tmp,
    name: 'bookkeeping',
    upstreamUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`,
    budget: (base) => ({
      ...base,
      limits: { session: { default: roomy }, work_order: { default: roomy }, agent: { default: roomy } },
      rate_limits: { session: { window_ms: 60_000, max_requests: 6000, max_tokens: 1e10 } },
    }),
  });
  const ledger = served.ledger;
  if (ledger === null) throw new Error('the bookkeeping bench runs on a SQLite ledger');
  const budgetDb = new Database(join(tmp, 'bookkeeping-budget.sqlite'));
  const script = codingSession(SMALL_AGENT);
  const unique = new Set<string>();
  const turns = quick ? 60 : 200;
  try {
    const turn = async (n: number): Promise<number> => {
      const body = smallRequest(script, n);
      const res = await fetch(`${served.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'x-api-key': served.key,
          'x-cplane-session': 'SES-BOOKKEEPING',
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`turn ${n} answered ${res.status}: ${text.slice(0, 200)}`);
      const reply = Buffer.byteLength(JSON.stringify(smallReply(n)));
      return newContent(body, unique) + reply;
    };
    // The first turns lay out the tables and the session's first pages: not per-call bookkeeping.
    for (let n = 0; n < BOOKKEEPING_WARMUP; n += 1) await turn(n);
    const ledgerBefore = dbBytes(ledger);
    const budgetBefore = dbBytes(budgetDb);
    let content = 0;
    for (let n = BOOKKEEPING_WARMUP; n < BOOKKEEPING_WARMUP + turns; n += 1) content += await turn(n);
    const ledgerGrowth = dbBytes(ledger) - ledgerBefore;
    const budgetGrowth = dbBytes(budgetDb) - budgetBefore;
    const growth = ledgerGrowth + budgetGrowth;
    const perCall = (growth - content) / turns;
    const kinds = ledger.db
      .prepare('SELECT event_type, count(*) AS n, sum(length(metadata)) AS bytes FROM entries GROUP BY event_type')
      .all() as { event_type: string; n: number; bytes: number }[];
    log(
      `bookkeeping: ${turns} turns, ${Math.round(content / turns)} B new content a turn, growth ${growth} B (ledger ${ledgerGrowth}, budget ${budgetGrowth}); entries ${kinds
        .map((k) => `${k.event_type} ${k.n}×${Math.round(k.bytes / k.n)}B`)
        .join(', ')}`,
    );
    for (const [name, db] of [
      ['ledger', ledger.db],
      ['budget', budgetDb],
    ] as const) {
      const tables = db
        .prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 8')
        .all() as { name: string; bytes: number }[];
      log(`bookkeeping: ${name} ${tables.map((t) => `${t.name} ${t.bytes}`).join(', ')}`);
    }
    return {
      name: 'call_bookkeeping_bytes',
      value: Math.round(perCall),
      unit: `bytes a call beyond its new content (ledger + budget db, ${Math.round(content / turns)} B new a turn)`,
      baseline: Math.round(content / turns),
      ratio: perCall / 1024,
      target: '<= 1024',
      ok: perCall <= 1024,
    };
  } finally {
    budgetDb.close();
    await served.close();
    await new Promise((resolve) => up.close(resolve));
  }
}

async function session(tmp: string, log: (line: string) => void): Promise<BenchRow[]> {
  const up = await upstream();
  // A long agent session resends ~150k tokens a turn: limits sized for that, as its operator would set them.
  const roomy = { max_tokens: 1e10, max_cost: 1e6 };
  const served = await inProcessGateway({
    tmp,
    name: 'content',
    upstreamUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`,
    bodyLimitBytes: 8 << 20,
    budget: (base) => ({
      ...base,
      limits: { session: { default: roomy }, work_order: { default: roomy }, agent: { default: roomy } },
      rate_limits: { session: { window_ms: 60_000, max_requests: 6000, max_tokens: 1e10 } },
    }),
  });
  const { key } = served;
  const ledger = served.ledger;
  if (ledger === null) throw new Error('the content bench runs on a SQLite ledger');
  const script = codingSession();
  const unique = new Set<string>();
  let naive = 0;
  try {
    const before = dbBytes(ledger);
    for (let n = 0; n < TURNS; n += 1) {
      const body = requestAt(script, n);
      const res = await fetch(`${served.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'x-api-key': key,
          'x-cplane-session': 'SES-CONTENT-BENCH',
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`turn ${n} answered ${res.status}: ${text.slice(0, 200)}`);
      // What the gateway records, computed here the way a client would: the request's conversation and the reply.
      const gen = checkGeneration('anthropic.messages', body);
      if (typeof gen === 'string') throw new Error(gen);
      for (const piece of gen.promptPieces) unique.add(piece);
      naive += Buffer.byteLength(gen.prompt);
    }
    for (const entry of ledger.history('SES-CONTENT-BENCH')) {
      const response = String(entry.metadata.response);
      unique.add(response);
      naive += Buffer.byteLength(response);
    }
    const growth = dbBytes(ledger) - before;
    // Where the bytes went: the content tables against the chain's own rows (DISPATCH, EXCHANGE, budget records).
    const tables = ledger.db
      .prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC')
      .all() as { name: string; bytes: number }[];
    const kinds = ledger.db
      .prepare('SELECT event_type, count(*) AS n, sum(length(metadata)) AS bytes FROM entries GROUP BY event_type')
      .all() as { event_type: string; n: number; bytes: number }[];
    log(
      `content: ${tables
        .slice(0, 6)
        .map((t) => `${t.name} ${t.bytes}`)
        .join(', ')}`,
    );
    log(`content: entries ${kinds.map((k) => `${k.event_type} ${k.n}×${Math.round(k.bytes / k.n)}B`).join(', ')}`);
    let uniqueBytes = 0;
    for (const piece of unique) uniqueBytes += Buffer.byteLength(piece);
    const store = tables
      .filter((t) => t.name.startsWith('content_') || t.name === 'sqlite_autoindex_content_blocks_1')
      .reduce((sum, t) => sum + t.bytes, 0);
    return [
      {
        name: 'content_bytes_vs_unique',
        value: growth,
        unit: 'bytes',
        baseline: uniqueBytes,
        ratio: growth / uniqueBytes,
        target: '<= 1.3',
        ok: growth / uniqueBytes <= 1.3,
      },
      {
        name: 'content_store_bytes_vs_unique',
        value: store,
        unit: 'bytes (content tables only)',
        baseline: uniqueBytes,
        ratio: store / uniqueBytes,
        target: 'report',
        ok: null,
      },
      {
        name: 'content_bytes_vs_naive',
        value: growth,
        unit: 'bytes',
        baseline: naive,
        ratio: growth / naive,
        target: 'report (expect <= 0.05)',
        ok: null,
      },
    ];
  } finally {
    await served.close();
    await new Promise((resolve) => up.close(resolve));
  }
}

/**
 * One ~150k-token request whose history is already stored: recording it vs SHA-256 of it once. `serve`: the
 * ledger opened as `cplane serve` opens it, its WAL grown to its steady size at open (a commit then overwrites WAL
 * pages; one that grows the file makes its fsync commit the file's size too). `growing`: a new file opened as a
 * one-shot command opens it, whose every commit grows the WAL. `normal`: the same without the commit's fsync.
 */
function largeAppend(tmp: string, quick: boolean, mode: 'serve' | 'growing' | 'normal'): BenchRow[] {
  const synchronous = mode === 'normal' ? 'NORMAL' : 'FULL';
  const file = join(tmp, `content-large-${mode}.sqlite`);
  const ledger = Ledger.open(file, { create: true, synchronous, reserveWal: mode === 'serve' });
  try {
    const script = codingSession();
    const turns = 106;
    const request = (n: number, tail: string): { pieces: string[]; bytes: number } => {
      const messages = messagesAt(script, n);
      messages.push({ role: 'user', content: tail });
      const gen = checkGeneration('anthropic.messages', {
        model: 'm',
        max_tokens: 1,
        system: script.system,
        tools: script.tools,
        messages,
      });
      if (typeof gen === 'string') throw new Error(gen);
      return { pieces: gen.promptPieces, bytes: Buffer.byteLength(gen.prompt) };
    };
    const append = (pieces: string[], i: number): void => {
      ledger.append({
        event_type: 'EXCHANGE',
        submission_id: 'anthropic.messages',
        decision: 'SUCCESS',
        reason: 'Exchange completed',
        metadata: { session_id: 'SES-LARGE', outcome: 'success' },
        content: { prompt: pieces, response: [JSON.stringify(assistantReply(i))] },
      });
    };
    // The stored history: the same conversation one turn shorter.
    append(request(turns - 1, 'continue').pieces, 0);
    const iterations = quick ? 20 : 60;
    const recordMs: number[] = [];
    const hashMs: number[] = [];
    // The disk's own price of a durable commit, taken between the appends so it sees the same contention: about
    // the bytes one append's WAL frames come to (15 pages of 2 KiB), written over a file already that size and
    // fsynced, as SQLite does at each commit to a reserved WAL under synchronous=FULL. What the FULL row can reach
    // is bounded below by it.
    const fsyncMs: number[] = [];
    const frames = Buffer.alloc(15 * 2072, 1);
    const ring = 4 << 20;
    const fd = mode === 'serve' ? openSync(join(tmp, 'fsync-floor.bin'), 'w') : -1;
    if (fd >= 0) {
      writeSync(fd, Buffer.alloc(ring));
      fsyncSync(fd);
    }
    let offset = 0;
    let bytes = 0;
    for (let i = 0; i < iterations; i += 1) {
      const { pieces, bytes: b } = request(turns, `new instruction ${i}: ${'x'.repeat(200)}`);
      bytes = b;
      const whole = pieces.join('');
      let start = process.hrtime.bigint();
      createHash('sha256').update(whole, 'utf8').digest('hex');
      hashMs.push(Number(process.hrtime.bigint() - start) / 1e6);
      start = process.hrtime.bigint();
      append(pieces, i);
      recordMs.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (fd >= 0) {
        start = process.hrtime.bigint();
        if (offset + frames.length > ring) offset = 0;
        writeSync(fd, frames, 0, frames.length, offset);
        offset += frames.length;
        fsyncSync(fd);
        fsyncMs.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }
    if (fd >= 0) closeSync(fd);
    const us = (ms: number): number => Math.round(ms * 1000);
    const record = percentile(recordMs, 50);
    const hash = percentile(hashMs, 50);
    if (mode === 'normal') {
      // The same without the commit's fsync: what the store itself costs on top of hashing.
      return [
        {
          name: 'exchange_append_large_p50_no_fsync',
          value: us(record),
          unit: 'µs (synchronous=NORMAL)',
          baseline: us(hash),
          ratio: record / hash,
          target: 'report',
          ok: null,
        },
      ];
    }
    if (mode === 'growing')
      return [
        {
          name: 'exchange_append_large_p50_growing_wal',
          value: us(record),
          unit: 'µs (a new file, no WAL reserved: each commit grows it)',
          baseline: us(hash),
          ratio: record / hash,
          target: 'report',
          ok: null,
        },
      ];
    const fsync = percentile(fsyncMs, 50);
    return [
      {
        name: 'exchange_append_large_p50',
        value: us(record),
        unit: `µs (${Math.round(bytes / 1024)} KiB request, the ledger opened as cplane serve opens it)`,
        baseline: us(hash),
        ratio: record / hash,
        target: '<= 3x SHA-256 of the request',
        ok: record / hash <= 3,
      },
      {
        name: 'exchange_append_large_fsync_floor',
        value: us(fsync),
        unit: 'µs (30 KiB overwrite + fsync, same disk)',
        baseline: us(hash),
        ratio: fsync / hash,
        target: 'report',
        ok: null,
      },
    ];
  } finally {
    ledger.close();
  }
}

export default defineSuite({
  name: 'content',
  async run({ quick, tmp, log }) {
    const rows = await session(tmp, log);
    rows.push(
      await bookkeeping(tmp, quick, log),
      ...largeAppend(tmp, quick, 'serve'),
      ...largeAppend(tmp, quick, 'growing'),
      ...largeAppend(tmp, quick, 'normal'),
    );
    return rows;
  },
});
