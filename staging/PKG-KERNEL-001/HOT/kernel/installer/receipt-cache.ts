import { rmSync } from 'node:fs';
import { listReceipts, writeReceipt, type Receipt } from '../registry/receipt.js';
import { receiptDir } from '../root/layout.js';

/**
 * The receipts of a root whose lock this process holds. Nothing else may change them while the lock is
 * held, so they are read and parsed once, on first use, instead of once per package of a batch (the
 * runtime's receipt alone is ~136 KB); commits write and remove receipts through here, which keeps the
 * cache in step with the disk. First use comes after the session's crash repair, which therefore never
 * meets a loaded cache.
 */
export class ReceiptCache {
  private known: Map<string, Receipt> | null = null;

  constructor(private readonly root: string) {}

  /** Every installed receipt by package id, as listReceipts would read it now. */
  all(): ReadonlyMap<string, Receipt> {
    this.known ??= listReceipts(this.root);
    return this.known;
  }

  write(receipt: Receipt): void {
    this.change(() => {
      const written = writeReceipt(this.root, receipt);
      this.known?.set(written.package_id, written);
    });
  }

  remove(packageId: string): void {
    this.change(() => {
      rmSync(receiptDir(this.root, packageId), { recursive: true, force: true });
      this.known?.delete(packageId);
    });
  }

  /** A write that fails may have changed the disk anyway (a half-removed directory): read it again next time. */
  private change(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.known = null;
      throw error;
    }
  }
}
