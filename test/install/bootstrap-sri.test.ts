// The CP_BOOTSTRAP entry checks archives with node:crypto (it runs before ssri is installed); it must agree with
// the kernel's ssri on every SRI the build writes, and refuse what it cannot check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { pinnedSha512, sri512 } from '../../bootstrap/entry/sri.js';
import { integrityOf } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/integrity.js';
import { parseIntegrity } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/sri.js';

const SAMPLES = [Buffer.alloc(0), Buffer.from('a'), Buffer.alloc(70_000, 0xab), Buffer.from([0, 255, 1, 254])];

test('the entry computes the SRI ssri writes, and pins the same sha512 from it', () => {
  for (const data of SAMPLES) {
    const sri = integrityOf(data);
    assert.equal(sri512(data), sri);
    assert.equal(pinnedSha512(sri, 'x'), sri);
    const both = `${sri} sha256-${createHash('sha256').update(data).digest('base64')}`;
    assert.equal(parseIntegrity(both, 'x'), both);
    assert.equal(pinnedSha512(both, 'x'), sri);
  }
});

test('the entry refuses a pin it cannot check (an old sha256:<hex> CP_BOOTSTRAP, sha256 alone, garbage)', () => {
  const data = Buffer.from('archive');
  for (const pin of [
    `sha256:${createHash('sha256').update(data).digest('hex')}`,
    `sha256-${createHash('sha256').update(data).digest('base64')}`,
    `${integrityOf(data)} md5-${createHash('md5').update(data).digest('base64')}`,
    'sha512-',
  ]) {
    assert.throws(
      () => pinnedSha512(pin, 'PKG-X-001'),
      (e: Error & { code?: string; hint?: string }) =>
        e.code === 'ERR_BOOTSTRAP_INVALID' && e.message.includes('PKG-X-001') && /cplane build/.test(e.hint ?? ''),
      pin,
    );
    assert.throws(() => parseIntegrity(pin, 'x'), /ERR_INTEGRITY|integrity/, pin);
  }
});
