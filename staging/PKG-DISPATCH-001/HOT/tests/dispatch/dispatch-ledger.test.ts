import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { parseTasksMarkdown } from '../../dispatch/tasks-parser.js';
import {
  MAX_TASKS_BYTES,
  buildProgressLedger,
  findActiveTaskId,
  loadTasks,
  readTasksSource,
} from '../../dispatch/progress-ledger.js';
import { FACT_KEYS, factsFor, mergeFacts, runFact, taskFact, type StateSnapshotFact } from '../../dispatch/facts.js';
import { progressFacts, readStoredProgress } from '../../dispatch/progress-facts.js';
import { refreshProgress } from '../../dispatch/refresh-progress.js';
import { nextStallCount, stallEffect, stallState, type DispatchOutput } from '../../dispatch/stall.js';
import { ingestEffect, parseIngestInput } from '../../dispatch/ingest.js';
import { buildTaskLedger } from '../../dispatch/task-ledger.js';
import { sha256Digest } from '#kernel/canonical.js';
import { SAMPLE_TASKS, tempDir, writeTasks } from './helpers.js';

const AT = '2026-01-01T00:00:00.000Z';

function expectParseError(text: string, pattern: RegExp, line?: number): void {
  assert.throws(
    () => parseTasksMarkdown(text, '/spec/tasks.md'),
    (error: { code?: string; message: string; details?: Record<string, unknown>; hint?: string }) => {
      assert.equal(error.code, 'ERR_PROGRESS_LEDGER_PARSE_FAILED');
      assert.equal(error.details?.error_type, 'progress_ledger_parse_failed');
      assert.equal(error.details?.path, '/spec/tasks.md');
      if (line !== undefined) assert.equal(error.details?.line, line);
      assert.match(error.message, pattern);
      assert.ok((error.hint ?? '').length > 0, 'a parse error carries a hint');
      return true;
    },
  );
}

test('parser: ids, statuses, nesting, _Prompt and _Requirements', () => {
  const tasks = parseTasksMarkdown(SAMPLE_TASKS, 'tasks.md');
  assert.deepEqual(
    tasks.map((task) => [task.id, task.status, task.parent_id]),
    [
      ['1', 'completed', null],
      ['2', 'in-progress', null],
      ['2.1', 'completed', '2'],
      ['2.2', 'in-progress', '2'],
      ['2.3', 'pending', '2'],
      ['3', 'pending', null],
    ],
  );
  const byId = new Map(tasks.map((task) => [task.id, task]));
  assert.deepEqual(byId.get('1')?.requirements, ['1.1']);
  assert.equal(byId.get('1')?.description, 'Set up the package');
  assert.equal(byId.get('2.1')?.prompt, 'Role: engineer | Task: parse the checkbox items');
  assert.deepEqual(byId.get('2.1')?.requirements, ['2.1', '2.2']);
  assert.equal(byId.get('2.2')?.prompt, 'Role: engineer | Task: parse _Prompt and _Requirements lines');
  assert.equal(byId.get('2.3')?.prompt, undefined);
  assert.equal(byId.get('2.2')?.line, 12);
});

test('parser: CRLF, * bullets, uppercase X and ids without a trailing dot', () => {
  const tasks = parseTasksMarkdown('* [X] 1 First\r\n* [ ] 1.1. Second\r\n', 'tasks.md');
  assert.deepEqual(
    tasks.map((task) => [task.id, task.status, task.description]),
    [
      ['1', 'completed', 'First'],
      ['1.1', 'pending', 'Second'],
    ],
  );
});

test('parser: lone CR ends a line; U+2028 inside a description is text', () => {
  const tasks = parseTasksMarkdown(
    '# T\r- [x] 1. First\r  - [ ] 1.1 Sub\u2028still sub\r- [-] 2. Second\r',
    'tasks.md',
  );
  assert.deepEqual(
    tasks.map((task) => [task.id, task.status, task.line, task.parent_id, task.description]),
    [
      ['1', 'completed', 2, null, 'First'],
      ['1.1', 'pending', 3, '1', 'Sub\u2028still sub'],
      ['2', 'in-progress', 4, null, 'Second'],
    ],
  );
  const withPrompt = parseTasksMarkdown('- [ ] 1. One\n  - _Prompt: do a\u2029then b_\n', 't');
  assert.equal(withPrompt[0]?.prompt, 'do a\u2029then b');
});

test('parser: a task whose box holds an astral or multi-character marker is refused, never skipped as prose', () => {
  for (const box of ['[\u{1F600}]', '[xx]', '[  ]', '[\u2714\uFE0F]']) {
    expectParseError(`- [ ] 1. ok\n- ${box} 2. hidden task\n`, /unknown task status marker/, 2);
  }
  // A link in a prose list item is still prose.
  assert.equal(parseTasksMarkdown('- [ ] 1. ok\n- [docs](https://example.com) 2. read\n', 't').length, 1);
});

test('parser: malformed input is refused with the line and a hint', () => {
  expectParseError('# Tasks\n\nnothing here\n', /no task items found/, 0);
  expectParseError('- [ ] 1. ok\n- [?] 2. odd marker\n', /unknown task status marker/, 2);
  expectParseError('- [ ] no id here\n', /has no id/, 1);
  expectParseError('- [ ] 1. one\n- [ ] 1. again\n', /repeats the task on line 1/, 2);
  expectParseError('_Prompt: orphan_\n- [ ] 1. one\n', /not under a task item/, 1);
  expectParseError('- [ ] 1. one\n  - _Prompt: a_\n  - _Prompt: b_\n', /second _Prompt/, 3);
  expectParseError('- [ ] 1. one\n  - _Prompt: _\n', /empty _Prompt/, 2);
  expectParseError('- [ ] 1. one\n  - _Requirements: 1_\n  - _Requirements: 2_\n', /second _Requirements/, 3);
  expectParseError('- [] 1. empty box\n', /unknown task status marker/, 1);
});

test('progress ledger: totals, active task (first in-progress leaf), current task', () => {
  const tasks = parseTasksMarkdown(SAMPLE_TASKS, 'tasks.md');
  const ledger = buildProgressLedger({
    specName: 'spec-a',
    sourcePath: '/s/tasks.md',
    fingerprint: { mtime_ms: 1, hash: 'sha256:x' },
    tasks,
    taskId: '2.1',
  });
  assert.deepEqual(ledger.totals, { total: 6, completed: 2, in_progress: 2, pending: 2 });
  assert.equal(ledger.active_task_id, '2.2', 'parent 2 summarises its subtasks; the in-progress leaf is active');
  assert.deepEqual(ledger.current_task, {
    id: '2.1',
    description: 'Parse checkboxes',
    status: 'completed',
    prompt: 'Role: engineer | Task: parse the checkbox items',
    requirements: ['2.1', '2.2'],
  });
  assert.equal(
    findActiveTaskId(parseTasksMarkdown('- [x] 1. a\n- [ ] 2. b\n', 't')),
    '2',
    'no in-progress leaf: first pending leaf',
  );
  assert.equal(findActiveTaskId(parseTasksMarkdown('- [x] 1. a\n', 't')), null, 'all done: no active task');
});

test('readTasksSource: fingerprint is the mtime and the hash of the bytes read; typed errors', (t) => {
  const dir = tempDir(t);
  const path = writeTasks(join(dir, 'spec', 'tasks.md'), SAMPLE_TASKS, 1_700_000_123);
  const source = readTasksSource(path);
  assert.deepEqual(source.fingerprint, { mtime_ms: 1_700_000_123_000, hash: sha256Digest(SAMPLE_TASKS) });
  assert.throws(
    () => readTasksSource(join(dir, 'missing.md')),
    (error: { code: string; details: Record<string, unknown>; message: string }) => {
      assert.equal(error.code, 'ERR_PROGRESS_LEDGER_MISSING_TASKS');
      assert.equal(error.details.error_type, 'progress_ledger_missing_tasks');
      assert.equal(error.details.path, join(dir, 'missing.md'));
      assert.match(error.message, /missing\.md/);
      return true;
    },
  );
  assert.throws(
    () => readTasksSource(dir),
    { code: 'ERR_PROGRESS_LEDGER_MISSING_TASKS' },
    'a directory is not a tasks file',
  );
  writeFileSync(join(dir, 'bin.md'), Buffer.from([0x2d, 0x20, 0xff, 0xfe, 0x0a]));
  assert.throws(() => readTasksSource(join(dir, 'bin.md')), { code: 'ERR_PROGRESS_LEDGER_PARSE_FAILED' });
  writeFileSync(join(dir, 'nul.md'), '- [ ] 1. a\u0000\n');
  assert.throws(() => readTasksSource(join(dir, 'nul.md')), /NUL bytes/);
  writeFileSync(join(dir, 'huge.md'), Buffer.alloc(MAX_TASKS_BYTES + 1, 0x20));
  assert.throws(() => readTasksSource(join(dir, 'huge.md')), {
    code: 'ERR_PROGRESS_LEDGER_PARSE_FAILED',
    message: /over the \d+-byte limit/,
  });
});

test('facts: merge is last-write-wins per scope, null removes, output sorted; unknown keys ignored', () => {
  let facts: StateSnapshotFact[] = mergeFacts(
    [],
    [runFact(FACT_KEYS.progressPlanVersion, 1), taskFact('2', FACT_KEYS.taskSummary, 'first')],
    1,
    AT,
  );
  facts = mergeFacts(
    facts,
    [taskFact('2', FACT_KEYS.taskSummary, 'second'), taskFact('3', FACT_KEYS.taskBlockers, ['x'])],
    2,
    AT,
  );
  facts = mergeFacts(facts, [taskFact('3', FACT_KEYS.taskBlockers, null)], 3, AT);
  assert.deepEqual(
    facts.map((fact) => [fact.task_id, fact.key, fact.value, fact.revision]),
    [
      [null, 'ledger.progress.plan_version', 1, 1],
      ['2', 'ledger.task.summary', 'second', 2],
    ],
  );
  const withUnknown: StateSnapshotFact[] = [
    ...facts,
    { key: 'ledger.task.mystery', task_id: '2', value: 'x', revision: 4, updated_at: AT },
    { key: 'other.thing', task_id: null, value: 1, revision: 4, updated_at: AT },
  ];
  assert.deepEqual([...factsFor(withUnknown, '2').keys()], ['ledger.task.summary']);
  assert.deepEqual([...factsFor(withUnknown, null).keys()], ['ledger.progress.plan_version']);
});

test('facts: progress facts round-trip; missing or malformed required facts are named', () => {
  const tasks = parseTasksMarkdown(SAMPLE_TASKS, 'tasks.md');
  const stored = {
    spec_name: 's',
    source_path: '/s/tasks.md',
    source_fingerprint: { mtime_ms: 5, hash: 'sha256:ab' },
    plan_version: 3,
    tasks,
  };
  const facts = mergeFacts([], progressFacts(stored), 1, AT);
  assert.deepEqual(readStoredProgress(facts), { progress: stored });
  const keys = new Set(facts.map((fact) => fact.key));
  for (const key of [FACT_KEYS.progressActiveTaskId, FACT_KEYS.progressTotals, FACT_KEYS.progressSourceFingerprint])
    assert.ok(keys.has(key), key);
  const broken = facts
    .filter((fact) => fact.key !== FACT_KEYS.progressTasks)
    .map((fact) => (fact.key === FACT_KEYS.progressSourceFingerprint ? { ...fact, value: { mtime_ms: 'x' } } : fact));
  assert.deepEqual(readStoredProgress(broken), {
    missing: [FACT_KEYS.progressSourceFingerprint, FACT_KEYS.progressTasks],
  });
});

test('fingerprint invalidation: unchanged bytes reuse the snapshot, a touch refreshes only the mtime, an edit rebuilds', (t) => {
  const dir = tempDir(t);
  const path = writeTasks(join(dir, 'spec', 'tasks.md'), SAMPLE_TASKS);
  const first = refreshProgress([], path, 'spec');
  assert.equal(first.progress_source, 'rebuilt');
  assert.equal(first.rebuild_cause, 'fields_missing');
  const facts = mergeFacts([], first.updates, 1, AT);

  const same = refreshProgress(facts, path, 'spec');
  assert.equal(same.progress_source, 'snapshot');
  assert.deepEqual(same.updates, []);

  writeTasks(path, SAMPLE_TASKS, 1_700_000_999);
  const touched = refreshProgress(facts, path, 'spec');
  assert.equal(touched.progress_source, 'snapshot', 'same bytes: no re-parse');
  assert.deepEqual(
    touched.updates.map((update) => update.key),
    [FACT_KEYS.progressSourceFingerprint],
  );

  writeTasks(path, SAMPLE_TASKS.replace('- [ ] 3.', '- [x] 3.'));
  const edited = refreshProgress(facts, path, 'spec');
  assert.equal(edited.progress_source, 'rebuilt');
  assert.equal(edited.rebuild_cause, 'fingerprint_changed');
  assert.equal(edited.progress.plan_version, 2);
  assert.equal(edited.progress.tasks.find((task) => task.id === '3')?.status, 'completed');
});

test('fingerprint invalidation: unreadable file degrades to the snapshot; malformed file is an error', (t) => {
  const dir = tempDir(t);
  const path = writeTasks(join(dir, 'spec', 'tasks.md'), SAMPLE_TASKS);
  const facts = mergeFacts([], refreshProgress([], path, 'spec').updates, 1, AT);
  writeTasks(path, '# Tasks\n- [?] 1. broken\n');
  assert.throws(() => refreshProgress(facts, path, 'spec'), { code: 'ERR_PROGRESS_LEDGER_PARSE_FAILED' });
  const missing = join(dir, 'spec', 'gone.md');
  const degraded = refreshProgress(facts, missing, 'spec');
  assert.equal(degraded.mode, 'ledger_plus_fallback');
  assert.equal(degraded.fallback_reason, 'rebuild_failed');
  assert.equal(degraded.progress.tasks.length, 6);
  assert.throws(
    () => refreshProgress([], missing, 'spec'),
    { code: 'ERR_PROGRESS_LEDGER_MISSING_TASKS' },
    'nothing stored and nothing readable: no silent fallback',
  );
});

test('stall detector: the policy table', () => {
  const cases: [DispatchOutput, string][] = [
    [{ role: 'implementer', outcome: 'blocked' }, 'increment'],
    [{ role: 'implementer', outcome: 'failed' }, 'increment'],
    [{ role: 'implementer', outcome: 'completed' }, 'reset'],
    [{ role: 'reviewer', assessment: 'blocked' }, 'increment'],
    [{ role: 'reviewer', assessment: 'approved' }, 'reset'],
    [{ role: 'reviewer', assessment: 'needs_changes' }, 'none'],
  ];
  for (const [output, effect] of cases) assert.equal(stallEffect(output), effect, JSON.stringify(output));
  let count = 0;
  const seen: boolean[] = [];
  for (const output of [cases[0], cases[5], cases[3], cases[1], cases[4], cases[0]].map(
    (item) => (item as [DispatchOutput, string])[0],
  )) {
    count = nextStallCount(count, output);
    seen.push(stallState(count, 2).flagged);
  }
  assert.deepEqual(seen, [false, false, true, true, false, false]);
  assert.deepEqual(stallState(3, 3), { consecutive_non_progress: 3, threshold: 3, flagged: true });
});

test('ingest effect: blockers, fixes, replan hint written at the threshold and cleared on reset', () => {
  let facts: StateSnapshotFact[] = [];
  let revision = 0;
  const apply = (output: Parameters<typeof ingestEffect>[2]) => {
    const effect = ingestEffect(facts, '2.2', output, 2);
    revision += 1;
    facts = mergeFacts(facts, effect.updates, revision, AT);
    return { effect, ledger: buildTaskLedger('run', '2.2', facts, 2) };
  };
  let step = apply({ role: 'implementer', outcome: 'blocked', summary: 'missing fixture' });
  assert.deepEqual(step.ledger.blockers, ['missing fixture']);
  assert.equal(step.ledger.replan_hint, undefined);
  step = apply({ role: 'reviewer', assessment: 'needs_changes', required_fixes: ['add tests'] });
  assert.deepEqual(step.ledger.required_fixes, ['add tests']);
  assert.equal(step.ledger.stalled.consecutive_non_progress, 1);
  step = apply({ role: 'implementer', outcome: 'failed', blockers: ['tsc fails'] });
  assert.equal(step.effect.newly_flagged, true);
  assert.deepEqual(step.ledger.stalled, { consecutive_non_progress: 2, threshold: 2, flagged: true });
  assert.match(
    step.ledger.replan_hint ?? '',
    /^Task 2\.2 made no progress in 2 consecutive dispatches .*last: implementer failed/,
  );
  step = apply({ role: 'reviewer', assessment: 'blocked' });
  assert.equal(step.effect.newly_flagged, false, 'already flagged');
  step = apply({ role: 'implementer', outcome: 'completed', summary: 'done' });
  assert.deepEqual(step.ledger.stalled, { consecutive_non_progress: 0, threshold: 2, flagged: false });
  assert.equal(step.ledger.replan_hint, undefined);
  assert.deepEqual(step.ledger.blockers, []);
  step = apply({
    role: 'reviewer',
    assessment: 'approved',
    issues: [{ severity: 'minor', message: 'naming', file: 'a.ts' }],
  });
  assert.equal(step.ledger.reviewer_assessment, 'approved');
  assert.deepEqual(step.ledger.required_fixes, []);
  assert.deepEqual(step.ledger.reviewer_issues, [{ severity: 'minor', message: 'naming', file: 'a.ts' }]);
});

test('task ledger: known keys only, wrong-typed values ignored', () => {
  const facts: StateSnapshotFact[] = [
    { key: FACT_KEYS.taskSummary, task_id: '1', value: 42, revision: 1, updated_at: AT },
    { key: FACT_KEYS.taskReviewerAssessment, task_id: '1', value: 'maybe', revision: 1, updated_at: AT },
    { key: FACT_KEYS.taskBlockers, task_id: '1', value: ['a', 3, 'b'], revision: 1, updated_at: AT },
    { key: 'ledger.task.secret', task_id: '1', value: 'ignored', revision: 1, updated_at: AT },
  ];
  const ledger = buildTaskLedger('r', '1', facts, 2);
  assert.deepEqual(ledger, {
    run_id: 'r',
    task_id: '1',
    plan_version: 1,
    blockers: ['a', 'b'],
    required_fixes: [],
    stalled: { consecutive_non_progress: 0, threshold: 2, flagged: false },
  });
});

test('loadTasks reads and parses in one step', (t) => {
  const dir = tempDir(t);
  const { source, tasks } = loadTasks(writeTasks(join(dir, 'tasks.md'), SAMPLE_TASKS));
  assert.equal(tasks.length, 6);
  assert.equal(source.text, SAMPLE_TASKS);
});

test('the shipped example tasks.md parses as documented', () => {
  const path = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dispatch', 'examples', 'tasks.example.md');
  const { source, tasks } = loadTasks(path);
  const ledger = buildProgressLedger({
    specName: 'example-spec',
    sourcePath: path,
    fingerprint: source.fingerprint,
    tasks,
    taskId: '2.2',
  });
  assert.deepEqual(ledger.totals, { total: 6, completed: 2, in_progress: 2, pending: 2 });
  assert.equal(ledger.active_task_id, '2.2');
  assert.deepEqual(ledger.current_task?.requirements, ['2.3']);
  assert.match(ledger.current_task?.prompt ?? '', /attach indented metadata lines/);
});

test('ingest payload: a field the role does not carry (typo, other role, __proto__) is refused by name, never dropped', () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ role: 'implementer', outcome: 'blocked', blocker: ['typo'] }, '"blocker"'],
    [{ role: 'implementer', outcome: 'blocked', required_fixes: ['x'] }, '"required_fixes"'],
    [{ role: 'implementer', outcome: 'blocked', issues: [] }, '"issues"'],
    [JSON.parse('{"role":"reviewer","assessment":"blocked","__proto__":{"summary":"x"}}'), '"__proto__"'],
    [{ role: 'reviewer', assessment: 'blocked', issues: [{ severity: 'h', message: 'm', line: 3 }] }, '"line"'],
  ];
  for (const [value, field] of bad) {
    assert.throws(
      () => parseIngestInput(value),
      (error: { code?: string; message: string; hint?: string }) => {
        assert.equal(error.code, 'ERR_DISPATCH_OUTPUT_INVALID');
        assert.ok(error.message.includes(field), error.message);
        assert.ok((error.hint ?? '').length > 0);
        return true;
      },
    );
  }
  // An unset optional field is no field at all.
  assert.deepEqual(parseIngestInput({ role: 'implementer', outcome: 'completed', summary: undefined }), {
    role: 'implementer',
    outcome: 'completed',
  });
});
