import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DispatchRuntime } from '../../dispatch/runtime.js';
import { dispatchStorePath, SnapshotStore } from '../../dispatch/snapshot-store.js';
import { FACT_KEYS, type FactKey } from '../../dispatch/facts.js';
import { loadDispatchConfig, parseDispatchConfig, PACKAGED_CONFIG_PATH } from '../../dispatch/config.js';
import type { CompileDispatchPrompt } from '../../dispatch/compiler-port.js';
import { Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { SAMPLE_TASKS, steppingClock, tempDir, writeTasks } from './helpers.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';

interface Setup {
  root: string;
  tasksPath: string;
  runtime: DispatchRuntime;
}

function setup(t: TestContext, options: { compile?: CompileDispatchPrompt; threshold?: number } = {}): Setup {
  const root = tempDir(t, 'cplane-dispatch-root-');
  const tasksPath = writeTasks(join(root, 'specs', 'spec-a', 'tasks.md'), SAMPLE_TASKS);
  const config = {
    ...loadDispatchConfig(PACKAGED_CONFIG_PATH),
    ...(options.threshold ? { stall_threshold: options.threshold } : {}),
  };
  const runtime = new DispatchRuntime({
    root,
    clock: steppingClock(),
    config,
    ...(options.compile ? { compile: options.compile } : {}),
  });
  t.after(() => runtime.close());
  runtime.initRun({ runId: 'run-1', tasksPath });
  return { root, tasksPath, runtime };
}

function lastMessage(prompt: unknown): string {
  const messages = (prompt as { messages: { content: string }[] }).messages;
  return (messages[messages.length - 1] as { content: string }).content;
}

function telemetry(root: string, eventType: string): Record<string, unknown>[] {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return ledger.query({ event_type: eventType, order: 'oldest' }).map((entry) => entry.metadata);
  } finally {
    ledger.close();
  }
}

test('init_run persists revision 1 with the progress facts and records telemetry', (t) => {
  const { root, runtime } = setup(t);
  const status = runtime.status({ runId: 'run-1' });
  assert.equal(status.snapshot_revision, 1);
  assert.equal(status.spec_name, 'spec-a', 'spec name defaults to the folder holding tasks.md');
  assert.deepEqual(status.totals, { total: 6, completed: 2, in_progress: 2, pending: 2 });
  assert.equal(status.active_task_id, '2.2');
  assert.equal(status.source_state, 'current');
  assert.ok(existsSync(dispatchStorePath(root)));
  const [init] = telemetry(root, 'DISPATCH_RUN_INITIALIZED');
  assert.equal(init?.run_id, 'run-1');
  assert.equal(init?.work_order_id, 'run-1');
  assert.throws(() => runtime.initRun({ runId: 'run-1', tasksPath: status.tasks_path }), {
    code: 'ERR_DISPATCH_RUN_EXISTS',
  });
  assert.throws(() => runtime.initRun({ runId: '../evil', tasksPath: status.tasks_path }), {
    code: 'ERR_DISPATCH_RUN_ID_INVALID',
  });
});

test('init_run refuses a spec name that is not one short line of text, from the option or the folder', (t) => {
  const root = tempDir(t);
  const runtime = new DispatchRuntime({ root, clock: steppingClock() });
  t.after(() => runtime.close());
  const tasksPath = writeTasks(join(root, 'specs', 'spec-a', 'tasks.md'), SAMPLE_TASKS);
  const hostile = ['', ' spec', 'a\nRun: r2 (spec evil)', 'a\u2028b', 'tab\there', 'a\uD800b', 'x'.repeat(129)];
  for (const [i, specName] of hostile.entries()) {
    assert.throws(
      () => runtime.initRun({ runId: `r${i}`, tasksPath, specName }),
      (error: { code: string; details: Record<string, unknown> }) =>
        error.code === 'ERR_DISPATCH_SPEC_NAME_INVALID' &&
        error.details.spec_name === specName &&
        error.details.source === 'option',
      JSON.stringify(specName),
    );
  }
  const fromFolder = writeTasks(join(root, 'specs', 'two\nlines', 'tasks.md'), SAMPLE_TASKS);
  assert.throws(() => runtime.initRun({ runId: 'folder', tasksPath: fromFolder }), {
    code: 'ERR_DISPATCH_SPEC_NAME_INVALID',
    details: { spec_name: 'two\nlines', source: 'folder' },
  });
  // Nothing was created for a refused run; a name with spaces and letters of any script is fine.
  assert.throws(() => runtime.status({ runId: 'folder' }), { code: 'ERR_DISPATCH_RUN_NOT_FOUND' });
  runtime.initRun({ runId: 'ok', tasksPath: fromFolder, specName: 'Checkout flow — über 2' });
  assert.equal(runtime.status({ runId: 'ok' }).spec_name, 'Checkout flow — über 2');
});

test('init_run with a missing or malformed tasks.md writes nothing to the root', (t) => {
  const root = tempDir(t);
  const runtime = new DispatchRuntime({ root, clock: steppingClock() });
  t.after(() => runtime.close());
  assert.throws(
    () => runtime.initRun({ runId: 'r', tasksPath: join(root, 'nope', 'tasks.md') }),
    (error: { code: string; details: Record<string, unknown>; hint: string }) => {
      assert.equal(error.code, 'ERR_PROGRESS_LEDGER_MISSING_TASKS');
      assert.equal(error.details.path, join(root, 'nope', 'tasks.md'));
      assert.ok(error.hint.length > 0);
      return true;
    },
  );
  const bad = writeTasks(join(root, 'bad', 'tasks.md'), '- [ ] 1. ok\n- [~] 2. broken\n');
  assert.throws(
    () => runtime.initRun({ runId: 'r', tasksPath: bad }),
    (error: { code: string; details: Record<string, unknown> }) => {
      assert.equal(error.code, 'ERR_PROGRESS_LEDGER_PARSE_FAILED');
      assert.deepEqual([error.details.path, error.details.line], [bad, 2]);
      return true;
    },
  );
  assert.equal(existsSync(rootPaths(root).hot), false, 'no store and no ledger were created');
  assert.throws(() => runtime.status({ runId: 'r' }), { code: 'ERR_DISPATCH_RUN_NOT_FOUND' });
});

test('compile_prompt builds the delta packet from ledger facts; task prompt stays last', (t) => {
  const { runtime } = setup(t);
  runtime.ingestOutput({
    runId: 'run-1',
    taskId: '2.2',
    output: {
      role: 'reviewer',
      assessment: 'needs_changes',
      summary: 'close but not done',
      required_fixes: ['handle CRLF'],
    },
  });
  const result = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  assert.equal(result.ledger_mode, 'ledger');
  assert.equal(result.fallback_reason, null);
  assert.equal(result.progress_source, 'snapshot');
  for (const expected of [
    'Run: run-1 (spec spec-a, plan v1)',
    'Progress: 2/6 completed, 2 in progress, 2 pending; active task 2.2',
    'Task 2.2 [in-progress]: Parse metadata lines',
    'Last summary: close but not done',
    'Reviewer assessment: needs_changes',
    'Required fixes:\n- handle CRLF',
    'Stall: 0/2',
  ]) {
    assert.ok(
      result.delta_context.includes(expected),
      `delta has ${JSON.stringify(expected)}:\n${result.delta_context}`,
    );
  }
  const tail = lastMessage(result.prompt);
  assert.ok(tail.includes(`Delta context:\n${result.delta_context}`));
  assert.ok(tail.endsWith('Task prompt:\nRole: engineer | Task: parse _Prompt and _Requirements lines'), tail);
  const order = [
    'Task ID: 2.2',
    'Max output tokens: 4096',
    'Delta context:',
    'Guide cache key: dispatch:spec-a:executor',
    'Task prompt:',
  ].map((label) => tail.indexOf(label));
  assert.deepEqual(
    [...order].sort((a, b) => a - b),
    order,
    'canonical dynamic tail order',
  );
  assert.ok(order.every((index) => index >= 0));
});

test('stable prefix ignores ledger content and the task; role changes it', (t) => {
  const { runtime } = setup(t);
  const a = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  runtime.ingestOutput({
    runId: 'run-1',
    taskId: '2.2',
    output: { role: 'implementer', outcome: 'blocked', summary: 'waiting on schema' },
  });
  const b = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  const c = runtime.compilePrompt({ runId: 'run-1', taskId: '3', role: 'executor' });
  const d = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'reviewer' });
  assert.equal(b.stable_prefix_hash, a.stable_prefix_hash);
  assert.equal(c.stable_prefix_hash, a.stable_prefix_hash);
  assert.notEqual(b.dynamic_tail_hash, a.dynamic_tail_hash);
  assert.notEqual(b.full_prompt_hash, a.full_prompt_hash);
  assert.notEqual(b.cache_key, a.cache_key);
  assert.notEqual(d.stable_prefix_hash, a.stable_prefix_hash, 'a different role template is a different prefix');
  const again = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  assert.equal(again.full_prompt_hash, b.full_prompt_hash, 'same ledgers, same bytes');
});

test('degraded mode: unreadable tasks.md compiles from snapshot facts as ledger_plus_fallback/rebuild_failed, with telemetry', (t) => {
  const { root, tasksPath, runtime } = setup(t);
  const normal = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  renameSync(tasksPath, `${tasksPath}.moved`);
  const degraded = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  assert.equal(degraded.ledger_mode, 'ledger_plus_fallback');
  assert.equal(degraded.fallback_reason, 'rebuild_failed');
  assert.deepEqual(degraded.progress_ledger.totals, normal.progress_ledger.totals);
  assert.equal(degraded.stable_prefix_hash, normal.stable_prefix_hash);
  assert.match(degraded.delta_context, /Ledger mode: ledger_plus_fallback/);
  assert.equal(runtime.status({ runId: 'run-1' }).source_state, 'unreadable');
  const events = telemetry(root, 'DISPATCH_PROMPT_COMPILED');
  assert.deepEqual(
    events.map((event) => [event.ledger_mode, event.fallback_reason]),
    [
      ['ledger', null],
      ['ledger_plus_fallback', 'rebuild_failed'],
    ],
  );
  assert.equal(events[1]?.stable_prefix_hash, degraded.stable_prefix_hash);
});

test('fallback when the snapshot lacks required progress fields: rebuild from tasks.md, or a typed error if it is gone', (t) => {
  const { root, tasksPath, runtime } = setup(t);
  const store = SnapshotStore.open(root) as SnapshotStore;
  t.after(() => store.close());
  store.update('run-1', 'test: drop progress facts', () => ({
    updates: [
      { key: FACT_KEYS.progressTasks, task_id: null, value: null },
      { key: FACT_KEYS.progressSourceFingerprint, task_id: null, value: null },
    ],
    result: null,
  }));
  const rebuilt = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  assert.equal(rebuilt.progress_source, 'rebuilt');
  assert.equal(rebuilt.rebuild_cause, 'fields_missing');
  assert.equal(rebuilt.progress_ledger.totals.total, 6);
  store.update('run-1', 'test: drop progress facts again', () => ({
    updates: [{ key: FACT_KEYS.progressTasks, task_id: null, value: null }],
    result: null,
  }));
  renameSync(tasksPath, `${tasksPath}.moved`);
  assert.throws(() => runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' }), {
    code: 'ERR_PROGRESS_LEDGER_MISSING_TASKS',
  });
});

test('unknown snapshot keys are ignored: same prompt bytes with or without them', (t) => {
  const { root, runtime } = setup(t);
  const before = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  const store = SnapshotStore.open(root) as SnapshotStore;
  t.after(() => store.close());
  const stray = [
    { key: 'ledger.task.mood' as FactKey, task_id: '2.2', value: 'grumpy' },
    { key: 'legacy.prior_summary' as FactKey, task_id: null, value: 'old ad-hoc key' },
  ];
  store.update('run-1', 'test: stray keys', () => ({ updates: stray, result: null }));
  const after = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' });
  assert.equal(after.full_prompt_hash, before.full_prompt_hash);
  assert.equal(after.snapshot_revision, before.snapshot_revision + 1);
});

test('stall counter through the runtime: flagged at the threshold with a replan hint and a STALL event; reset on completed', (t) => {
  const { root, runtime } = setup(t, { threshold: 3 });
  const ingest = (output: Record<string, unknown>) => runtime.ingestOutput({ runId: 'run-1', taskId: '2.2', output });
  assert.equal(ingest({ role: 'implementer', outcome: 'failed' }).task_ledger.stalled.consecutive_non_progress, 1);
  assert.equal(
    ingest({ role: 'reviewer', assessment: 'needs_changes' }).task_ledger.stalled.consecutive_non_progress,
    1,
  );
  assert.equal(
    ingest({ role: 'reviewer', assessment: 'blocked', blockers: ['spec unclear'] }).task_ledger.stalled.flagged,
    false,
  );
  const flagged = ingest({ role: 'implementer', outcome: 'blocked', summary: 'still unclear' });
  assert.deepEqual(flagged.task_ledger.stalled, { consecutive_non_progress: 3, threshold: 3, flagged: true });
  assert.equal(flagged.newly_flagged, true);
  assert.equal(flagged.telemetry_entry_ids.length, 2);
  assert.match(flagged.task_ledger.replan_hint ?? '', /Task 2\.2 .* 3 consecutive .*still unclear/);
  const compiled = runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'orchestrator' });
  assert.match(
    compiled.delta_context,
    /Stall: 3\/3 consecutive non-progress outcomes \(STALLED\)\nReplan hint: Task 2\.2/,
  );
  assert.deepEqual(runtime.status({ runId: 'run-1' }).stalled_task_ids, ['2.2']);
  const [stall] = telemetry(root, 'DISPATCH_STALL_FLAGGED');
  assert.equal(stall?.task_id, '2.2');
  assert.equal(stall?.replan_hint, flagged.task_ledger.replan_hint);
  const reset = ingest({ role: 'implementer', outcome: 'completed' });
  assert.deepEqual(reset.task_ledger.stalled, { consecutive_non_progress: 0, threshold: 3, flagged: false });
  assert.equal(reset.task_ledger.replan_hint, undefined);
  assert.deepEqual(runtime.status({ runId: 'run-1' }).stalled_task_ids, []);
});

test('hostile ingest and compile input is refused before anything is written', (t) => {
  const { runtime } = setup(t);
  const revision = () => runtime.status({ runId: 'run-1' }).snapshot_revision;
  const start = revision();
  const bad: [unknown, string][] = [
    [{ role: 'implementer', outcome: 'approved' }, 'ERR_DISPATCH_OUTPUT_INVALID'],
    [{ role: 'reviewer', assessment: 'approved', outcome: 'completed' }, 'ERR_DISPATCH_OUTPUT_INVALID'],
    [{ role: 'implementer', outcome: 'blocked', blockers: 'not a list' }, 'ERR_DISPATCH_OUTPUT_INVALID'],
    [{ role: 'reviewer', assessment: 'blocked', issues: [{ severity: 1 }] }, 'ERR_DISPATCH_OUTPUT_INVALID'],
    [{ role: 'implementer', outcome: 'blocked', summary: 'x'.repeat(20_000) }, 'ERR_DISPATCH_OUTPUT_INVALID'],
    [
      { role: 'reviewer', assessment: 'blocked', issues: [{ severity: 'high', message: 'x'.repeat(20_000) }] },
      'ERR_DISPATCH_OUTPUT_INVALID',
    ],
    [
      { role: 'reviewer', assessment: 'blocked', issues: [{ severity: 'x'.repeat(20_000), message: 'm' }] },
      'ERR_DISPATCH_OUTPUT_INVALID',
    ],
    [
      {
        role: 'reviewer',
        assessment: 'blocked',
        issues: [{ severity: 'high', message: 'm', file: 'x'.repeat(20_000) }],
      },
      'ERR_DISPATCH_OUTPUT_INVALID',
    ],
    ['completed', 'ERR_DISPATCH_OUTPUT_INVALID'],
  ];
  for (const [output, code] of bad)
    assert.throws(
      () => runtime.ingestOutput({ runId: 'run-1', taskId: '2.2', output }),
      { code },
      JSON.stringify(output).slice(0, 80),
    );
  assert.throws(
    () => runtime.ingestOutput({ runId: 'run-1', taskId: '9', output: { role: 'implementer', outcome: 'completed' } }),
    { code: 'ERR_DISPATCH_TASK_UNKNOWN' },
  );
  assert.throws(() => runtime.compilePrompt({ runId: 'run-1', taskId: '9.9', role: 'executor' }), {
    code: 'ERR_DISPATCH_TASK_UNKNOWN',
  });
  assert.throws(() => runtime.compilePrompt({ runId: 'run-1', taskId: '2.2; drop', role: 'executor' }), {
    code: 'ERR_DISPATCH_TASK_UNKNOWN',
  });
  assert.throws(() => runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'implementer' }), {
    code: 'ERR_DISPATCH_ROLE_INVALID',
  });
  assert.throws(() => runtime.compilePrompt({ runId: 'run-2', taskId: '2.2', role: 'executor' }), {
    code: 'ERR_DISPATCH_RUN_NOT_FOUND',
  });
  assert.equal(revision(), start);
});

test('a compiler failure surfaces and records no COMPILED telemetry', (t) => {
  const failing: CompileDispatchPrompt = () => {
    throw Object.assign(new Error('compiler exploded'), { code: 'ERR_PROMPT_SPEC_INVALID', hint: 'x' });
  };
  const { root, runtime } = setup(t, { compile: failing });
  assert.throws(() => runtime.compilePrompt({ runId: 'run-1', taskId: '2.2', role: 'executor' }), /compiler exploded/);
  assert.deepEqual(telemetry(root, 'DISPATCH_PROMPT_COMPILED'), []);
});

test('snapshots: append-only, hash-checked, and shared by two runtimes without lost updates', (t) => {
  const { root, runtime } = setup(t);
  const other = new DispatchRuntime({ root, clock: steppingClock() });
  t.after(() => other.close());
  runtime.ingestOutput({ runId: 'run-1', taskId: '2.2', output: { role: 'implementer', outcome: 'blocked' } });
  other.ingestOutput({ runId: 'run-1', taskId: '2.2', output: { role: 'reviewer', assessment: 'blocked' } });
  assert.equal(
    runtime.status({ runId: 'run-1' }).task_ledgers[0]?.stalled.consecutive_non_progress,
    2,
    'the second writer saw the first',
  );
  const db = new Database(dispatchStorePath(root));
  t.after(() => db.close());
  assert.throws(() => db.prepare("UPDATE snapshots SET reason = 'x'").run(), /append-only/);
  assert.throws(() => db.prepare('DELETE FROM snapshots').run(), /append-only/);
  db.exec('DROP TRIGGER snapshots_no_update');
  db.prepare(
    'UPDATE snapshots SET facts = replace(facts, \'"blocked"\', \'"fine"\') WHERE revision = (SELECT max(revision) FROM snapshots)',
  ).run();
  assert.throws(() => runtime.status({ runId: 'run-1' }), { code: 'ERR_DISPATCH_SNAPSHOT_CORRUPT' });
});

test('a file that is not a dispatch store is refused with a coded error', (t) => {
  const root = tempDir(t);
  mkdirSync(rootPaths(root).registries, { recursive: true });
  writeFileSync(dispatchStorePath(root), 'not sqlite at all, just text that is long enough to be read as a header');
  assert.throws(() => SnapshotStore.open(root), { code: 'ERR_DISPATCH_STORE_UNREADABLE' });
  assert.throws(() => SnapshotStore.open(join(root, 'missing'), { create: true }), {
    code: 'ERR_DISPATCH_ROOT_NOT_FOUND',
  });
});

test("config: the root's HOT/config/dispatch.json sets the threshold; invalid config is refused with the pointer", (t) => {
  const root = tempDir(t);
  mkdirSync(rootPaths(root).config, { recursive: true });
  writeFileSync(
    configPath(root, 'dispatch.json'),
    JSON.stringify({ ...loadDispatchConfig(PACKAGED_CONFIG_PATH), stall_threshold: 5 }),
  );
  const runtime = new DispatchRuntime({ root });
  t.after(() => runtime.close());
  assert.equal(runtime.config.stall_threshold, 5);
  assert.throws(
    () =>
      parseDispatchConfig({ schema_version: '1', stall_threshold: 0, max_output_tokens: 1, guide_instruction: 'x' }),
    (error: { code: string; details: Record<string, unknown> }) => {
      assert.equal(error.code, 'ERR_DISPATCH_CONFIG_INVALID');
      assert.equal(error.details.pointer, '/stall_threshold');
      return true;
    },
  );
  assert.throws(() => parseDispatchConfig({ ...loadDispatchConfig(PACKAGED_CONFIG_PATH), extra: true }), {
    code: 'ERR_DISPATCH_CONFIG_INVALID',
  });
  writeFileSync(configPath(root, 'dispatch.json'), '{ not json');
  assert.throws(() => new DispatchRuntime({ root }), { code: 'ERR_DISPATCH_CONFIG_INVALID' });
  assert.equal(loadDispatchConfig(PACKAGED_CONFIG_PATH).stall_threshold, 2, 'the shipped default is 2');
});
