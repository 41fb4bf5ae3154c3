import { canonicalJson, sha256Digest } from '#kernel/canonical.js';
import type { Manifest } from '#kernel/manifest/index.js';
import { checkSignature, readTrustStore, type PackageSignature } from '#kernel/signing/index.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { waiverRecorded } from '../provenance.js';
import { installedJson, installedText, receiptsOf } from '../root-state.js';

/**
 * G5: every installed package's signature verifies against the root's trust store, re-checked from the
 * manifest kept at install time (which must still hash to the receipt's manifest_digest). A --dev waiver is
 * a WARN that lists the package, and only when the install record in the hash-chained ledger carries it.
 */
export default defineGate({
  id: 'G5',
  name: 'SIGNATURES',
  describe: 'signatures verify against the trust store; dev-mode waivers are reported as WARN',
  run(ctx) {
    const trusted = readTrustStore(ctx.root);
    const errors: Finding[] = [];
    const waivers: Finding[] = [];
    let valid = 0;
    for (const receipt of receiptsOf(ctx).values()) {
      // Read and parsed once per run, shared with G3.
      const manifest = installedJson(ctx, receipt.package_id, 'manifest.json') as Manifest | undefined;
      // Canonicalised once: the digest check and the signature check cover the same bytes.
      const canonical = manifest === undefined ? null : canonicalJson(manifest);
      if (!manifest || canonical === null || sha256Digest(canonical) !== receipt.manifest_digest) {
        errors.push({
          code: 'MANIFEST_TAMPERED',
          message: `${receipt.package_id}: the installed manifest no longer matches the receipt's manifest_digest`,
          path: `HOT/installed/${receipt.package_id}/manifest.json`,
        });
        continue;
      }
      const signatureText = installedText(ctx, receipt.package_id, 'signature.json');
      const signature = signatureText === null ? null : (JSON.parse(signatureText) as PackageSignature);
      const { status, key_id: keyId } = checkSignature({ manifest, signature, canonical }, trusted);
      if (status === 'valid') valid += 1;
      else if (receipt.signature.dev_waiver && status !== 'invalid') {
        if (waiverRecorded(ctx, receipt))
          waivers.push({ code: 'DEV_WAIVER', message: `${receipt.package_id} was installed with --dev (${status})` });
        else
          errors.push({
            code: 'WAIVER_NOT_RECORDED',
            message: `${receipt.package_id}: the receipt claims a --dev waiver (${status}) that its install record in the ledger does not carry`,
          });
      } else {
        errors.push({
          code: `SIGNATURE_${status.toUpperCase() as Uppercase<typeof status>}`,
          message: `${receipt.package_id}: signature ${status}${keyId ? ` (key ${keyId})` : ''}`,
        });
      }
    }
    return verdict(
      this,
      errors,
      `${valid} package signatures verify against ${trusted.length} trusted key${trusted.length === 1 ? '' : 's'}`,
      waivers,
    );
  },
});
