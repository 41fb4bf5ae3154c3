// sigv4_sign_p50: one Bedrock call signed with SigV4 (SigV4Auth over @smithy/signature-v4 and node's crypto) for a
// 100 KB body, the p50 of many signings; its baseline is a bare SHA-256 of the same body in the same run (the part
// of a signature no signer can skip), so the ratio is what canonicalisation and the HMAC chain add.
import { createHash } from 'node:crypto';
import { SigV4Auth } from '../../../staging/PKG-PROVIDER-BEDROCK-001/HOT/providers/bedrock/sigv4.js';
import { defineSuite, medianOf, percentile, timeEach, timeEachAsync } from '../row.js';

export default defineSuite({
  name: 'clouds',
  async run({ quick, log }) {
    const clock = { now: () => Date.parse('2026-11-28T21:00:00Z') };
    const auth = new SigV4Auth(
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'tok' },
      'us-east-1',
      'bedrock',
      clock,
    );
    const text = 'x'.repeat(100 * 1024 - 200);
    const body = JSON.stringify({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 1024,
      messages: [{ role: 'user', content: text }],
    });
    const call = {
      url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body,
    };
    const iterations = quick ? 500 : 3000;
    const rounds = quick ? 3 : 5;
    for (let i = 0; i < 200; i += 1) await auth.sign(call);
    const signed: number[] = [];
    const hashed: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      signed.push(percentile(await timeEachAsync(iterations, async () => void (await auth.sign(call))), 50));
      hashed.push(
        percentile(
          timeEach(iterations, () => void createHash('sha256').update(body).digest('hex')),
          50,
        ),
      );
    }
    const value = medianOf(signed) * 1000;
    const baseline = medianOf(hashed) * 1000;
    log(
      `clouds: SigV4 of a ${body.length}-byte body ${value.toFixed(1)} µs p50, its SHA-256 alone ${baseline.toFixed(1)} µs`,
    );
    return [
      {
        name: 'sigv4_sign_p50',
        value: Math.round(value * 10) / 10,
        unit: 'µs p50 (one Bedrock InvokeModel call, 100 KB body)',
        baseline: Math.round(baseline * 10) / 10,
        ratio: value / baseline,
        target: '<= 50 µs',
        ok: value <= 50,
      },
    ];
  },
});
