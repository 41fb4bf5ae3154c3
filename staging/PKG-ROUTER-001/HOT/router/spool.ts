import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../kernel/atomic.js';
import type { AppendInput } from '../kernel/ledger/index.js';

/**
 * Exchanges the ledger refused after the provider answered. Each is one atomic file named by its
 * DISPATCH id; drained (appended, then removed) the next time a router starts on the root.
 */
export class ExchangeSpool {
  constructor(private readonly dir: string) {}

  put(dispatchId: string, records: readonly AppendInput[]): string {
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `${dispatchId}.json`);
    writeFileAtomic(path, JSON.stringify(records));
    return path;
  }

  pending(): string[] {
    try {
      return readdirSync(this.dir).filter((name) => name.endsWith('.json')).sort();
    } catch {
      return [];
    }
  }

  drain(append: (records: AppendInput[]) => unknown): number {
    let drained = 0;
    for (const name of this.pending()) {
      const path = join(this.dir, name);
      append(JSON.parse(readFileSync(path, 'utf8')) as AppendInput[]);
      rmSync(path);
      drained += 1;
    }
    return drained;
  }
}
