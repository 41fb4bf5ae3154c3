// A paid answer is never lost: whatever fails after the provider answered (record building, canonical JSON,
// the ledger append, the spool, budget settlement), the caller gets the answer and the EXCHANGE is committed,
// spooled, or handed back whole. Spool entries that cannot be read are quarantined and routing goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { budgetRecordsOf } from '#budgeter/records.js';
import { reconcileStaleReservations } from '#budgeter/reconcile.js';
import { warningText } from '#kernel/catalogue/define.js';
import { CpError } from '#kernel/errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { issueToken } from '../../router/auth.js';
import { Router } from '../../router/router.js';
import { spoolEntries } from '../../router/spool.js';
import type { Provider, ProviderResult } from '#providers/spec.js';
import { harness, request, type Harness } from './harness.js';
import { configPath } from '#kernel/root/layout.js';

const CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** A provider whose answer is whatever the test hands it (a third-party provider with no edge bounds). */
function answering(result: Partial<ProviderResult>): Provider {
  return {
    id: 'mock',
    async send() {
      return {
        provider_id: 'mock',
        model: 'm',
        content: 'the paid answer',
        stop_reason: 'stop',
        raw_stop_reason: 'stop',
        request_id: null,
        latency_ms: 1,
        usage: { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, raw: null },
        ...result,
      };
    },
  };
}

function deep(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < levels; i += 1) value = { a: value };
  return value;
}

/** Make appendBatch throw `error` for batches holding an EXCHANGE while `fail.on` is true. */
function failExchanges(h: Harness, error: () => unknown): { on: boolean } {
  const fail = { on: true };
  const real = h.ledger.appendBatch.bind(h.ledger);
  h.ledger.appendBatch = (inputs, options) => {
    if (fail.on && inputs.some((input) => input.event_type === 'EXCHANGE')) throw error();
    return real(inputs, options);
  };
  return fail;
}

const enospc = (): Error =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 });

function assertVerifies(h: Harness): void {
  assert.equal(verifyLedger(h.ledger).ok, true, 'the ledger still verifies');
}

test('a spooled exchange whose settlement record was delivered meanwhile from the budget outbox: the spool adds only the EXCHANGE', async (t) => {
  const h0 = harness(t);
  const budget = budgeter(t, h0.dir);
  const h = harness(t, { router: { budget } });
  const fail = failExchanges(h, enospc);
  const res = await h.router.route(request({ request_id: 'REQ-SPOOLED' }));
  assert.equal(res.outcome, 'success');
  assert.match(res.warnings.map(warningText).join('\n'), /LEDGER_WRITE_FAILED: exchange spooled/);
  fail.on = false;
  // The process stays down past the orphan timeout; a reconciliation pass (another process's start) delivers the
  // settlement the budget kept, since nothing reported it appended.
  const delivered = reconcileStaleReservations(budget, h.ledger, { timeoutMs: 0, now: Date.now() + 1000 });
  assert.deepEqual(
    delivered.map((r) => [r.request_id, r.ledger_entry_ids.length]),
    [['REQ-SPOOLED', 1]],
  );
  assert.equal(budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' }).length, 1);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 0);
  // The spool then drains: the EXCHANGE lands, the settlement is not appended a second time.
  assert.equal((await h.router.recoverSpool()).drained, 1);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
  assert.deepEqual(
    budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' }).map((e) => e.submission_id),
    ['REQ-SPOOLED'],
  );
  assertVerifies(h);
});

test('an EXCHANGE that landed carrying its settlement, whose process died before reporting it: reconciliation drops the kept copy, never settles twice', async (t) => {
  const h0 = harness(t);
  const budget = budgeter(t, h0.dir);
  // The process dies right after the append: the budget never hears the settlement landed.
  budget.recorded = () => {};
  const h = harness(t, { router: { budget } });
  const res = await h.router.route(request({ request_id: 'REQ-UNREPORTED' }));
  assert.equal(res.outcome, 'success');
  const chain = h.ledger.query({ order: 'oldest' });
  assert.deepEqual(
    chain.map((e) => e.event_type),
    ['DISPATCH', 'EXCHANGE'],
  );
  const now = Date.now() + 1000;
  assert.equal(budget.recordsDue(now).length, 1, 'the settlement is kept until reported');
  assert.deepEqual(reconcileStaleReservations(budget, h.ledger, { timeoutMs: 0, now }), []);
  assert.equal(budget.recordsDue(now).length, 0, 'the kept copy is dropped: the chain holds it');
  assert.equal(h.ledger.query({}).length, 2, 'no record appended');
  const settled = budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' });
  assert.deepEqual(
    settled.map((e) => [e.submission_id, e.id]),
    [['REQ-UNREPORTED', chain[1]?.id]],
  );
  assertVerifies(h);
});

test('a usage object nested 10,000 deep with non-finite numbers is recorded bounded: success, EXCHANGE committed', async (t) => {
  const raw = { ...deep(10_000), huge: Infinity, neg: -Infinity, nan: NaN, input_tokens: 10 };
  const h = harness(t, {
    router: {
      providers: [
        answering({ usage: { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, raw } }),
      ],
    },
  });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'the paid answer');
  assert.match(res.exchange_entry_id, /^LED-/);
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  const usageRaw = exchange?.metadata.usage_raw as Record<string, unknown>;
  assert.equal(usageRaw.huge, null, 'Infinity is recorded as null');
  assert.match(JSON.stringify(usageRaw), /nested deeper than 8 levels: dropped/);
  assertVerifies(h);
});

test('usage counts that are not safe non-negative integers are unknown (null), never a crash', async (t) => {
  const usage = {
    input_tokens: -3,
    output_tokens: 2.5,
    cache_read_tokens: 2 ** 60,
    cache_write_tokens: Number.NaN,
    raw: null,
  };
  const h = harness(t, { router: { providers: [answering({ usage })] } });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.deepEqual(
    [
      exchange?.metadata.input_tokens,
      exchange?.metadata.output_tokens,
      exchange?.metadata.cache_read_tokens,
      exchange?.metadata.cache_write_tokens,
    ],
    [null, null, null, null],
  );
  assertVerifies(h);
});

test('disk full at the EXCHANGE append: the answer is returned and the exchange spooled, then recovered', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'Mock response');
  assert.equal(res.unrecorded_exchange, undefined);
  assert.match(res.warnings.map(warningText).join('\n'), /LEDGER_WRITE_FAILED: exchange spooled .*ENOSPC/);
  // The spooled exchange is recorded content: the owner's alone, as the ledger is.
  const spool = join(h.dir, 'spool');
  assert.equal(statSync(spool).mode & 0o777, 0o700);
  const [spooled] = readdirSync(spool);
  assert.equal(statSync(join(spool, spooled as string)).mode & 0o777, 0o600);
  fail.on = false;
  assert.equal((await h.router.recoverSpool()).drained, 1);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
  assertVerifies(h);
});

test('the ledger refusing the record itself (canonical JSON): committed without the raw usage, not retried blindly', async (t) => {
  const h = harness(t);
  let refusals = 0;
  const real = h.ledger.appendBatch.bind(h.ledger);
  h.ledger.appendBatch = (inputs) => {
    if (inputs.some((i) => i.event_type === 'EXCHANGE' && typeof i.metadata?.usage_raw === 'object')) {
      refusals += 1;
      throw new CpError('ERR_CANONICAL_JSON', 'non-finite number Infinity at /usage_raw/x', {
        hint: 'JSON numbers must be finite',
      });
    }
    return real(inputs);
  };
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(refusals, 1, 'a record fault is not retried as is');
  assert.match(res.warnings.map(warningText).join('\n'), /EXCHANGE_RECORD_DEGRADED/);
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.metadata.response, 'Mock response');
  assert.equal(exchange?.metadata.usage_raw, '[dropped: the ledger refused it]');
  assertVerifies(h);
});

test('ledger and spool both failing: the answer is returned and the whole exchange handed back', async (t) => {
  const h0 = harness(t);
  const blocker = join(h0.dir, 'not-a-dir');
  writeFileSync(blocker, 'a file where the spool directory should be');
  const h = harness(t, { router: { spoolDir: join(blocker, 'spool') } });
  failExchanges(h, enospc);
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'Mock response');
  assert.match(res.warnings.map(warningText).join('\n'), /EXCHANGE_NOT_RECORDED/);
  const records = res.unrecorded_exchange as AppendInput[];
  assert.equal(records[0]?.event_type, 'EXCHANGE');
  assert.equal(records[0]?.metadata?.response, 'Mock response');
  assert.equal(records[0]?.metadata?.dispatch_entry_id, res.dispatch_entry_id);
  // Appending the handed-back batch later is all it takes to complete the ledger.
  h.ledger.appendBatch = (inputs) => Object.getPrototypeOf(h.ledger).appendBatch.call(h.ledger, inputs);
  h.ledger.appendBatch(records);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
  assertVerifies(h);
});

test('a failure after the answer in output validation or budget settlement is a warning, the answer stands', async (t) => {
  const broken = {
    settle: () => {
      throw new Error('budget database is locked');
    },
    reserve: () => ({ ok: true, records: [], remaining_tokens: 1000 }),
    release: () => ({ records: [] }),
  } as unknown as Budgeter;
  const h = harness(t, { router: { budget: broken } });
  const res = await h.router.route(
    request({ output_schema: { type: 'object', properties: { a: { $ref: '#/nowhere' } } } }),
  );
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'Mock response');
  assert.match(res.warnings.map(warningText).join('\n'), /BUDGET_SETTLE_FAILED/);
  assert.equal(res.output_valid, false);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
});

function budgeter(t: { after: (fn: () => void) => void }, dir: string): Budgeter {
  const config = JSON.parse(readFileSync(configPath(CODE_ROOT, 'budget.json'), 'utf8')) as Record<string, unknown>;
  const b = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...config, limits: { session: { default: { max_tokens: 100_000 } } } },
  });
  t.after(() => b.close());
  return b;
}

test('a reply cut off after HTTP 200 keeps its reservation charged as unknown; one before a 2xx is released', async (t) => {
  const h0 = harness(t);
  const budget = budgeter(t, h0.dir);
  const h = harness(t, {
    script: [
      { error: { kind: 'network', status: 200, after_success: true, message: 'socket reset mid-body' } },
      { error: { kind: 'invalid_request', status: 400 } },
    ],
    router: { budget },
  });
  const cut = await h.router.route(request({ request_id: 'REQ-CUT', max_tokens: 500 }));
  assert.equal(cut.outcome, 'error');
  assert.equal(h.provider.calls.length, 1, 'a possibly billed call is not retried');
  assert.match(cut.warnings.map(warningText).join('\n'), /BUDGET_USAGE_UNKNOWN/);
  const settled = budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' });
  assert.equal(settled.length, 1);
  assert.equal(settled[0]?.decision, 'SETTLED_USAGE_UNKNOWN');
  assert.equal(budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_RELEASED' }).length, 0);
  const refused = await h.router.route(request({ request_id: 'REQ-400', max_tokens: 500 }));
  assert.equal(refused.error_code, 'INVALID_REQUEST');
  assert.equal(
    budgetRecordsOf(h.ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_RELEASED' }).length,
    1,
    'a refusal before any 2xx is released',
  );
  assertVerifies(h);
});

test('secrets never reach a record: the auth token and a provider key echoed back are scrubbed', async (t) => {
  const KEYS = { default: 'route-signing-secret-1234' };
  const providerKey = 'sk-provider-key-5678';
  const h = harness(t, {
    router: {
      devMode: false,
      authKeys: KEYS,
      secrets: [providerKey],
      providers: [answering({ content: `echo: ${providerKey} and ${KEYS.default}` })],
    },
  });
  const nowS = Math.floor(h.now.ms / 1000);
  const token = issueToken({ sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 60 }, KEYS);
  const res = await h.router.route(request({ auth_token: token, prompt: `my token is ${token}` }));
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'echo: [REDACTED] and [REDACTED]');
  const rejected = await h.router.route(request({ auth_token: `${token}x`, prompt: `again ${token}x` }));
  assert.equal(rejected.outcome, 'rejected');
  const everything = JSON.stringify(h.ledger.query({}));
  for (const secret of [token, providerKey, KEYS.default])
    assert.equal(everything.includes(secret), false, 'no secret in any record');
  assert.match(everything, /my token is \[REDACTED\]/);
});

test('damaged spool entries are quarantined and named, the good one is appended, and routing goes on', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  const spooledRes = await h.router.route(request());
  fail.on = false;
  const spool = join(h.dir, 'spool');
  const good = readdirSync(spool);
  assert.equal(good.length, 1);
  writeFileSync(join(spool, 'LED-truncated.json'), readFileSync(join(spool, good[0] as string), 'utf8').slice(0, 40));
  writeFileSync(join(spool, 'LED-shape.json'), JSON.stringify({ not: 'a batch' }));
  writeFileSync(
    join(spool, 'LED-foreign.json'),
    JSON.stringify([{ event_type: 'PACKAGE_INSTALLED', submission_id: 'x', decision: 'x', reason: 'x', metadata: {} }]),
  );
  writeFileSync(join(h.dir, 'outside.json'), '[]');
  symlinkSync(join(h.dir, 'outside.json'), join(spool, 'LED-link.json'));
  mkdirSync(join(spool, 'LED-dir.json'));
  execFileSync('mkfifo', [join(spool, 'LED-fifo.json')]);
  const drained = await h.router.recoverSpool();
  assert.equal(drained.drained, 1);
  assert.equal(drained.quarantined.length, 6);
  assert.deepEqual(readdirSync(spool), [], 'nothing is left in the spool');
  const quarantine = readdirSync(`${spool}-quarantine`).sort();
  assert.deepEqual(quarantine, [
    'LED-dir.json',
    'LED-fifo.json',
    'LED-foreign.json',
    'LED-link.json',
    'LED-shape.json',
    'LED-truncated.json',
  ]);
  assert.equal(existsSync(join(h.dir, 'outside.json')), true, 'the link target is untouched');
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.metadata.dispatch_entry_id, spooledRes.dispatch_entry_id);
  // The next route succeeds and carries the quarantine warnings once.
  const next = await h.router.route(request());
  assert.equal(next.outcome, 'success');
  const warnings = next.warnings.filter((w) => w.code === 'SPOOL_QUARANTINED').map(warningText);
  assert.equal(warnings.length, 6);
  assert.match(warnings.join('\n'), /LED-fifo\.json.*not a regular file \(a FIFO\)/);
  assert.match(warnings.join('\n'), /LED-link\.json.*a symlink/);
  assert.deepEqual((await h.router.route(request())).warnings, []);
  assertVerifies(h);
});

test('a spool entry the ledger cannot take for an environmental reason stays pending, not quarantined', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  await h.router.route(request());
  const drained = await h.router.recoverSpool();
  assert.equal(drained.drained, 0);
  assert.equal(drained.pending, 1);
  assert.deepEqual(drained.quarantined, []);
  assert.match(drained.warnings.map(warningText).join('\n'), /SPOOL_PENDING/);
  fail.on = false;
  assert.equal((await h.router.recoverSpool()).drained, 1);
});

test('a spooled exchange already in the ledger (a drain killed before removing it) is removed, never appended twice', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  await h.router.route(request());
  fail.on = false;
  const spool = join(h.dir, 'spool');
  const [name] = readdirSync(spool);
  h.ledger.appendBatch(JSON.parse(readFileSync(join(spool, name as string), 'utf8')) as AppendInput[]);
  const drained = await h.router.recoverSpool();
  assert.equal(drained.drained, 1);
  assert.deepEqual(readdirSync(spool), []);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
});

test('two processes draining one spool at once append each spooled exchange once', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  await h.router.route(request({ session_id: 'SES-A' }));
  await h.router.route(request({ session_id: 'SES-B' }));
  fail.on = false;
  // A second process on the same root: its own ledger handle and router, the same spool.
  const ledger = Ledger.open(join(h.dir, 'ledger.sqlite'), {});
  t.after(() => ledger.close());
  const other = new Router({
    ledger,
    config: h.config,
    providers: [h.provider],
    devMode: true,
    spoolDir: join(h.dir, 'spool'),
  });
  const [a, b] = await Promise.all([h.router.recoverSpool(), other.recoverSpool()]);
  assert.equal(a.drained + b.drained, 2);
  assert.deepEqual([...a.warnings, ...b.warnings], []);
  assert.deepEqual(
    h.ledger
      .query({ event_type: 'EXCHANGE' })
      .map((e) => e.metadata.session_id)
      .sort(),
    ['SES-A', 'SES-B'],
  );
  assert.deepEqual(readdirSync(join(h.dir, 'spool')), []);
  assertVerifies(h);
});

test('an entry claimed by a drain that died is drained by the next, and counted as spooled meanwhile', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  await h.router.route(request({ session_id: 'SES-A' }));
  await h.router.route(request({ session_id: 'SES-B' }));
  fail.on = false;
  const spool = join(h.dir, 'spool');
  const [first, second] = readdirSync(spool);
  // The pid of a process that has exited: the claim it left is abandoned.
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  renameSync(join(spool, first as string), join(spool, `.${first}.claim-${dead.stdout}-0a1b2c3d`));
  // This process's own pid on a claim it does not hold: an earlier process with the same pid (a restarted container).
  renameSync(join(spool, second as string), join(spool, `.${second}.claim-${process.pid}-0a1b2c3d`));
  // What G6 and the console count: a claimed entry is still owed, under its own name.
  assert.deepEqual(spoolEntries(spool, { claimed: true }), [first, second].sort());
  assert.deepEqual(spoolEntries(spool), []);
  assert.equal(h.router.spooled(), 2);
  assert.equal((await h.router.recoverSpool()).drained, 2);
  assert.deepEqual(readdirSync(spool), []);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 2);
});

test('spool entries naming no DISPATCH of theirs are quarantined, never appended as calls nobody made', async (t) => {
  const h = harness(t);
  const fail = failExchanges(h, enospc);
  const res = await h.router.route(request());
  fail.on = false;
  const spool = join(h.dir, 'spool');
  const real = JSON.parse(readFileSync(join(spool, `${res.dispatch_entry_id}.json`), 'utf8')) as AppendInput[];
  assert.equal((await h.router.recoverSpool()).drained, 1);
  const [drainedExchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  const plant = (id: string, change: Record<string, unknown>): void => {
    const batch = structuredClone(real);
    Object.assign((batch[0] as AppendInput).metadata as Record<string, unknown>, { dispatch_entry_id: id, ...change });
    writeFileSync(join(spool, `${id}.json`), JSON.stringify(batch));
  };
  // Named after a DISPATCH the chain does not hold.
  plant('LED-FORGED01', {});
  // Named after an entry that is not a DISPATCH.
  plant(drainedExchange?.id as string, {});
  const dispatchId = res.dispatch_entry_id;
  // The drained exchange again, under another session (where the duplicate check would look) and another agent.
  plant(dispatchId, { session_id: 'SES-ELSEWHERE' });
  const drained = await h.router.recoverSpool();
  assert.equal(drained.drained, 0);
  assert.equal(drained.quarantined.length, 3);
  const why = drained.warnings.map(warningText).join('\n');
  assert.match(why, /LED-FORGED01.*names DISPATCH "LED-FORGED01", which the ledger does not hold/);
  assert.match(why, /not a DISPATCH/);
  assert.match(why, /has session_id "SES-ELSEWHERE" where its DISPATCH .* has "SES-1"/);
  plant(dispatchId, { agent_id: 'AGENT-OTHER' });
  assert.match((await h.router.recoverSpool()).warnings.map(warningText).join('\n'), /has agent_id "AGENT-OTHER"/);
  assert.deepEqual(
    h.ledger.query({ event_type: 'EXCHANGE' }).map((e) => e.metadata.dispatch_entry_id),
    [dispatchId],
  );
  assertVerifies(h);
});

test('a provider returning something that is not a result (a bug) still yields a recorded outcome, not a crash', async (t) => {
  const broken: Provider = {
    id: 'mock',
    send: async () => ({ content: 42, usage: 'lots' }) as unknown as ProviderResult,
  };
  const h = harness(t, { router: { providers: [broken] } });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, '42');
  assert.equal(res.input_tokens, 0);
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.metadata.input_tokens, null, 'unknown, not 0, in the record');
  assertVerifies(h);
});
