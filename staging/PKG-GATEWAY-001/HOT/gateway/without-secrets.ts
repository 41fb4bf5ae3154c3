import { redact } from '#providers/redact.js';

/**
 * Upstream bytes as the client may see them: an upstream (or a proxy before it) that reflects the request's
 * headers would otherwise hand the client the gateway's own provider key. The keys are replaced as the records
 * replace them; bytes without one are passed on untouched. A key split across two stream events is beyond a
 * per-event check; the record, scrubbed whole, still never holds it.
 */
export function withoutSecrets<T extends string | Buffer>(upstream: T, secrets: readonly string[]): T {
  // Checked on the bytes as they are: most replies hold no key, and a Buffer is decoded only when one does.
  if (!secrets.some((secret) => secret.length >= 4 && upstream.includes(secret))) return upstream;
  const text = redact(typeof upstream === 'string' ? upstream : upstream.toString('utf8'), secrets);
  return (typeof upstream === 'string' ? text : Buffer.from(text, 'utf8')) as T;
}
