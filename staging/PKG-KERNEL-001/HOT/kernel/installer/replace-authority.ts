import { CpError, show } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import type { OwnershipTransfer } from '../registry/ownership.js';
import type { Receipt } from '../registry/receipt.js';
import type { TrustedKey } from '../signing/index.js';

/** The key a package was verified against, or null when nothing vouches for it (unsigned, untrusted, --dev). */
function publisherOf(signature: Receipt['signature']): string | null {
  return signature.status === 'valid' ? signature.key_id : null;
}

/**
 * `replaces` is a claim, not a permission: taking over another package's files needs the same publisher key
 * as that package (or a trust-store entry for the new key that names it in `may_replace`), and never reaches
 * down into a lower layer. A --dev waiver leaves the new package with no publisher, so it can only take over
 * packages that have none either.
 */
export function checkReplaceAuthority(
  manifest: Manifest,
  signature: Receipt['signature'],
  transfers: readonly OwnershipTransfer[],
  receipts: ReadonlyMap<string, Receipt>,
  trusted: readonly TrustedKey[],
): void {
  const id = manifest.package_id;
  const publisher = publisherOf(signature);
  for (const ownerId of new Set(transfers.map((t) => t.from_package))) {
    const owner = receipts.get(ownerId);
    const example = transfers.find((t) => t.from_package === ownerId)?.path ?? '';
    if (!owner) {
      throw new CpError(
        'ERR_REPLACE_UNAUTHORIZED',
        `${id} would take over ${show(example)} from ${show(ownerId)}, which has no receipt`,
        {
          hint: 'the ownership registry names a package that is not installed; run gate-check and repair the root first',
          details: { package_id: id, owner: ownerId, path: example },
        },
      );
    }
    if (owner.layer < manifest.layer) {
      throw new CpError(
        'ERR_REPLACE_LOWER_LAYER',
        `${id} (layer ${manifest.layer}) would take over ${show(example)} from ${ownerId} (layer ${owner.layer}); a package never replaces files of a lower layer`,
        {
          hint: `ship the change as a new version of ${ownerId} instead`,
          details: { package_id: id, layer: manifest.layer, owner: ownerId, owner_layer: owner.layer, path: example },
        },
      );
    }
    const ownerPublisher = publisherOf(owner.signature);
    if (ownerPublisher === publisher) continue;
    const allowed =
      publisher !== null && trusted.some((k) => k.key_id === publisher && (k.may_replace ?? []).includes(ownerId));
    if (allowed) continue;
    throw new CpError(
      'ERR_REPLACE_UNAUTHORIZED',
      `${id} (${publisher === null ? 'no verified publisher' : `signed by ${publisher}`}) would take over ${show(example)} from ${ownerId} (${ownerPublisher === null ? 'no verified publisher' : `signed by ${ownerPublisher}`})`,
      {
        hint:
          publisher === null
            ? "--dev waives signatures, not ownership: a package with no verified publisher cannot take over a signed package's files"
            : `only ${ownerId}'s own publisher key may replace it, unless the trust store lists ${ownerId} in ${publisher}'s "may_replace"`,
        details: { package_id: id, publisher, owner: ownerId, owner_publisher: ownerPublisher, path: example },
      },
    );
  }
}

/**
 * An upgrade rewrites every file of the installed version, so it needs the same authority as `replaces`: the
 * installed version's publisher key, or a key whose `may_replace` names the package.
 */
export function checkUpgradeAuthority(
  previous: Receipt,
  signature: Receipt['signature'],
  trusted: readonly TrustedKey[],
): void {
  const id = previous.package_id;
  const publisher = publisherOf(signature);
  const installedBy = publisherOf(previous.signature);
  if (installedBy === publisher) return;
  if (publisher !== null && trusted.some((k) => k.key_id === publisher && (k.may_replace ?? []).includes(id))) return;
  throw new CpError(
    'ERR_REPLACE_UNAUTHORIZED',
    `the new version of ${id} (${publisher === null ? 'no verified publisher' : `signed by ${publisher}`}) would replace ${previous.version} (${installedBy === null ? 'no verified publisher' : `signed by ${installedBy}`})`,
    {
      hint:
        publisher === null
          ? '--dev waives signatures, not ownership: an unsigned version cannot replace a signed one (uninstall it first, on purpose)'
          : `only ${id}'s own publisher key may upgrade it, unless the trust store lists ${id} in ${publisher}'s "may_replace"`,
      details: { package_id: id, publisher, owner_publisher: installedBy },
    },
  );
}
