// The exchange content store end to end: a scripted 200-turn coding-agent session through `cplane serve` with the
// official Anthropic SDK (system prompt ~20k tokens, tools ~10k, a tool call and a tool result per turn), read
// back from the export; then the password pasted into one tool result is redacted while the gateway runs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import Database from 'better-sqlite3';
import { codingSession, messagesAt, requestAt } from '../../scripts/lib/coding-session.js';
import { cli, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { filesHolding } from '../../scripts/lib/files-holding.js';

const TURNS = 200;
const SECRET_TURN = 120;
const SECRET = 'password: correct-horse-battery-staple-7781';

let served: Served;

before(async () => {
  served = await startServed([], (root) => {
    configSet(root, 'gateway.body_limit_bytes', String(8 << 20));
    // A long agent session resends ~150k tokens a turn: its operator sizes the limits for that.
    for (const scope of ['session', 'agent', 'work_order'])
      configSet(root, `budget.limits.${scope}.default.max_tokens`, '100000000000');
    configSet(root, 'budget.rate_limits.session.max_tokens', '100000000000');
  });
});
after(async () => served.cleanup());

test('200 turns read back byte for byte; a pasted password is redacted with the gateway running, gone from every file', async () => {
  const script = codingSession(undefined, { turn: SECRET_TURN, text: SECRET });
  const client = new Anthropic({
    apiKey: issueKey('AGENT-CODER'),
    baseURL: served.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-CODING-200' },
  });
  const sent: string[] = [];
  for (let n = 0; n < TURNS; n += 1) {
    const body = requestAt(script, n);
    const reply = await client.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming);
    assert.equal(reply.type, 'message', `turn ${n}`);
    sent.push(JSON.stringify({ tools: body.tools, system: body.system, messages: body.messages }));
    served.upstream.requests.length = 0;
  }
  const exchanges = () =>
    ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'SES-CODING-200');
  const before = exchanges();
  assert.equal(before.length, TURNS);
  before.forEach((entry, n) => {
    assert.ok(entry.metadata.prompt === sent[n], `turn ${n} reads back as sent`);
  });
  assert.equal(cli(['ledger', 'verify', '--root', served.root]).status, 0);

  // The block is the tool-result message (with the comma before it), resent in every request after its turn.
  const message = `,${JSON.stringify(messagesAt(script, SECRET_TURN + 1)[2 * SECRET_TURN + 2])}`;
  assert.ok(message.includes(SECRET));
  const digest = createHash('sha256').update(message, 'utf8').digest('hex');
  // A tool result is stored compressed: the password is on disk in that form, not in plain.
  const ledgerFile = new Database(join(served.root, 'HOT', 'ledger', 'ledger.sqlite'), { readonly: true });
  const stored = ledgerFile.prepare('SELECT text FROM content_blocks WHERE digest = unhex(?)').pluck().get(digest);
  ledgerFile.close();
  assert.ok(Buffer.isBuffer(stored), 'the block holding the password is stored compressed');
  assert.ok(filesHolding(served.root, stored).length > 0, 'the password was stored before the redaction');
  const redact = cli(['ledger', 'redact', '--root', served.root, '--block', digest, '--reason', 'password', '--json']);
  assert.equal(redact.status, 0, redact.stderr);
  const result = JSON.parse(redact.stdout) as { entry_id: string; redacted: number; checkpointed: boolean };
  assert.equal(result.redacted, 1);
  assert.equal(result.checkpointed, true, 'the idle gateway holds no snapshot, so the WAL is truncated');
  assert.deepEqual(filesHolding(served.root, SECRET), []);
  assert.deepEqual(filesHolding(served.root, stored), [], 'nor its compressed bytes');
  const verify = cli(['ledger', 'verify', '--root', served.root, '--json']);
  assert.equal(verify.status, 0, verify.stdout);
  assert.equal((JSON.parse(verify.stdout) as { content: { redacted_blocks: number } }).content.redacted_blocks, 1);
  const gate = spawnSync(
    process.execPath,
    [join(served.root, 'HOT', 'scripts', 'gate_check.js'), '--root', served.root, '--gate', 'G4', '--json'],
    { encoding: 'utf8' },
  );
  const g4 = (JSON.parse(gate.stdout) as { gates: { status: string; summary?: string }[] }).gates[0];
  assert.equal(g4?.status, 'PASS', gate.stdout);
  const marker = `[REDACTED:${result.entry_id}]`;
  exchanges().forEach((entry, n) => {
    const expected = n > SECRET_TURN ? (sent[n] as string).replace(message, marker) : sent[n];
    assert.ok(entry.metadata.prompt === expected, `turn ${n} reads back (with the marker where the message was)`);
  });
  // The gateway goes on recording after the redaction.
  await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'still there?' }],
  });
  assert.equal(cli(['ledger', 'verify', '--root', served.root]).status, 0);
});
