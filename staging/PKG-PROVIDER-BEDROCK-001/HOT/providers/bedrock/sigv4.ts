import { hash } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { CallAuth, OutgoingCall } from '#providers/entry.js';
import type { Clock } from '#providers/clock.js';
import type { AwsCredentials } from './credentials.js';
import { sha256For } from './sha256.js';

const PAYLOAD_HASH = 'x-amz-content-sha256';
const UNSIGNED = new Set([PAYLOAD_HASH]);

/**
 * A call signed with AWS Signature Version 4 (@smithy/signature-v4 over node's crypto, sha256.ts): the headers it
 * was given and `host` signed, `x-amz-date` (and `x-amz-security-token` for temporary credentials) added. No
 * `x-amz-content-sha256` is sent (only S3 wants it).
 */
export class SigV4Auth implements CallAuth {
  readonly #signer: SignatureV4;
  readonly #credentials: AwsCredentials;
  readonly #clock: Clock;

  constructor(credentials: AwsCredentials, region: string, service: string, clock: Clock) {
    this.#credentials = credentials;
    this.#clock = clock;
    this.#signer = new SignatureV4({
      credentials,
      region,
      service,
      sha256: sha256For(credentials),
      applyChecksum: false,
    });
  }

  async sign(call: OutgoingCall): Promise<Record<string, string>> {
    const url = new URL(call.url);
    const query: Record<string, string> = {};
    for (const [key, value] of url.searchParams) query[key] = value;
    const signed = await this.#signer.sign(
      {
        method: call.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === '' ? {} : { port: Number(url.port) }),
        path: url.pathname,
        query,
        // The payload hash taken from the body text in one call (the signer would first copy the body into a new
        // buffer, then hash it). The signer reads a given x-amz-content-sha256 as the canonical request's payload
        // hash; unsignable, it is neither signed nor sent (only S3 wants it), so what is signed is unchanged.
        headers: {
          ...call.headers,
          host: url.host,
          ...(call.body === null ? {} : { [PAYLOAD_HASH]: hash('sha256', call.body) }),
        },
      },
      { signingDate: new Date(this.#clock.now()), unsignableHeaders: UNSIGNED },
    );
    const added: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers))
      if (call.headers[name] === undefined && name !== PAYLOAD_HASH) added[name] = value;
    return added;
  }

  secrets(): readonly string[] {
    const { secretAccessKey, sessionToken } = this.#credentials;
    return sessionToken === undefined ? [secretAccessKey] : [secretAccessKey, sessionToken];
  }
}
