// SHA-256 and HMAC-SHA256 for @smithy/signature-v4's `sha256` option, straight over node:crypto (@smithy/core's Hash
// casts every key and input through a new Buffer view first). The signer finds its cached signing key under
// HMAC(secret access key, access key id), recomputed on every call; for one credential pair that value never
// changes, so it is taken once and that one HMAC is answered from memory.
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { AwsCredentials } from './credentials.js';

type Source = string | ArrayBuffer | ArrayBufferView;

/** The shape @smithy/signature-v4 constructs: no secret for a hash, a secret for an HMAC. */
export interface Sha256 {
  update(data: Source): void;
  digest(): Promise<Uint8Array>;
  reset(): void;
}
export type Sha256Constructor = new (secret?: Source) => Sha256;

const bytes = (data: Source): string | Uint8Array => {
  if (typeof data === 'string' || data instanceof Uint8Array) return data;
  return ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : new Uint8Array(data);
};

const open = (secret: Source | undefined): Hash | Hmac =>
  secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));

const sameBytes = (data: Source, id: Buffer): boolean => {
  const b = bytes(data);
  return typeof b === 'string' ? b === id.toString('utf8') : id.equals(b);
};

/** A SHA-256 constructor for signing with `credentials`, its key-cache HMAC taken once. */
export function sha256For(credentials: AwsCredentials): Sha256Constructor {
  const { secretAccessKey } = credentials;
  const id = Buffer.from(credentials.accessKeyId, 'utf8');
  const known = createHmac('sha256', secretAccessKey).update(id).digest();
  return class NodeSha256 implements Sha256 {
    readonly #secret: Source | undefined;
    // null while this is the HMAC under the secret key and has seen nothing but the access key id (#sawId).
    #hash: Hash | Hmac | null = null;
    #sawId = false;

    constructor(secret?: Source) {
      this.#secret = secret;
      this.reset();
    }

    update(data: Source): void {
      if (this.#hash === null) {
        if (!this.#sawId && sameBytes(data, id)) {
          this.#sawId = true;
          return;
        }
        this.#hash = open(this.#secret);
        if (this.#sawId) this.#hash.update(id);
      }
      this.#hash.update(bytes(data));
    }

    digest(): Promise<Uint8Array> {
      if (this.#hash === null) return Promise.resolve(this.#sawId ? Buffer.from(known) : open(this.#secret).digest());
      return Promise.resolve(this.#hash.digest());
    }

    reset(): void {
      this.#sawId = false;
      this.#hash = this.#secret === secretAccessKey ? null : open(this.#secret);
    }
  };
}
