import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { CpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { defaultConfigPath, effectiveConfig } from '#kernel/config/effective.js';
import { isPlainObject } from '#kernel/config/merge.js';
import { validateSection } from '#kernel/config/section-schema.js';
import type { AuthKeys } from './auth.js';
import type { RouterConfig } from './config.js';

/**
 * Secrets come from the environment or from a file the config names, never from a config value. A relative
 * file is taken from the root; its content is trimmed and never shown in an error.
 */
function readSecretFile(root: string, file: string, what: string): string {
  const path = isAbsolute(file) ? file : join(root, file);
  return readTextBounded(path, { maxBytes: READ_LIMITS.key, what }).trim();
}

/** The route-token signing keys: `auth.secret_file`, else `$<auth.secret_env>`, else $CPLANE_AUTH_SECRET. */
export function authKeysFor(root: string | null, auth: RouterConfig['auth'], env: NodeJS.ProcessEnv): AuthKeys {
  if (auth?.secret_file !== undefined && root !== null) {
    const secret = readSecretFile(root, auth.secret_file, 'the auth secret file');
    return secret.length > 0 ? { default: secret } : {};
  }
  const value = env[auth?.secret_env ?? 'CPLANE_AUTH_SECRET'];
  return value ? { default: value } : {};
}

export interface ProviderSettings {
  /** What the provider's constructor takes: `{base_url?, api_key?}`; absent fields fall back to its own variables. */
  config: { base_url?: string; api_key?: string; options?: Record<string, unknown> };
  /** The models the operator lists for it, or null when none are listed. */
  models: string[] | null;
}

/** One provider's settings from the root's effective `providers` config, its key resolved from env or file. */
export function providerSettings(root: string, providerId: string, env: NodeJS.ProcessEnv): ProviderSettings {
  if (!existsSync(defaultConfigPath(root, 'providers'))) return { config: {}, models: null };
  const section = effectiveConfig(root, 'providers');
  const verdict = validateSection(root, 'providers', section);
  if (!verdict.ok) {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `the providers config is invalid at ${verdict.pointer}: ${verdict.message}`,
      {
        hint: 'fix it with `cplane config set providers.…` (schema providers-config.schema.json)',
        details: { pointer: verdict.pointer },
      },
    );
  }
  const entry =
    isPlainObject(section) && isPlainObject(section[providerId])
      ? (section[providerId] as Record<string, unknown>)
      : {};
  const config: ProviderSettings['config'] = {};
  if (typeof entry.base_url === 'string') config.base_url = entry.base_url;
  if (isPlainObject(entry.options)) config.options = entry.options as Record<string, unknown>;
  if (typeof entry.api_key_file === 'string') {
    config.api_key = readSecretFile(root, entry.api_key_file, `the ${providerId} API key file`);
  } else if (typeof entry.api_key_env === 'string') {
    const value = env[entry.api_key_env];
    if (!value) {
      throw new CpError(
        'ERR_PROVIDER_CONFIG',
        `provider ${show(providerId)} has no API key: $${entry.api_key_env} (providers.${providerId}.api_key_env) is not set`,
        {
          hint: `export ${entry.api_key_env}=…`,
          details: { provider_id: providerId, env_var: entry.api_key_env },
        },
      );
    }
    config.api_key = value;
  }
  return { config, models: Array.isArray(entry.models) ? (entry.models as string[]) : null };
}
