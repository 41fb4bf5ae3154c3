/** Replace every occurrence of each secret (API keys) in `text`; short or empty secrets are ignored. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // Looked for first: most texts hold no secret, and a search reads a long prompt at about twice a split's speed.
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}
