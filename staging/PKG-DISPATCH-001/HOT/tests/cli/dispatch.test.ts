import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Ajv } from 'ajv';
import { runCli } from '#cli/main.js';
import { Ledger, ledgerPathForRoot, verifyLedger } from '#kernel/ledger/index.js';
import { dispatchStorePath } from '../../dispatch/snapshot-store.js';
import { tempDir, writeTasks } from '../dispatch/helpers.js';

const SCHEMA_ID = 'https://cplane.dev/schemas/dispatch-results.schema.json';
const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addSchema(
  JSON.parse(
    readFileSync(
      join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'schemas', 'dispatch-results.schema.json'),
      'utf8',
    ),
  ) as object,
);

function assertShape(definition: string, value: unknown): void {
  const validate = ajv.getSchema(`${SCHEMA_ID}#/definitions/${definition}`);
  assert.ok(validate, definition);
  assert.ok(validate(value), `${definition}: ${JSON.stringify(validate.errors)}`);
}

const PLAN = (t21: string, t22: string, t2: string) => `# Tasks: spec-loop

- [x] 1. Scaffold
- [${t2}] 2. Parser
  - [${t21}] 2.1 Checkbox items
    - _Prompt: Role: engineer | Task: parse checkbox items with ids_
    - _Requirements: 2.1_
  - [${t22}] 2.2 Metadata lines
    - _Prompt: Role: engineer | Task: parse _Prompt and _Requirements_
- [ ] 3. Docs
`;

interface Cli {
  code: number;
  json: Record<string, unknown>;
}

async function cli(root: string, args: string[]): Promise<Cli> {
  const out: string[] = [];
  const code = await runCli({
    argv: ['dispatch', ...args, '--root', root, '--json'],
    cwd: root,
    stdout: (text) => out.push(text),
    stderr: (text) => out.push(text),
  });
  return { code, json: JSON.parse(out.join('')) as Record<string, unknown> };
}

async function ok(root: string, args: string[], shape: string, expectCode = 0): Promise<Record<string, unknown>> {
  const result = await cli(root, args);
  assert.equal(result.code, expectCode, `${args.join(' ')} → ${JSON.stringify(result.json).slice(0, 400)}`);
  assertShape(shape, result.json);
  return result.json;
}

const field = <T>(value: Record<string, unknown>, ...path: string[]): T =>
  path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], value) as T;

function setup(t: TestContext): { root: string; tasks: string } {
  const root = tempDir(t, 'cplane-dispatch-loop-');
  return { root, tasks: writeTasks(join(root, 'specs', 'spec-loop', 'tasks.md'), PLAN(' ', ' ', '-'), 1_700_000_000) };
}

test('init → compile → ingest loop over a real tasks.md whose statuses change between rounds', async (t) => {
  const { root, tasks } = setup(t);
  const init = await ok(root, ['init', '--tasks', 'specs/spec-loop/tasks.md', '--run', 'loop'], 'init_result');
  assert.deepEqual(field(init, 'progress_ledger', 'totals'), { total: 5, completed: 1, in_progress: 1, pending: 3 });
  assert.equal(field(init, 'progress_ledger', 'active_task_id'), '2.1');

  const round1 = await ok(root, ['compile', '--run', 'loop', '--task', '2.1', '--role', 'executor'], 'compile_result');
  assert.equal(round1.progress_source, 'snapshot');
  const stable = round1.stable_prefix_hash;

  const blocked1 = await ok(
    root,
    ['ingest', '--run', 'loop', '--task', '2.1', '--outcome', 'blocked', '--summary', 'fixture missing'],
    'ingest_result',
  );
  assert.deepEqual(field(blocked1, 'task_ledger', 'stalled'), {
    consecutive_non_progress: 1,
    threshold: 2,
    flagged: false,
  });

  writeTasks(tasks, PLAN('-', ' ', '-'), 1_700_000_100);
  const round2 = await ok(root, ['compile', '--run', 'loop', '--task', '2.1', '--role', 'executor'], 'compile_result');
  assert.equal(round2.progress_source, 'rebuilt', 'the edit between compiles is picked up');
  assert.equal(round2.rebuild_cause, 'fingerprint_changed');
  assert.equal(field(round2, 'task_ledger', 'plan_version'), 2);
  assert.match(round2.delta_context as string, /Task 2\.1 \[in-progress\]: Checkbox items/);
  assert.match(round2.delta_context as string, /Blockers:\n- fixture missing/);

  const blocked2 = await ok(
    root,
    ['ingest', '--run', 'loop', '--task', '2.1', '--assessment', 'blocked', '--blocker', 'fixture still missing'],
    'ingest_result',
  );
  assert.deepEqual(
    field(blocked2, 'task_ledger', 'stalled'),
    { consecutive_non_progress: 2, threshold: 2, flagged: true },
    'two blocked outcomes flag the stall',
  );
  assert.equal(blocked2.newly_flagged, true);
  assert.match(
    field<string>(blocked2, 'task_ledger', 'replan_hint'),
    /^Task 2\.1 made no progress in 2 consecutive dispatches/,
  );
  const stalledStatus = await ok(root, ['status', '--run', 'loop'], 'status_result', 1);
  assert.deepEqual(stalledStatus.stalled_task_ids, ['2.1']);

  const round3 = await ok(root, ['compile', '--run', 'loop', '--task', '2.1', '--role', 'executor'], 'compile_result');
  assert.equal(round3.progress_source, 'snapshot', 'tasks.md unchanged since round 2: no rebuild');
  assert.match(round3.delta_context as string, /Replan hint: Task 2\.1/);

  const done = await ok(
    root,
    ['ingest', '--run', 'loop', '--task', '2.1', '--outcome', 'completed', '--summary', 'parser lands'],
    'ingest_result',
  );
  assert.deepEqual(
    field(done, 'task_ledger', 'stalled'),
    { consecutive_non_progress: 0, threshold: 2, flagged: false },
    'completed resets the stall',
  );
  assert.equal(field(done, 'task_ledger', 'replan_hint'), undefined);

  writeTasks(tasks, PLAN('x', '-', '-'), 1_700_000_200);
  const round4 = await ok(root, ['compile', '--run', 'loop', '--task', '2.2', '--role', 'executor'], 'compile_result');
  assert.equal(field(round4, 'progress_ledger', 'active_task_id'), '2.2');
  assert.deepEqual(field(round4, 'progress_ledger', 'totals'), { total: 5, completed: 2, in_progress: 2, pending: 1 });

  const rounds = [round1, round2, round3, round4];
  assert.ok(
    rounds.every((round) => round.stable_prefix_hash === stable),
    'stable prefix hash identical across rounds',
  );
  assert.equal(new Set(rounds.map((round) => round.dynamic_tail_hash)).size, 4, 'the dynamic tail changed every round');

  const status = await ok(root, ['status', '--run', 'loop'], 'status_result');
  assert.equal(status.source_state, 'current');
  assert.deepEqual(status.stalled_task_ids, []);

  assertTelemetry(root);
  assertStoredFacts(root);
});

function assertTelemetry(root: string): void {
  const ledger = Ledger.open(ledgerPathForRoot(root), { readonly: true });
  try {
    assert.equal(verifyLedger(ledger).ok, true);
    const events = ledger.query({ work_order_id: 'loop', order: 'oldest' });
    assert.deepEqual(
      events.map((entry) => entry.event_type),
      [
        'DISPATCH_RUN_INITIALIZED',
        'DISPATCH_PROMPT_COMPILED',
        'DISPATCH_OUTPUT_INGESTED',
        'DISPATCH_PROMPT_COMPILED',
        'DISPATCH_OUTPUT_INGESTED',
        'DISPATCH_STALL_FLAGGED',
        'DISPATCH_PROMPT_COMPILED',
        'DISPATCH_OUTPUT_INGESTED',
        'DISPATCH_PROMPT_COMPILED',
      ],
    );
    const compiled = events.filter((entry) => entry.event_type === 'DISPATCH_PROMPT_COMPILED');
    assert.deepEqual(
      compiled.map((entry) => [entry.metadata.ledger_mode, entry.metadata.progress_source]),
      [
        ['ledger', 'snapshot'],
        ['ledger', 'rebuilt'],
        ['ledger', 'snapshot'],
        ['ledger', 'rebuilt'],
      ],
    );
  } finally {
    ledger.close();
  }
}

function assertStoredFacts(root: string): void {
  const db = new Database(dispatchStorePath(root), { readonly: true });
  try {
    const rows = db.prepare('SELECT revision, facts FROM snapshots WHERE run_id = ? ORDER BY revision').all('loop') as {
      revision: number;
      facts: string;
    }[];
    assert.deepEqual(
      rows.map((row) => row.revision),
      rows.map((_, index) => index + 1),
      'revisions are contiguous',
    );
    for (const row of rows) assertShape('snapshot_facts', JSON.parse(row.facts));
  } finally {
    db.close();
  }
}

test('CLI: missing and malformed tasks.md give the typed errors (exit 3); degraded compile is reported', async (t) => {
  const { root, tasks } = setup(t);
  const missing = await cli(root, ['init', '--tasks', 'specs/nope/tasks.md', '--run', 'r']);
  assert.equal(missing.code, 3);
  assert.equal(field(missing.json, 'error', 'code'), 'ERR_PROGRESS_LEDGER_MISSING_TASKS');
  assert.equal(field(missing.json, 'error', 'details', 'path'), join(root, 'specs', 'nope', 'tasks.md'));
  const bad = writeTasks(join(root, 'specs', 'bad', 'tasks.md'), '- [ ] 1. fine\n  - _Prompt: a_\n  - _Prompt: b_\n');
  const malformed = await cli(root, ['init', '--tasks', bad, '--run', 'r']);
  assert.equal(malformed.code, 3);
  assert.equal(field(malformed.json, 'error', 'code'), 'ERR_PROGRESS_LEDGER_PARSE_FAILED');
  assert.equal(field(malformed.json, 'error', 'details', 'line'), 3);
  assert.match(field(malformed.json, 'error', 'hint'), /_Prompt/);

  await ok(root, ['init', '--tasks', tasks, '--run', 'r'], 'init_result');
  renameSync(tasks, `${tasks}.bak`);
  const degraded = await ok(root, ['compile', '--run', 'r', '--task', '2.1', '--role', 'executor'], 'compile_result');
  assert.deepEqual([degraded.ledger_mode, degraded.fallback_reason], ['ledger_plus_fallback', 'rebuild_failed']);
  const status = await ok(root, ['status', '--run', 'r'], 'status_result');
  assert.equal(status.source_state, 'unreadable');
});

test('CLI: usage errors exit 2 and write nothing', async (t) => {
  const { root } = setup(t);
  const both = await cli(root, [
    'ingest',
    '--run',
    'r',
    '--task',
    '1',
    '--outcome',
    'completed',
    '--assessment',
    'approved',
  ]);
  assert.equal(both.code, 2);
  const neither = await cli(root, ['ingest', '--run', 'r', '--task', '1']);
  assert.equal(neither.code, 2);
  const noTasks = await cli(root, ['init', '--run', 'r']);
  assert.equal(noTasks.code, 2);
  const badChoice = await cli(root, ['ingest', '--run', 'r', '--task', '1', '--outcome', 'approved']);
  assert.equal(badChoice.code, 2);
  const noRun = await cli(root, ['status', '--run', 'r']);
  assert.equal(noRun.code, 3);
  assert.equal(field(noRun.json, 'error', 'code'), 'ERR_DISPATCH_RUN_NOT_FOUND');
  assert.throws(() => readFileSync(dispatchStorePath(root)), /ENOENT/);
});

test('CLI: human output names the mode, the hashes, the stall and the replan hint', async (t) => {
  const { root, tasks } = setup(t);
  const lines: string[] = [];
  const run = (args: string[]) =>
    runCli({
      argv: ['dispatch', ...args, '--root', root],
      cwd: root,
      stdout: (text) => lines.push(text),
      stderr: (text) => lines.push(text),
    });
  assert.equal(await run(['init', '--tasks', tasks, '--run', 'h', '--spec-name', 'named']), 0);
  assert.match(
    lines.join('\n'),
    /run h initialised from .*spec named.*\n.*1\/5 completed, 1 in progress, 3 pending; active task 2\.1/,
  );
  assert.equal(await run(['compile', '--run', 'h', '--task', '2.1', '--role', 'searcher']), 0);
  assert.match(
    lines.join('\n'),
    /task 2\.1 role searcher: ledger, progress from snapshot[\s\S]*stable_prefix_hash: [0-9a-f]{64}[\s\S]*--- delta context ---\nRun: h \(spec named, plan v1\)/,
  );
  lines.length = 0;
  await run(['ingest', '--run', 'h', '--task', '2.1', '--outcome', 'failed']);
  await run(['ingest', '--run', 'h', '--task', '2.1', '--outcome', 'failed', '--summary', 'tsc errors']);
  assert.match(
    lines.join('\n'),
    /implementer failed \(snapshot r3\); stall: 2\/2 FLAGGED\nreplan hint: Task 2\.1 .*tsc errors/,
  );
  lines.length = 0;
  assert.equal(await run(['status', '--run', 'h']), 1, 'a stalled task makes status exit 1');
  assert.match(
    lines.join('\n'),
    /\[current\][\s\S]*2\.1: implementer failed; stall: 2\/2 FLAGGED\nstalled: 2\.1 \(exit 1\)/,
  );
});
