// JSON Schema of a ledger checkpoint (HOT/ledger/checkpoints/*.json, and every exported copy). The kernel embeds
// it, compiled ahead of time; PKG-SCHEMAS-001 ships the same schema as HOT/schemas/checkpoint.schema.json, and a
// repository test keeps the two equal.
export const CHECKPOINT_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://cplane.local/schemas/checkpoint.schema.json',
  title: 'cplane ledger checkpoint: the chain head signed with the root key',
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'version', 'ledger_id', 'seq', 'hash', 'entry_id', 'time', 'key_id', 'signature'],
  properties: {
    kind: {
      description: 'domain separation: this signature is over a checkpoint, never a manifest',
      const: 'cplane-ledger-checkpoint',
    },
    version: {
      const: 1,
    },
    ledger_id: {
      description: "entry_hash of entry #1 (the ledger's identity)",
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
    },
    seq: {
      type: 'integer',
      minimum: 1,
      maximum: 9007199254740991,
    },
    hash: {
      description: 'entry_hash of the entry at seq',
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
    },
    entry_id: {
      type: 'string',
      pattern: '^LED-[a-f0-9]{8}$',
    },
    time: {
      description: 'when the checkpoint was signed (ISO-8601 UTC)',
      type: 'string',
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
    },
    key_id: {
      type: 'string',
      pattern: '^ed25519:[0-9a-f]{16}$',
    },
    signature: {
      description: 'base64 ed25519 signature over the RFC 8785 canonical JSON of every other field',
      type: 'string',
      pattern: '^[A-Za-z0-9+/]{86}==$',
    },
  },
};
