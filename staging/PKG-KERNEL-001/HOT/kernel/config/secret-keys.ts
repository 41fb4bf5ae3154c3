import { isPlainObject } from './merge.js';

/**
 * Secrets (upstream API keys, the auth secret) never live in config values: config names where they come
 * from (`*_env`: an environment variable, `*_file`: a file). A key whose last word is a secret's is refused.
 */
const SECRET_NAME =
  /(^|[_-])(api[_-]?key|secret|password|passwd|token|private[_-]?key|credentials?|bearer|authorization)$/i;
const WHERE_IT_LIVES = /[_-](env|file)$/i;
/**
 * Values holding something shaped like a provider key or a cplane route token, wherever they are put and whatever
 * surrounds it (`Bearer sk-…`, `https://h/?key=sk-…`); "sk-" inside a word (`task-…`) is not one.
 */
const SECRET_VALUE = /(^|[^A-Za-z0-9_-])(sk-[A-Za-z0-9_-]{8,}|cpt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/;

export function isSecretName(segment: string): boolean {
  return SECRET_NAME.test(segment) && !WHERE_IT_LIVES.test(segment);
}

/** The first key path (of `path` and every key under `value`) that names a secret, or a secret-shaped value's path. */
export function secretPath(path: readonly string[], value: unknown): string[] | null {
  const named = path.findIndex(isSecretName);
  if (named >= 0) return path.slice(0, named + 1);
  if (typeof value === 'string' && SECRET_VALUE.test(value)) return [...path];
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = secretPath(path, item);
      if (found) return found;
    }
  }
  if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      const found = secretPath([...path, k], v);
      if (found) return found;
    }
  }
  return null;
}
