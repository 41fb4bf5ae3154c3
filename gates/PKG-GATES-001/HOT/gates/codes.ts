import { defineCodes } from '#kernel/catalogue/define.js';

/**
 * What the gates report (docs/codes.md: Gate finding codes). A finding FAILs its gate unless the gate lists it as a
 * warning (noted in the meaning); G6 also reports the router's SPOOL_* warnings as WARN findings.
 */
export const CODES = defineCodes({
  MODULE_REFUSED: {
    kind: 'finding',
    meaning: 'gate_check: a gate module was refused by the module loader (unowned or tampered); it never ran',
  },
  GATE_CRASHED: {
    kind: 'finding',
    meaning:
      'a gate threw an uncoded error (a coded one, or a fault such as a full disk, is reported under its `ERR_…` code)',
  },
  UNOWNED_FILE: {
    kind: 'finding',
    meaning:
      'G0: a file under the governed tree, or a code file (.js, .mjs, .cjs, .node) in a state directory, is owned by no installed package',
  },
  NOT_A_FILE: { kind: 'finding', meaning: 'G0: a governed path is a symlink, FIFO, socket or device' },
  MISSING_OWNED_FILE: { kind: 'finding', meaning: 'G0: a file the ownership registry lists is absent' },
  DOUBLE_OWNED: { kind: 'finding', meaning: 'G0: a path is owned by two packages' },
  DIGEST_MISMATCH: { kind: 'finding', meaning: "G1: an owned file's SHA-256 differs from the recorded digest" },
  OWNED_FILE_UNREADABLE: { kind: 'finding', meaning: 'G1: an owned file cannot be read' },
  REGISTRY_WITHOUT_RECEIPT: {
    kind: 'finding',
    meaning: 'G1: the ownership registry lists a package that has no receipt',
  },
  REGISTRY_RECEIPT_MISMATCH: {
    kind: 'finding',
    meaning: 'G1: the ownership registry and a receipt disagree about a file',
  },
  RECEIPT_WITHOUT_REGISTRY: { kind: 'finding', meaning: 'G1: a receipt lists a file the ownership registry does not' },
  RECEIPT_LEDGER_MISMATCH: {
    kind: 'finding',
    meaning: 'G1: a receipt does not match its install record in the ledger',
  },
  OPERATOR_CONFIG_INVALID: {
    kind: 'finding',
    meaning: 'G3: `HOT/registries/operator-config.json` is not an operator override file',
  },
  OPERATOR_CONFIG_UNUSED: {
    kind: 'finding',
    meaning: 'G3 (warning): an operator override names a section no installed package ships',
  },
  REVOCATION_LIST_INVALID: {
    kind: 'finding',
    meaning:
      'G3: the revocation list `HOT/registries/revoked-keys.json` cannot be trusted (the router refuses every key)',
  },
  MANIFEST_UNPINNED: {
    kind: 'finding',
    meaning:
      "G1: an installed manifest is missing or no longer hashes to its receipt's `manifest_digest`, so none of its digests can be trusted",
  },
  NOT_IN_MANIFEST: { kind: 'finding', meaning: "G1: an owned file is not an asset of its package's signed manifest" },
  DIGEST_NOT_SIGNED: {
    kind: 'finding',
    meaning: "G1: an owned file's recorded digest is not the one its signed manifest declares",
  },
  TRANSFER_UNAUTHORIZED: {
    kind: 'finding',
    meaning: 'G1: a file was taken over by a package signed by a key without authority over its previous owner',
  },
  TRANSFER_FROM_LOWER_LAYER: { kind: 'finding', meaning: 'G1: a file was taken over from a package in a lower layer' },
  RECEIPT_NOT_INSTALLED: {
    kind: 'finding',
    meaning:
      "G1: a receipt is not backed by its package's latest install record (txn id, manifest digest, signature verdict): copied in or restored by hand",
  },
  INSTALLED_WITHOUT_RECEIPT: {
    kind: 'finding',
    meaning: 'G1: the ledger records an install whose package has no receipt',
  },
  DEPENDENCY_MISSING: { kind: 'finding', meaning: "G2: an installed package's dependency is not installed" },
  DEPENDENCY_OUT_OF_RANGE: {
    kind: 'finding',
    meaning: "G2: an installed dependency's version is outside the required range",
  },
  LAYER_VIOLATION: { kind: 'finding', meaning: 'G2: a dependency sits in a higher layer than its dependent' },
  DEPENDENCY_CYCLE: { kind: 'finding', meaning: "G2: the installed packages' dependencies form a cycle" },
  BOOTSTRAP_INCOMPLETE: {
    kind: 'finding',
    meaning: 'G2: genesis or a bootstrap did not finish (`cplane bootstrap --resume`, or bootstrap again)',
  },
  RECEIPT_INVALID: { kind: 'finding', meaning: 'G3: a receipt is not JSON or fails `receipt.schema.json`' },
  SCHEMA_MISSING: { kind: 'finding', meaning: 'G3: `receipt.schema.json` is not installed' },
  MANIFEST_INVALID: { kind: 'finding', meaning: 'G3: an installed manifest fails the manifest schema or its rules' },
  CONFIG_INVALID: { kind: 'finding', meaning: 'G3: a config in `HOT/config/` is not JSON or fails its schema' },
  CONFIG_WITHOUT_SCHEMA: {
    kind: 'finding',
    meaning: 'G3: a config in `HOT/config/` has no `<name>-config.schema.json`',
  },
  LEDGER_EDITED: { kind: 'finding', meaning: "G4: an entry's content no longer matches its hash" },
  LEDGER_HASH_EDITED: { kind: 'finding', meaning: "G4: an entry's stored hash was changed" },
  LEDGER_BROKEN_LINK: {
    kind: 'finding',
    meaning: "G4: an entry's previous-hash link does not match the entry before it",
  },
  LEDGER_DELETED: { kind: 'finding', meaning: 'G4: an entry is missing from the chain (a gap in the sequence)' },
  LEDGER_REORDERED: { kind: 'finding', meaning: 'G4: entries are out of order' },
  LEDGER_TRUNCATED: { kind: 'finding', meaning: 'G4: the chain ends before a recorded anchor' },
  LEDGER_ANCHOR_MISMATCH: { kind: 'finding', meaning: "G4: the entry at the newest receipt's anchor has another hash" },
  LEDGER_UNREADABLE: { kind: 'finding', meaning: 'G4: an entry cannot be read (metadata that is not a JSON object)' },
  LEDGER_SCHEMA_MISSING: {
    kind: 'finding',
    meaning: "G4: a table, index or trigger of the ledger's schema is missing",
  },
  LEDGER_SCHEMA_ALTERED: {
    kind: 'finding',
    meaning: "G4: a table, index or trigger of the ledger differs from cplane's schema",
  },
  LEDGER_SCHEMA_EXTRA: {
    kind: 'finding',
    meaning: 'G4: the ledger holds a table, index, trigger or view that is not part of its schema',
  },
  LEDGER_CONTENT_BLOCK_EDITED: {
    kind: 'finding',
    meaning:
      'G4: a content block no longer hashes to its digest (edited, or swapped with another), or its compressed bytes do not inflate to its recorded size',
  },
  LEDGER_CONTENT_BLOCK_DELETED: {
    kind: 'finding',
    meaning: 'G4: a content block lost its text without a REDACTED entry of the chain naming it',
  },
  LEDGER_CONTENT_BLOCK_RESTORED: {
    kind: 'finding',
    meaning: 'G4: a content block a REDACTED entry of the chain removed holds its text again',
  },
  LEDGER_CONTENT_BLOCK_MISSING: {
    kind: 'finding',
    meaning: 'G4: a content block a list needs is not in the store',
  },
  LEDGER_CONTENT_LIST_EDITED: {
    kind: 'finding',
    meaning: 'G4: a content list node no longer hashes to its digest',
  },
  LEDGER_CONTENT_LIST_MISSING: {
    kind: 'finding',
    meaning: 'G4: a content list an entry or another node needs is not in the store',
  },
  LEDGER_FUTURE_DATED: {
    kind: 'finding',
    meaning: "G4: an entry is dated beyond the allowed clock skew of the checker's time",
  },
  ANCHOR_MISMATCH: {
    kind: 'finding',
    meaning: "G4: a receipt's anchor is past the end of the ledger or has another hash",
  },
  INSTALL_RECORD_MISSING: { kind: 'finding', meaning: 'G4: a receipt has no INSTALLED/PACKAGE_UPGRADED record' },
  CHECKPOINTS_ABSENT: {
    kind: 'finding',
    meaning: 'G4 (warning): the root has no root key, so no signed checkpoints bound the chain',
  },
  CHECKPOINTS_MISSING: { kind: 'finding', meaning: 'G4: the root has a root key but no checkpoint covers the ledger' },
  CHECKPOINT_INVALID: { kind: 'finding', meaning: 'G4: a checkpoint file cannot be read or is not a checkpoint' },
  CHECKPOINT_UNTRUSTED_KEY: {
    kind: 'finding',
    meaning: 'G4: a checkpoint is signed by a key that is not a checkpoint key',
  },
  CHECKPOINT_BAD_SIGNATURE: { kind: 'finding', meaning: "G4: a checkpoint's signature does not verify" },
  CHECKPOINT_OTHER_LEDGER: { kind: 'finding', meaning: 'G4: a checkpoint belongs to another ledger' },
  CHECKPOINT_TRUNCATED: { kind: 'finding', meaning: "G4: the chain ends before a checkpoint's entry" },
  CHECKPOINT_MISMATCH: { kind: 'finding', meaning: "G4: the entry at a checkpoint's sequence number has another hash" },
  MANIFEST_TAMPERED: {
    kind: 'finding',
    meaning: "G5: an installed manifest no longer matches its receipt's `manifest_digest`",
  },
  DEV_WAIVER: {
    kind: 'finding',
    meaning: 'G5 (warning): a package was installed with `--dev` and its install record carries the waiver',
  },
  WAIVER_NOT_RECORDED: {
    kind: 'finding',
    meaning: 'G5: a receipt claims a `--dev` waiver that its install record does not carry',
  },
  SIGNATURE_UNSIGNED: { kind: 'finding', meaning: 'G5: an installed package is unsigned and has no recorded waiver' },
  SIGNATURE_INVALID: { kind: 'finding', meaning: "G5: an installed package's signature does not verify" },
  SIGNATURE_UNTRUSTED_KEY: {
    kind: 'finding',
    meaning: 'G5: an installed package is signed by a key the trust store does not hold, without a waiver',
  },
  EXCHANGE_WITHOUT_DISPATCH: { kind: 'finding', meaning: 'G6: an EXCHANGE links to no DISPATCH marker' },
  FUTURE_DATED_DISPATCH: {
    kind: 'finding',
    meaning: 'G6: a DISPATCH is dated in the future, so it could never become an orphan',
  },
  ORPHAN_DISPATCH: { kind: 'finding', meaning: 'G6: a DISPATCH older than the orphan timeout has no EXCHANGE' },
  SMOKE_FAILED: { kind: 'finding', meaning: 'G7: the smoke route through the mock provider failed' },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
