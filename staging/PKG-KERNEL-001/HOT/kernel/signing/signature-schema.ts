// JSON Schema of signature.json. The kernel embeds it (it validates before PKG-SCHEMAS-001 is installed, and
// from any copy of its compiled code); PKG-SCHEMAS-001 ships the same schema as HOT/schemas/signature.schema.json, and a
// repository test keeps the two equal.
export const SIGNATURE_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://cplane.local/schemas/signature.schema.json',
  title: 'cplane package signature (signature.json at the archive root)',
  type: 'object',
  additionalProperties: false,
  required: ['algorithm', 'key_id', 'signature'],
  properties: {
    algorithm: {
      const: 'ed25519',
    },
    key_id: {
      type: 'string',
      pattern: '^ed25519:[0-9a-f]{16}$',
    },
    signature: {
      type: 'string',
      pattern: '^[A-Za-z0-9+/]{86}==$',
      description: 'base64 of the 64-byte ed25519 signature over canonicalJson(manifest)',
    },
  },
};
