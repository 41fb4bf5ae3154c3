// JSON Schema of HOT/registries/trust.json. The kernel embeds it (it validates before PKG-SCHEMAS-001 is installed, and
// from any copy of its compiled code); PKG-SCHEMAS-001 ships the same schema as HOT/schemas/trust.schema.json, and a
// repository test keeps the two equal.
export const TRUST_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://cplane.local/schemas/trust.schema.json',
  title: 'cplane trust store (ROOT/HOT/registries/trust.json)',
  type: 'object',
  additionalProperties: false,
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key_id', 'public_key_pem', 'added_at'],
        properties: {
          key_id: {
            type: 'string',
            pattern: '^ed25519:[0-9a-f]{16}$',
          },
          public_key_pem: {
            type: 'string',
            pattern: '^-----BEGIN PUBLIC KEY-----\\n',
            maxLength: 4096,
          },
          added_at: {
            type: 'string',
            pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
          },
          may_replace: {
            type: 'array',
            maxItems: 1024,
            uniqueItems: true,
            items: {
              type: 'string',
              pattern: '^PKG-[A-Z0-9-]+-\\d{3}$',
            },
          },
          role: {
            description:
              'what the key may verify: package signatures (the default when absent) or ledger checkpoints only',
            type: 'string',
            enum: ['package', 'checkpoint'],
          },
        },
      },
    },
  },
};
