import { CpError, show } from '../../kernel/errors.js';
import { rootNoteSigner } from '../../kernel/ledger/merkle/ledger-proofs.js';
import type { NoteSigner } from '../../kernel/ledger/merkle/note.js';
import { readTrustedRootKey, rootKeyPath } from '../../kernel/signing/index.js';

/** The root key as the signer of a ledger's checkpoint notes; a root without one cannot sign them. */
export function rootSigner(root: string): (origin: string) => NoteSigner {
  const key = readTrustedRootKey(root);
  if (key === null)
    throw new CpError(
      'ERR_CHECKPOINT_NO_ROOT_KEY',
      `root ${show(root)} has no root key (${show(rootKeyPath(root))}): it was bootstrapped before checkpoints`,
      { hint: 'bootstrap a new root to get checkpoints and proofs', details: { root } },
    );
  return (origin) => rootNoteSigner(key, origin);
}
