// JSON Schema of manifest.json. The kernel embeds it (it validates before PKG-SCHEMAS-001 is installed, and
// from any copy of its compiled code); PKG-SCHEMAS-001 ships the same schema as HOT/schemas/manifest.schema.json, and a
// repository test keeps the two equal.
export const MANIFEST_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://cplane.local/schemas/manifest.schema.json',
  title: 'cplane package manifest (manifest.json at the archive root)',
  type: 'object',
  additionalProperties: false,
  required: [
    'package_id',
    'version',
    'schema_version',
    'title',
    'description',
    'layer',
    'plane_id',
    'dependencies',
    'replaces',
    'assets',
  ],
  properties: {
    package_id: {
      $ref: '#/definitions/package_id',
    },
    version: {
      type: 'string',
      minLength: 5,
      maxLength: 64,
      pattern: '^\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?$',
    },
    schema_version: {
      type: 'string',
      pattern: '^1(\\.\\d+)?$',
      description: 'manifest format version; this kernel reads 1.x',
    },
    title: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
    },
    description: {
      type: 'string',
      maxLength: 4000,
    },
    layer: {
      type: 'integer',
      enum: [0, 1, 2, 3],
    },
    plane_id: {
      type: 'string',
      pattern: '^[a-z][a-z0-9_-]{0,31}$',
    },
    dependencies: {
      type: 'array',
      maxItems: 256,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['package_id', 'version'],
        properties: {
          package_id: {
            $ref: '#/definitions/package_id',
          },
          version: {
            type: 'string',
            minLength: 1,
            maxLength: 200,
            description: 'a semver range',
          },
        },
      },
    },
    replaces: {
      type: 'array',
      maxItems: 256,
      uniqueItems: true,
      items: {
        $ref: '#/definitions/package_id',
      },
    },
    platform: {
      type: 'object',
      additionalProperties: false,
      properties: {
        os: {
          type: 'string',
          pattern: '^[a-z0-9_]{1,32}$',
          description: 'process.platform',
        },
        cpu: {
          type: 'string',
          pattern: '^[a-z0-9_]{1,32}$',
          description: 'process.arch',
        },
        node_abi: {
          type: 'string',
          pattern: '^[0-9]{1,4}$',
          description: 'process.versions.modules',
        },
      },
    },
    assets: {
      type: 'array',
      maxItems: 100000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['path', 'sha256', 'size', 'classification'],
        properties: {
          path: {
            type: 'string',
            minLength: 5,
            maxLength: 1024,
            pattern: '^HOT/[^\\\\\\u0000]+$',
          },
          sha256: {
            type: 'string',
            pattern: '^sha256:[0-9a-f]{64}$',
          },
          size: {
            type: 'integer',
            minimum: 0,
            maximum: 9007199254740991,
          },
          classification: {
            enum: ['kernel', 'script', 'schema', 'config', 'test', 'doc', 'registry', 'runtime'],
          },
        },
      },
    },
  },
  definitions: {
    package_id: {
      type: 'string',
      maxLength: 64,
      pattern: '^PKG-[A-Z0-9-]+-\\d{3}$',
    },
  },
};
