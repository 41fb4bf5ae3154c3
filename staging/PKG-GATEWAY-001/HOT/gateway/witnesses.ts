import { type Warning, warning } from '#kernel/catalogue/define.js';
import { toCpError } from '#kernel/errors.js';
import { cosignedDir } from '#kernel/ledger/merkle/cosigned-check.js';
import { checkpointNote, ledgerOrigin, rootNoteSigner, withLedgerTree } from '#kernel/ledger/merkle/ledger-proofs.js';
import type { LedgerTree } from '#kernel/ledger/merkle/tree-view.js';
import { PgTreeSnapshot } from '#kernel/ledger/merkle/pg-tree.js';
import { consistencyPath } from '#kernel/ledger/merkle/proof.js';
import { rangeHashOf } from '#kernel/ledger/merkle/tiles.js';
import { type PushCounts, recordCosignatures, WitnessPusher } from '#kernel/ledger/merkle/witness-push.js';
import { readTrustedRootKey } from '#kernel/signing/root-key.js';
import type { OpenedRouter } from '#router/open.js';
import type { GatewayConfig } from './settings.js';

/** The gateway's witnesses: each checkpoint it writes, signed as a C2SP note and pushed to them in the background. */
export interface GatewayWitnesses {
  /** A checkpoint of `seq` entries was written: push it (returns at once). */
  written(seq: number): void;
  pusher: WitnessPusher;
  /** Each configured witness's counts, named by its vkey's name (a bounded label: one per configured witness). */
  counts(): { witness: string; counts: PushCounts }[];
}

/**
 * The pusher for the witnesses the gateway config names (`checkpoint.witnesses`), on the SQLite ledger or the shared
 * store; null when none are configured or the root has no key to sign notes with. Refusals and give-ups are warnings.
 */
export function gatewayWitnesses(
  root: string,
  opened: OpenedRouter,
  settings: GatewayConfig,
  warn: (w: Warning) => void,
): GatewayWitnesses | null {
  const targets = settings.checkpoint?.witnesses ?? [];
  const key = targets.length === 0 ? null : readTrustedRootKey(root);
  if (key === null) return null;
  const onTree = <T>(fn: (tree: LedgerTree) => T): Promise<T> => {
    if (opened.shared) return PgTreeSnapshot.open(opened.shared.chain, (snapshot) => snapshot.compute(fn));
    const ledger = opened.ledger;
    if (ledger === null) return Promise.reject(new Error('the gateway has no ledger'));
    return Promise.resolve().then(() => withLedgerTree(ledger, fn));
  };
  const dir = cosignedDir(root);
  const pusher = new WitnessPusher({
    witnesses: targets,
    consistency: (old, size) => onTree((tree) => consistencyPath(old, size, rangeHashOf(tree.source, size))),
    record: (note, lines) => {
      try {
        recordCosignatures(dir, note, lines);
      } catch (error) {
        warn(warning('WITNESS_PUSH_FAILED', `a cosignature could not be recorded: ${toCpError(error).message}`));
      }
    },
    log: (line) => warn(warning('WITNESS_PUSH_FAILED', line)),
  });
  return {
    pusher,
    counts() {
      const byUrl = pusher.counts();
      const named = new Set<string>();
      return targets.flatMap((t, i) => {
        const counts = byUrl[t.url];
        if (counts === undefined) return [];
        // Two targets may share a vkey (one witness behind two URLs): the later one is told apart by its position.
        const name = t.vkey.split('+')[0] ?? '';
        const witness = named.has(name) ? `${name}#${i}` : name;
        named.add(witness);
        return [{ witness, counts }];
      });
    },
    written(seq) {
      onTree((tree) => checkpointNote(tree, seq, rootNoteSigner(key, ledgerOrigin(tree.ledgerId)))).then(
        (note) => pusher.push(note),
        (error: unknown) =>
          warn(
            warning('WITNESS_PUSH_FAILED', `checkpoint #${seq} was not signed as a note: ${toCpError(error).message}`),
          ),
      );
    },
  };
}
