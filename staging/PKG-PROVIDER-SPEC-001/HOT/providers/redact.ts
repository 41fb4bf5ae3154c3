/** Replace every occurrence of each secret (API keys) in `text`; short or empty secrets are ignored. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}
