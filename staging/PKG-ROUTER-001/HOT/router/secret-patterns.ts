/**
 * Secrets a user may paste into a conversation, found by shape: replaced by `[REDACTED:<name>]` in every record
 * before it is stored (the upstream request is never altered). Each pattern runs in linear time (literal anchors,
 * no nested quantifiers, PEM blocks located without rescanning), and only over text holding one of its anchors.
 */
export interface SecretPattern {
  name: string;
  /** Substrings of which the text must hold one for the pattern to run at all. */
  anchors: readonly string[];
  /** The text with each match replaced by `mark()`. */
  scrub(text: string, mark: () => string): string;
}

function byRegex(name: string, anchors: readonly string[], regex: RegExp): SecretPattern {
  return {
    name,
    anchors,
    scrub: (text, mark) => {
      regex.lastIndex = 0;
      return text.replace(regex, mark);
    },
  };
}

const PEM_HEADER = /-----BEGIN (?:[A-Z0-9]+ ){0,2}PRIVATE KEY-----/g;
const PEM_FOOTER = /-----END (?:[A-Z0-9]+ ){0,2}PRIVATE KEY-----/g;
/**
 * Base64 lines and their headers. A backslash too: a conversation is recorded as JSON, where a key's line breaks
 * are `\n` escapes (`\\n` inside a tool call's arguments, JSON in a JSON string).
 */
const PEM_BODY = /^[A-Za-z0-9+/=\s:,.\\-]{0,16384}$/;

/**
 * A PEM private key block, found in linear time: every header and footer is located once, and a header is tried
 * only against the first footer after it when no other header comes between (so no text is scanned twice, however
 * many unterminated headers a hostile prompt holds).
 */
function scrubPem(text: string, mark: () => string): string {
  const headers = [...text.matchAll(PEM_HEADER)];
  if (headers.length === 0) return text;
  const footers = [...text.matchAll(PEM_FOOTER)];
  let out = '';
  let copied = 0;
  let f = 0;
  for (let h = 0; h < headers.length; h++) {
    const header = headers[h] as RegExpMatchArray;
    const start = header.index as number;
    if (start < copied) continue;
    const bodyStart = start + header[0].length;
    while (f < footers.length && ((footers[f] as RegExpMatchArray).index as number) < bodyStart) f++;
    const footer = footers[f];
    if (footer === undefined) break;
    const footerAt = footer.index as number;
    const next = headers[h + 1];
    if (next !== undefined && (next.index as number) < footerAt) continue;
    if (!PEM_BODY.test(text.slice(bodyStart, footerAt))) continue;
    out += text.slice(copied, start) + mark();
    copied = footerAt + footer[0].length;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Where a secret may start: the text's start, a character that is not a word character, or a JSON escape. A
 * conversation is recorded as JSON, where a key at the start of a line follows `\n` (a letter, so `\b` would not
 * see a boundary there). Written after each pattern's literal prefix, so the engine looks back only where the
 * prefix is found.
 */
const START = String.raw`(?:^|[^A-Za-z0-9_]|\\[bfnrt]|\\u[0-9A-Fa-f]{4})`;

/** A pattern that begins with `prefix` (a regex source) at a START. */
function atStart(prefix: string, rest: string): RegExp {
  return new RegExp(`${prefix}(?<=${START}${prefix})${rest}`, 'g');
}

export const BUILTIN_SECRET_PATTERNS: readonly SecretPattern[] = [
  { name: 'private_key_pem', anchors: ['PRIVATE KEY-----'], scrub: scrubPem },
  byRegex('anthropic_api_key', ['sk-ant-'], /sk-ant-[A-Za-z0-9_-]{32,}/g),
  byRegex('openai_api_key', ['sk-'], atStart('sk-', '(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}')),
  byRegex(
    'cplane_route_token',
    ['cpt1.'],
    atStart(String.raw`cpt1\.`, String.raw`[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{32,}`),
  ),
  byRegex('aws_access_key_id', ['AKIA', 'ASIA'], atStart('(?:AKIA|ASIA)', String.raw`[0-9A-Z]{16}\b`)),
  // Between the word and the token, whitespace as typed or as JSON escapes it.
  byRegex(
    'bearer_token',
    ['Bearer', 'bearer'],
    atStart('[Bb]earer', String.raw`(?:\s|\\[nrt])+[A-Za-z0-9._~+/-]{20,}=*`),
  ),
];

export const BUILTIN_SECRET_PATTERN_NAMES = BUILTIN_SECRET_PATTERNS.map((p) => p.name);

/** Replace each pattern's matches with its marker; counts per pattern name go into `counts`. */
export function scrubSecretPatterns(
  text: string,
  patterns: readonly SecretPattern[],
  counts: Record<string, number>,
): string {
  let out = text;
  for (const pattern of patterns) {
    if (!pattern.anchors.some((a) => out.includes(a))) continue;
    out = pattern.scrub(out, () => {
      counts[pattern.name] = (counts[pattern.name] ?? 0) + 1;
      return `[REDACTED:${pattern.name}]`;
    });
  }
  return out;
}

/** The patterns a root's `scrub` config puts in force (by name, in the built-in order). */
export function secretPatternsNamed(names: readonly string[]): SecretPattern[] {
  return BUILTIN_SECRET_PATTERNS.filter((p) => names.includes(p.name));
}
