import type { Budgeter, StepResult } from './budgeter.js';

interface Waiting {
  step: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * The budget file's group commit (the ledger's is router/group-commit.ts): the steps of calls in flight (each one of
 * the budgeter's own transactions: reserve, settle, release, chargeUnknown) made ready in the same turn of the event
 * loop run, in the order asked, in one transaction (Budgeter.runGrouped), each in a savepoint of its own, so they
 * share one commit (one fsync at the budget's durability "full") instead of one each.
 * A step runs over the state the steps before it left, exactly as in a transaction of its own taken in that order,
 * so no step sees less spent than there is; its promise settles only after the transaction committed, and one that
 * throws rolls back only itself. A group whose transaction cannot be begun or committed runs each step again alone,
 * so each answers for itself as it would have without a group.
 * A step with no other call in flight (a CLI's route, a gateway at one call at a time) runs without waiting for the
 * next turn: nothing could join its group, and the wait would be idle time on every call.
 */
export class StepGroup {
  private queue: Waiting[] = [];
  private scheduled = false;
  /** Reservations made here and not yet settled, released or charged: calls in flight whose steps a turn gathers. */
  private open = 0;
  /** Transactions run and steps carried (a group of one is a plain step). */
  readonly stats = { groups: 0, steps: 0 };

  constructor(private readonly budgeter: Budgeter) {}

  /** A reserve step: once it reserved, its call is in flight until a finishing step. */
  async reserve<T extends { ok: boolean; replayed?: boolean }>(step: () => T): Promise<T> {
    const outcome = await this.run(step);
    if (outcome.ok && outcome.replayed !== true) this.open += 1;
    return outcome;
  }

  /** A step that ends a call's reservation (settle, release, charge as unknown). */
  finish<T>(step: () => T): Promise<T> {
    this.open = Math.max(0, this.open - 1);
    return this.run(step);
  }

  /** Any other step (no call's reservation begins or ends with it). */
  run<T>(step: () => T): Promise<T> {
    if (!this.budgeter.grouped) return new Promise((resolve) => resolve(step()));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ step, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      if (this.open === 0 && this.queue.length === 1) queueMicrotask(this.flush);
      else setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const group = this.queue;
    this.queue = [];
    if (group.length === 0) return;
    this.stats.groups += 1;
    this.stats.steps += group.length;
    if (group.length === 1) {
      this.alone(group[0] as Waiting);
      return;
    }
    let results: StepResult[];
    try {
      results = this.budgeter.runGrouped(group.map((w) => w.step));
    } catch {
      for (const waiting of group) this.alone(waiting);
      return;
    }
    for (let i = 0; i < group.length; i += 1) {
      const waiting = group[i] as Waiting;
      const result = results[i] as StepResult;
      if (result.ok) waiting.resolve(result.value);
      else waiting.reject(result.error);
    }
  };

  private alone(waiting: Waiting): void {
    try {
      waiting.resolve(waiting.step());
    } catch (error) {
      waiting.reject(error);
    }
  }
}
