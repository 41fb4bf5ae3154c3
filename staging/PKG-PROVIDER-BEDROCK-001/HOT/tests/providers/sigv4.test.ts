// Our SigV4 signing (SigV4Auth: the call's URL, headers and body handed to @smithy/signature-v4) checked against
// AWS's published Signature Version 4 test suite (aws-sig-v4-test-suite, 2015-08-30, AKIDEXAMPLE, region
// us-east-1, service "service"), as carried by smithy-lang/smithy-typescript
// packages/signature-v4/src/suite.fixture.ts: get-vanilla, post-vanilla, post-x-www-form-urlencoded,
// post-sts-header-before, get-vanilla-query-order-key-case. The signer's hash (sha256.ts) is checked against node's
// crypto, and signatures with other credentials against @smithy/signature-v4 hashing with @smithy/core's own Hash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { sha256For } from '../../providers/bedrock/sha256.js';
import { SigV4Auth } from '../../providers/bedrock/sigv4.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const STS_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';
const AT = fixedClock(Date.parse('2015-08-30T12:36:00Z'));
const SCOPE = 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';

const VECTORS: {
  name: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body: string | null;
  token?: string;
  authorization: string;
}[] = [
  {
    name: 'get-vanilla',
    method: 'GET',
    url: 'https://example.amazonaws.com/',
    headers: {},
    body: null,
    authorization: `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31`,
  },
  {
    name: 'post-vanilla',
    method: 'POST',
    url: 'https://example.amazonaws.com/',
    headers: {},
    body: null,
    authorization: `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`,
  },
  {
    name: 'post-x-www-form-urlencoded',
    method: 'POST',
    url: 'https://example.amazonaws.com/',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'Param1=value1',
    authorization: `${SCOPE}, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a`,
  },
  {
    name: 'get-vanilla-query-order-key-case',
    method: 'GET',
    url: 'https://example.amazonaws.com/?Param2=value2&Param1=value1',
    headers: {},
    body: null,
    authorization: `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500`,
  },
  {
    name: 'post-sts-header-before',
    method: 'POST',
    url: 'https://example.amazonaws.com/',
    headers: {},
    body: null,
    token: STS_TOKEN,
    authorization: `${SCOPE}, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead`,
  },
];

for (const v of VECTORS) {
  test(`sigv4: AWS test suite ${v.name}`, async () => {
    const credentials = v.token === undefined ? CREDENTIALS : { ...CREDENTIALS, sessionToken: v.token };
    const auth = new SigV4Auth(credentials, 'us-east-1', 'service', AT);
    const added = await auth.sign({ url: v.url, method: v.method, headers: v.headers, body: v.body });
    assert.equal(added.authorization, v.authorization);
    assert.equal(added['x-amz-date'], '20150830T123600Z');
    assert.equal(added.host, 'example.amazonaws.com');
    assert.equal(added['x-amz-content-sha256'], undefined, 'only S3 wants a payload hash header');
    if (v.token !== undefined) assert.equal(added['x-amz-security-token'], v.token);
  });
}

test('sigv4: a changed body or time changes the signature; the secrets to scrub are the secret key and token', async () => {
  const auth = new SigV4Auth({ ...CREDENTIALS, sessionToken: 'tok-1' }, 'us-east-1', 'bedrock', AT);
  const call = {
    url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke',
    method: 'POST' as const,
    headers: { 'content-type': 'application/json' },
  };
  const a = await auth.sign({ ...call, body: '{"a":1}' });
  const b = await auth.sign({ ...call, body: '{"a":2}' });
  assert.notEqual(a.authorization, b.authorization);
  assert.deepEqual(auth.secrets(), [CREDENTIALS.secretAccessKey, 'tok-1']);
});

test('sigv4: the signer hash gives node crypto SHA-256 and HMAC-SHA256, the remembered key-cache HMAC only for its pair', async () => {
  const Sha = sha256For(CREDENTIALS);
  const run = async (secret: string | Uint8Array | undefined, ...parts: (string | Uint8Array)[]) => {
    const h = new Sha(secret);
    for (const p of parts) h.update(typeof p === 'string' ? Buffer.from(p, 'utf8') : p);
    return Buffer.from(await h.digest()).toString('hex');
  };
  const hmac = (key: string | Uint8Array, data: string) => createHmac('sha256', key).update(data).digest('hex');
  const { accessKeyId: id, secretAccessKey: secret } = CREDENTIALS;
  assert.equal(await run(secret, id), hmac(secret, id));
  assert.equal(await run(secret, id, '/more'), hmac(secret, `${id}/more`));
  assert.equal(await run(secret, 'AKIDOTHER'), hmac(secret, 'AKIDOTHER'));
  assert.equal(await run(secret), hmac(secret, ''));
  assert.equal(await run('another-secret', id), hmac('another-secret', id));
  assert.equal(await run(Buffer.from(secret), id), hmac(secret, id));
  assert.equal(await run(undefined, 'abc'), createHash('sha256').update('abc').digest('hex'));
  const reused = new Sha(secret);
  reused.update(Buffer.from(id));
  await reused.digest();
  reused.reset();
  reused.update(Buffer.from('other'));
  assert.equal(Buffer.from(await reused.digest()).toString('hex'), hmac(secret, 'other'));
});

test('sigv4: signatures with other credentials, interleaved, match @smithy/core hashing them itself', async () => {
  const pairs = [
    { accessKeyId: 'AKIDEXAMPLE2', secretAccessKey: 'second/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'tok-2' },
    CREDENTIALS,
    { accessKeyId: 'AKIDEXAMPLE3', secretAccessKey: 'third/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  ];
  const call = {
    url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
    method: 'POST' as const,
    headers: { 'content-type': 'application/json' },
    body: '{"messages":[{"role":"user","content":"hi"}]}',
  };
  for (const credentials of [...pairs, ...pairs]) {
    const ours = await new SigV4Auth(credentials, 'us-east-1', 'bedrock', AT).sign(call);
    const url = new URL(call.url);
    const reference = await new SignatureV4({
      credentials,
      region: 'us-east-1',
      service: 'bedrock',
      sha256: Hash.bind(null, 'sha256'),
      applyChecksum: false,
    }).sign(
      {
        method: call.method,
        protocol: url.protocol,
        hostname: url.hostname,
        path: url.pathname,
        query: {},
        headers: { ...call.headers, host: url.host },
        body: call.body,
      },
      { signingDate: new Date(AT.now()) },
    );
    assert.equal(ours.authorization, reference.headers.authorization, credentials.accessKeyId);
  }
});
