// JSON Schema of bootstrap.json. The kernel embeds it (it validates before PKG-SCHEMAS-001 is installed, and
// from any copy of its compiled code); PKG-SCHEMAS-001 ships the same schema as HOT/schemas/bootstrap.schema.json, and a
// repository test keeps the two equal.
export const BOOTSTRAP_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://cplane.local/schemas/bootstrap.schema.json',
  title: 'cplane bootstrap plan (bootstrap.json at the top of CP_BOOTSTRAP)',
  type: 'object',
  additionalProperties: false,
  required: ['schema_version', 'bootstrap_version', 'packages', 'install_order', 'genesis'],
  properties: {
    schema_version: {
      type: 'string',
      pattern: '^1(\\.\\d+)?$',
    },
    bootstrap_version: {
      type: 'string',
      pattern: '^\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?$',
    },
    packages: {
      type: 'array',
      maxItems: 1000,
      description: 'every package in CP_BOOTSTRAP, in install order',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['package_id', 'version', 'file', 'integrity', 'size', 'layer', 'dependencies'],
        properties: {
          package_id: {
            $ref: '#/definitions/package_id',
          },
          version: {
            type: 'string',
            minLength: 5,
            maxLength: 64,
          },
          file: {
            type: 'string',
            pattern: '^packages/PKG-[A-Z0-9-]+-\\d{3}-[0-9A-Za-z.+-]+\\.tar\\.gz$',
          },
          integrity: {
            description: 'SRI of the archive file: sha512, optionally followed by sha256 (npm lockfile style)',
            type: 'string',
            pattern: '^sha512-[A-Za-z0-9+/]{86}==( sha256-[A-Za-z0-9+/]{43}=)?$',
          },
          size: {
            type: 'integer',
            minimum: 1,
          },
          layer: {
            type: 'integer',
            enum: [0, 1, 2, 3],
          },
          dependencies: {
            type: 'array',
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
                },
              },
            },
          },
        },
      },
    },
    install_order: {
      type: 'array',
      uniqueItems: true,
      items: {
        $ref: '#/definitions/package_id',
      },
    },
    genesis: {
      type: 'object',
      description:
        "the layer-0 kernel's installer, shipped unpacked under genesis/ so genesis can run it: each file is a layer-0 package's asset, pinned here by digest",
      additionalProperties: false,
      required: ['entry', 'files'],
      properties: {
        entry: {
          $ref: '#/definitions/genesis_path',
        },
        files: {
          type: 'array',
          minItems: 1,
          maxItems: 5000,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'package_id', 'sha256', 'size'],
            properties: {
              path: {
                $ref: '#/definitions/genesis_path',
              },
              package_id: {
                $ref: '#/definitions/package_id',
              },
              sha256: {
                type: 'string',
                pattern: '^sha256:[0-9a-f]{64}$',
              },
              size: {
                type: 'integer',
                minimum: 0,
              },
            },
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
    genesis_path: {
      type: 'string',
      maxLength: 1024,
      pattern: '^HOT/',
    },
  },
};
