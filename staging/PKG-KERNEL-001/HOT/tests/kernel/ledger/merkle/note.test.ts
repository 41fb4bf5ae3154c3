// C2SP signed notes and checkpoints against published vectors: golang.org/x/mod sumdb/note (example_test.go
// ExampleSign/ExampleOpen and note_test.go TestNewVerifier, the PeterNeumann key), the example of c2sp.org
// signed-note.md (example.com/foo), and sumdb/tlog note_test.go TestFormatTree (the checkpoint body).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leafHash } from '../../../../kernel/ledger/merkle/hash.js';
import {
  ed25519FromSeed,
  formatCheckpointBody,
  formatVkey,
  type NoteSigner,
  noteVerifier,
  openNote,
  parseCheckpointBody,
  parseVkey,
  signNote,
} from '../../../../kernel/ledger/merkle/note.js';
import { createPublicKey } from 'node:crypto';

const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

function goSigner(): NoteSigner {
  // The signer key is PRIVATE+KEY+<name>+<hash>+base64(0x01 ‖ 32-byte seed).
  const seed = Buffer.from(GO_SKEY.split('+').slice(4).join('+'), 'base64').subarray(1);
  const privateKey = ed25519FromSeed(seed);
  return { ...noteVerifier('PeterNeumann', createPublicKey(privateKey)), privateKey };
}

test("signing sumdb/note's example text with its key gives its signed note byte for byte", () => {
  const signer = goSigner();
  assert.equal(formatVkey(signer), GO_VKEY);
  assert.equal(signNote(GO_TEXT, signer), GO_NOTE);
  assert.equal(openNote(GO_NOTE, parseVkey(GO_VKEY)).text, GO_TEXT);
});

test("the signed-note spec's example note verifies with its vkey; an altered one does not", () => {
  const vkey = parseVkey('example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
  const note =
    'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';
  assert.equal(openNote(note, vkey).text, 'This is an example message.\n');
  assert.throws(() => openNote(note.replace('example message', 'exemplary message'), vkey), {
    code: 'ERR_PROOF_INVALID',
  });
  assert.throws(() => openNote(note, parseVkey(GO_VKEY)), { code: 'ERR_PROOF_INVALID' }, 'signed by another key');
});

test('vkeys mangled as sumdb/note TestNewVerifier mangles them are refused', () => {
  parseVkey(GO_VKEY);
  const bad = [
    GO_VKEY.slice(1),
    GO_VKEY.slice(0, -1),
    GO_VKEY.replace('c74f20a3', 'c74f20a4'),
    'PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==',
    'PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
    'PeterNeumann',
    '',
  ];
  for (const k of bad) assert.throws(() => parseVkey(k), { code: 'ERR_PROOF_KEY_INVALID' }, k);
  for (let i = 0; i < GO_VKEY.length; i += 1) {
    const mangled = GO_VKEY.slice(0, i) + String.fromCharCode(GO_VKEY.charCodeAt(i) + 1) + GO_VKEY.slice(i + 1);
    assert.throws(() => parseVkey(mangled), { code: 'ERR_PROOF_KEY_INVALID' }, mangled);
  }
});

test("a checkpoint body is sumdb/tlog's FormatTree golden text, and parses back; malformed ones are refused", () => {
  const golden = 'go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n';
  const head = { origin: 'go.sum database tree', size: 123456789012, root: leafHash(Buffer.from('hello world')) };
  assert.equal(formatCheckpointBody(head), golden);
  assert.deepEqual(parseCheckpointBody(golden), head);
  for (const bad of [
    'go.sum database tree\n0xabcdef\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
    'go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n',
    'go.sum database tree\n0123\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
    '\n1\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
  ])
    assert.throws(() => parseCheckpointBody(bad), { code: 'ERR_PROOF_INVALID' }, bad);
});
