import { createSign } from 'node:crypto';
import { CpError, show } from '#kernel/errors.js';
import type { Clock } from '#providers/clock.js';
import type { CallAuth } from '#providers/entry.js';
import { ProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { asObject, getString, parseJson } from '#providers/json.js';
import type { WireFetch } from '#providers/transport.js';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** A token is renewed this long before Google says it expires (a call must not start with one about to lapse). */
const REFRESH_MARGIN_MS = 5 * 60_000;
const TOKEN_TIMEOUT_MS = 10_000;
const MAX_TOKEN_REPLY_BYTES = 64 * 1024;
const MAX_TOKEN_LIFETIME_S = 86_400;

export interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id: string | null;
  token_uri: string;
  project_id: string | null;
}

/** A service-account key file's fields, checked; errors name the file, never its content. */
export function parseServiceAccount(providerId: string, where: string, text: string): ServiceAccount {
  const parsed = parseJson(text);
  const obj = parsed.ok ? asObject(parsed.value) : null;
  const email = getString(obj, 'client_email');
  const key = getString(obj, 'private_key');
  const tokenUri = getString(obj, 'token_uri') ?? GOOGLE_TOKEN_URI;
  if (
    obj === null ||
    obj.type !== 'service_account' ||
    email === null ||
    key === null ||
    !/^https?:\/\//.test(tokenUri)
  ) {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(providerId)}: ${where} is not a service-account key file`,
      {
        hint: 'create a key for the service account (IAM → Service accounts → Keys → JSON) and point options.service_account_file or $GOOGLE_APPLICATION_CREDENTIALS at it',
        details: { provider_id: providerId },
      },
    );
  }
  return {
    client_email: email,
    private_key: key,
    private_key_id: getString(obj, 'private_key_id'),
    token_uri: tokenUri,
    project_id: getString(obj, 'project_id'),
  };
}

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');

/** The signed JWT a service account presents for an access token (RFC 7523, RS256). */
export function signedAssertion(account: ServiceAccount, tokenUri: string, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000);
  const header = {
    alg: 'RS256',
    typ: 'JWT',
    ...(account.private_key_id === null ? {} : { kid: account.private_key_id }),
  };
  const claims = { iss: account.client_email, scope: CLOUD_PLATFORM_SCOPE, aud: tokenUri, iat, exp: iat + 3600 };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = createSign('RSA-SHA256').update(input).sign(account.private_key);
  return `${input}.${b64url(signature)}`;
}

interface Token {
  value: string;
  renewAt: number;
}

/**
 * OAuth2 access tokens for a service account: one exchange at its token URI, the token cached until shortly before it
 * expires and shared by concurrent calls; a 401 from the upstream drops it so the call is retried once with a new one.
 */
export class ServiceAccountAuth implements CallAuth {
  readonly #providerId: string;
  readonly #account: ServiceAccount;
  readonly #tokenUri: string;
  readonly #fetch: WireFetch;
  readonly #clock: Clock;
  #token: Token | null = null;
  #pending: Promise<Token> | null = null;

  constructor(providerId: string, account: ServiceAccount, tokenUri: string, fetch: WireFetch, clock: Clock) {
    this.#providerId = providerId;
    this.#account = account;
    this.#tokenUri = tokenUri;
    this.#fetch = fetch;
    this.#clock = clock;
  }

  async sign(): Promise<Record<string, string>> {
    const token = await this.#current();
    return { authorization: `Bearer ${token.value}` };
  }

  refused(): boolean {
    this.#token = null;
    return true;
  }

  secrets(): readonly string[] {
    return this.#token === null ? [this.#account.private_key] : [this.#account.private_key, this.#token.value];
  }

  async #current(): Promise<Token> {
    if (this.#token !== null && this.#clock.now() < this.#token.renewAt) return this.#token;
    this.#pending ??= this.#exchange().finally(() => {
      this.#pending = null;
    });
    this.#token = await this.#pending;
    return this.#token;
  }

  async #exchange(): Promise<Token> {
    const started = this.#clock.now();
    const form = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: signedAssertion(this.#account, this.#tokenUri, started),
    }).toString();
    let status: number;
    let text: string;
    try {
      const reply = await this.#fetch(this.#tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
        redirect: 'error',
        decode: true,
      });
      status = reply.status;
      text = reply.body === null ? '' : await readText(reply.body, MAX_TOKEN_REPLY_BYTES);
    } catch (error) {
      throw this.#failure('network', null, `the token endpoint is unreachable (${(error as Error).message})`);
    }
    const parsed = parseJson(text);
    const body = parsed.ok ? asObject(parsed.value) : null;
    const token = getString(body, 'access_token');
    // A token endpoint's lifetime is trusted only within a day: a huge one would pin a token until a 401, a
    // negative or absent one would make every call exchange a new token.
    const lifetime = body?.expires_in;
    const expiresIn =
      typeof lifetime === 'number' && lifetime > 0 && lifetime <= MAX_TOKEN_LIFETIME_S ? lifetime : 3600;
    if (status === 200 && token !== null && /^[\x21-\x7e]{1,4096}$/.test(token))
      return { value: token, renewAt: started + Math.max(0, expiresIn * 1000 - REFRESH_MARGIN_MS) };
    // `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`: the key was revoked or is wrong.
    const said = [getString(body, 'error'), getString(body, 'error_description')].filter((s) => s !== null).join(': ');
    const kind = status >= 500 ? 'server_error' : status === 429 ? 'rate_limited' : 'auth';
    throw this.#failure(
      kind,
      status,
      `the token endpoint answered HTTP ${status}${said === '' ? '' : ` (${said.slice(0, 200)})`}`,
    );
  }

  #failure(
    kind: 'auth' | 'network' | 'server_error' | 'rate_limited',
    status: number | null,
    why: string,
  ): ProviderError {
    return new ProviderError({
      kind,
      providerId: this.#providerId,
      status,
      providerErrorType: 'oauth_token',
      message: `provider ${show(this.#providerId)} could not get an access token for ${show(this.#account.client_email)}: ${why}`,
    });
  }
}
