// Signed checkpoints against the attack they exist for: someone with file access rewrites an EXCHANGE in a freshly
// installed signed root (signed-root.ts) after some routed exchanges, recomputes every later hash and the receipts'
// anchors and puts the append-only triggers back. The chain alone then verifies; a checkpoint (the root's own, or a copy kept elsewhere)
// must make `ledger verify` and G4 FAIL — and an honest root must still PASS against the same checkpoints.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { canonicalJson } from '#kernel/canonical.js';
import { computeEntryHash, GENESIS_HASH, type LedgerEntry } from '#kernel/ledger/entry.js';
import { generateSigningKeyPair } from '#kernel/signing/keys.js';
import { cplaneOf, gateCheck, type GateJson, makeSignedRoot, must, rootCopies, run } from './signed-root.js';
import { configPath, receiptPath, rootPaths } from '#kernel/root/layout.js';

const work = mkdtempSync(join(tmpdir(), 'cp-checkpoints-'));
const pristine = join(work, 'pristine');
const copyRoot = rootCopies(work, pristine);
/** A checkpoint of the pristine root's head after the routed exchanges, kept outside the root. */
const external = join(work, 'external-checkpoint.json');

before(async () => {
  await makeSignedRoot(work, pristine);
  for (const prompt of ['first question', 'second question', 'third question'])
    must([cplaneOf(pristine), 'route', '--root', pristine, '--prompt', prompt, '--dev']);
  must([cplaneOf(pristine), 'ledger', 'checkpoint', '--root', pristine, '--out', external]);
});
after(() => rmSync(work, { recursive: true, force: true }));

interface VerifyJson {
  ok: boolean;
  checkpoints: { ok: boolean; verified: number; absent: boolean; findings: Array<{ problem: string }> };
}

function gate(json: GateJson, id: string): { status: string; codes: string[] } {
  const g = json.gates.find((x) => x.id === id);
  return { status: g?.status ?? 'MISSING', codes: g?.findings.map((f) => f.code) ?? [] };
}

function verify(root: string, extra: string[] = []): { status: number; json: VerifyJson } {
  const r = run([cplaneOf(root), 'ledger', 'verify', '--root', root, '--json', ...extra]);
  return { status: r.status, json: JSON.parse(r.stdout) as VerifyJson };
}

const ledgerPath = (root: string): string => rootPaths(root).ledgerFile;
const checkpointDir = (root: string): string => rootPaths(root).checkpoints;

interface Row {
  seq: number;
  id: string;
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: string;
  timestamp: string;
  previous_hash: string;
  entry_hash: string;
}

/**
 * The attack: drop the triggers, edit the first EXCHANGE's response, recompute every later entry's link and hash,
 * put the triggers back, and recompute every receipt's anchor. Returns the edited entry's seq.
 */
function rewriteExchange(root: string): number {
  const db = new Database(ledgerPath(root));
  let edited = 0;
  try {
    const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all() as Array<{
      name: string;
      sql: string;
    }>;
    assert.ok(triggers.length >= 2);
    for (const t of triggers) db.exec(`DROP TRIGGER ${t.name}`);
    const rows = db
      .prepare(
        'SELECT seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash FROM entries ORDER BY seq',
      )
      .all() as Row[];
    const update = db.prepare('UPDATE entries SET metadata = ?, previous_hash = ?, entry_hash = ? WHERE seq = ?');
    let previous = GENESIS_HASH;
    for (const row of rows) {
      const metadata = JSON.parse(row.metadata) as Record<string, unknown>;
      if (edited === 0 && row.event_type === 'EXCHANGE') {
        metadata.response = 'The answer is 41';
        edited = row.seq;
      }
      const entry: Omit<LedgerEntry, 'entry_hash'> = {
        id: row.id,
        event_type: row.event_type,
        submission_id: row.submission_id,
        decision: row.decision,
        reason: row.reason,
        metadata,
        timestamp: row.timestamp,
        previous_hash: previous,
      };
      const hash = computeEntryHash(entry);
      update.run(canonicalJson(metadata), previous, hash, row.seq);
      previous = hash;
    }
    for (const t of triggers) db.exec(t.sql);
    const hashAt = db.prepare('SELECT entry_hash FROM entries WHERE seq = ?').pluck();
    for (const pkg of readdirSync(rootPaths(root).installed)) {
      const path = receiptPath(root, pkg);
      const receipt = JSON.parse(readFileSync(path, 'utf8')) as { ledger_anchor: { seq: number; hash: string } };
      receipt.ledger_anchor.hash = hashAt.get(receipt.ledger_anchor.seq) as string;
      writeFileSync(path, `${JSON.stringify(receipt, null, 2)}\n`);
    }
  } finally {
    db.close();
  }
  assert.ok(edited > 0, 'the root has a routed EXCHANGE to rewrite');
  return edited;
}

test('an honest bootstrapped root with routed exchanges verifies against its own checkpoints and a copy kept elsewhere', () => {
  const files = readdirSync(checkpointDir(pristine));
  assert.ok(files.length >= 3, `genesis, every install and the command write checkpoints: ${files.join()}`);
  const mode = statSync(rootPaths(pristine).rootKey).mode & 0o777;
  assert.equal(mode, 0o600, 'the root key is private to its owner');
  const { status, json } = verify(pristine, ['--checkpoint', external]);
  assert.equal(status, 0, JSON.stringify(json));
  assert.equal(json.checkpoints.verified, files.length + 1);
  const gates = gateCheck(pristine, ['--checkpoint', external]);
  assert.equal(gate(gates.json, 'G4').status, 'PASS', JSON.stringify(gates.json.gates.find((g) => g.id === 'G4')));
  assert.equal(gates.status, 0);
});

test("a rewritten EXCHANGE with every later hash, the triggers and the receipts' anchors recomputed FAILS verify and G4 against the root's checkpoint", () => {
  const root = copyRoot();
  rewriteExchange(root);
  // Without checkpoints the forgery is self-consistent: the chain and the anchors verify.
  const chainOnly = run([cplaneOf(pristine), 'ledger', 'verify', '--ledger', ledgerPath(root), '--json']);
  assert.equal(chainOnly.status, 0, chainOnly.stdout);
  const { status, json } = verify(root);
  assert.equal(status, 1);
  assert.deepEqual([...new Set(json.checkpoints.findings.map((f) => f.problem))], ['mismatch']);
  const gates = gateCheck(root);
  assert.equal(gate(gates.json, 'G4').status, 'FAIL');
  assert.ok(gate(gates.json, 'G4').codes.includes('CHECKPOINT_MISMATCH'), gate(gates.json, 'G4').codes.join());
  assert.equal(gates.status, 1);
});

test("a copy kept elsewhere catches a rewrite whose author also re-signed the root's checkpoints with the root key", () => {
  const root = copyRoot();
  rewriteExchange(root);
  rmSync(checkpointDir(root), { recursive: true });
  must([cplaneOf(root), 'ledger', 'checkpoint', '--root', root]);
  // Inside the root everything agrees now: that is the limit docs/threat-model.md states.
  assert.equal(verify(root).status, 0);
  assert.equal(gate(gateCheck(root).json, 'G4').status, 'PASS');
  const { status, json } = verify(root, ['--checkpoint', external]);
  assert.equal(status, 1);
  assert.deepEqual(
    json.checkpoints.findings.map((f) => f.problem),
    ['mismatch'],
  );
  assert.ok(gate(gateCheck(root, ['--checkpoint', external]).json, 'G4').codes.includes('CHECKPOINT_MISMATCH'));
});

test('a copy kept elsewhere catches a rewrite whose author replaced the root key and re-signed everything with theirs', () => {
  const root = copyRoot();
  rewriteExchange(root);
  const forged = generateSigningKeyPair();
  const trustPath = rootPaths(root).trust;
  const trust = JSON.parse(readFileSync(trustPath, 'utf8')) as { keys: Array<Record<string, string>> };
  trust.keys = trust.keys.map((k) =>
    k.role === 'checkpoint' ? { ...k, key_id: forged.key_id, public_key_pem: forged.public_key_pem } : k,
  );
  writeFileSync(trustPath, JSON.stringify(trust));
  writeFileSync(rootPaths(root).rootKey, forged.private_key_pem, { mode: 0o600 });
  rmSync(checkpointDir(root), { recursive: true });
  must([cplaneOf(root), 'ledger', 'checkpoint', '--root', root]);
  const { status, json } = verify(root, ['--checkpoint', external]);
  assert.equal(status, 1);
  assert.deepEqual(
    json.checkpoints.findings.map((f) => f.problem),
    ['untrusted_key'],
  );
  // Pinning the original public key: the forged in-root checkpoint is untrusted, the kept copy names the rewrite.
  const pinned = join(work, 'pinned.pub');
  const original = (
    JSON.parse(readFileSync(rootPaths(pristine).trust, 'utf8')) as {
      keys: Array<Record<string, string>>;
    }
  ).keys.find((k) => k.role === 'checkpoint');
  writeFileSync(pinned, original?.public_key_pem ?? '');
  const problems = verify(root, ['--checkpoint', external, '--checkpoint-key', pinned])
    .json.checkpoints.findings.map((f) => f.problem)
    .sort();
  assert.deepEqual(problems, ['mismatch', 'untrusted_key']);
});

test("a tail cut off after the last install is caught by a checkpoint beyond the head (the receipts' anchors cannot see it)", () => {
  const root = copyRoot();
  const db = new Database(ledgerPath(root));
  db.exec('DROP TRIGGER entries_no_delete');
  db.exec('DELETE FROM entries WHERE seq > (SELECT max(seq) - 2 FROM entries)');
  db.close();
  const { status, json } = verify(root, ['--checkpoint', external]);
  assert.equal(status, 1);
  assert.ok(
    json.checkpoints.findings.every((f) => f.problem === 'truncated') && json.checkpoints.findings.length === 2,
    JSON.stringify(json.checkpoints),
  );
  assert.ok(gate(gateCheck(root).json, 'G4').codes.includes('CHECKPOINT_TRUNCATED'));
});

test("G4 FAILS when the root's checkpoints are deleted, altered, or a stranger's file sits among them", () => {
  const deleted = copyRoot();
  rmSync(checkpointDir(deleted), { recursive: true });
  assert.deepEqual(gate(gateCheck(deleted).json, 'G4'), { status: 'FAIL', codes: ['CHECKPOINTS_MISSING'] });

  const altered = copyRoot();
  const name = readdirSync(checkpointDir(altered)).sort()[2] as string;
  const path = join(checkpointDir(altered), name);
  const cp = JSON.parse(readFileSync(path, 'utf8')) as { time: string };
  writeFileSync(path, JSON.stringify({ ...cp, time: '2020-01-01T00:00:00.000Z' }));
  assert.deepEqual(gate(gateCheck(altered).json, 'G4'), { status: 'FAIL', codes: ['CHECKPOINT_BAD_SIGNATURE'] });

  const stranger = copyRoot();
  writeFileSync(join(checkpointDir(stranger), 'notes.txt'), 'hello');
  writeFileSync(
    join(checkpointDir(stranger), '0000000000000099-0000000000000000.json'),
    '{"kind":"cplane-ledger-checkpoint"}',
  );
  assert.deepEqual(gate(gateCheck(stranger).json, 'G4'), {
    status: 'FAIL',
    codes: ['CHECKPOINT_INVALID', 'CHECKPOINT_INVALID'],
  });
  const hostileRoot = copyRoot();
  const hostile = run([
    cplaneOf(hostileRoot),
    'ledger',
    'verify',
    '--root',
    hostileRoot,
    '--checkpoint',
    join(work, 'no-such-file.json'),
  ]);
  assert.equal(hostile.status, 3);
  assert.match(hostile.stderr, /ERR_CHECKPOINT_INVALID/);
});

test('a root bootstrapped before checkpoints (no root key) keeps working: G4 WARNs, verify says so, `ledger checkpoint` is a coded refusal', () => {
  const root = copyRoot();
  rmSync(rootPaths(root).rootKey);
  rmSync(checkpointDir(root), { recursive: true });
  const trustPath = rootPaths(root).trust;
  const trust = JSON.parse(readFileSync(trustPath, 'utf8')) as { keys: Array<Record<string, string>> };
  writeFileSync(trustPath, JSON.stringify({ keys: trust.keys.filter((k) => k.role !== 'checkpoint') }));
  const { status, json } = gateCheck(root);
  assert.deepEqual(gate(json, 'G4'), { status: 'WARN', codes: ['CHECKPOINTS_ABSENT'] });
  assert.ok(
    json.gates.filter((g) => g.id !== 'G4').every((g) => g.status === 'PASS'),
    JSON.stringify(json.gates),
  );
  assert.equal(status, 0);
  const verified = verify(root);
  assert.equal(verified.status, 0);
  assert.equal(verified.json.checkpoints.absent, true);
  const refused = run([cplaneOf(root), 'ledger', 'checkpoint', '--root', root]);
  assert.equal(refused.status, 3);
  assert.match(refused.stderr, /ERR_CHECKPOINT_NO_ROOT_KEY/);
  // Routing and installing still work and write no checkpoint.
  must([cplaneOf(root), 'route', '--root', root, '--prompt', 'still here', '--dev']);
  assert.equal(existsSync(checkpointDir(root)), false);
});

test('the router checkpoints the head every N entries (router config `checkpoint`)', () => {
  const root = copyRoot();
  const routerConfig = configPath(root, 'router.json');
  writeFileSync(
    routerConfig,
    JSON.stringify({
      ...(JSON.parse(readFileSync(routerConfig, 'utf8')) as object),
      checkpoint: { every_entries: 2, every_seconds: 3600 },
    }),
  );
  const before = readdirSync(checkpointDir(root)).length;
  must([cplaneOf(root), 'route', '--root', root, '--prompt', 'one', '--dev']);
  must([cplaneOf(root), 'route', '--root', root, '--prompt', 'two', '--dev']);
  const names = readdirSync(checkpointDir(root)).sort();
  assert.equal(names.length, before + 2, names.join());
  const head = JSON.parse(must([cplaneOf(root), 'ledger', 'head', '--root', root, '--json'])) as { seq: number };
  assert.equal(
    Number.parseInt(names[names.length - 1] as string, 10),
    head.seq,
    'the newest checkpoint is the head after the route',
  );
  writeFileSync(
    routerConfig,
    JSON.stringify({
      ...(JSON.parse(readFileSync(routerConfig, 'utf8')) as object),
      checkpoint: { every_entries: 0, every_seconds: 3600 },
    }),
  );
  const refused = run([cplaneOf(root), 'route', '--root', root, '--prompt', 'three', '--dev']);
  assert.equal(refused.status, 3, 'the config schema bounds every_entries');
  assert.match(refused.stderr, /ERR_ROUTER_CONFIG_INVALID/);
});

test("`ledger checkpoints --export` writes every checkpoint as JSON Lines that verify a bare ledger file with the root's public key", () => {
  const exported = join(work, 'exported.jsonl');
  must([cplaneOf(pristine), 'ledger', 'checkpoints', '--root', pristine, '--export', exported]);
  const lines = readFileSync(exported, 'utf8').trim().split('\n');
  assert.equal(lines.length, readdirSync(checkpointDir(pristine)).length);
  const pub = join(work, 'root.pub');
  const key = (
    JSON.parse(readFileSync(rootPaths(pristine).trust, 'utf8')) as {
      keys: Array<Record<string, string>>;
    }
  ).keys.find((k) => k.role === 'checkpoint');
  writeFileSync(pub, key?.public_key_pem ?? '');
  const bare = copyRoot();
  const ok = run([
    cplaneOf(pristine),
    'ledger',
    'verify',
    '--ledger',
    ledgerPath(bare),
    '--checkpoint',
    exported,
    '--checkpoint-key',
    pub,
    '--json',
  ]);
  assert.equal(ok.status, 0, ok.stdout);
  assert.equal((JSON.parse(ok.stdout) as VerifyJson).checkpoints.verified, lines.length);
  rewriteExchange(bare);
  const caught = run([
    cplaneOf(pristine),
    'ledger',
    'verify',
    '--ledger',
    ledgerPath(bare),
    '--checkpoint',
    exported,
    '--checkpoint-key',
    pub,
    '--json',
  ]);
  assert.equal(caught.status, 1);
  const unkeyed = run([
    cplaneOf(pristine),
    'ledger',
    'verify',
    '--ledger',
    ledgerPath(pristine),
    '--checkpoint',
    exported,
    '--json',
  ]);
  assert.equal(unkeyed.status, 1, 'a bare ledger with no key given cannot trust any checkpoint');
});
