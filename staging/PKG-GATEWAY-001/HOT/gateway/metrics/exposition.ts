/**
 * The Prometheus text exposition format (version 0.0.4), written by hand: three metric types with fixed label
 * names, enough for `/metrics`, and no dependency added to the governed runtime (the server takes none either).
 * Series are kept in Maps keyed by their label values, so an observation is O(1) whatever the history; the label
 * values a caller passes must already be bounded (metrics/labels.ts), since each distinct tuple is a series kept
 * for the life of the process.
 */

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Kind = 'counter' | 'gauge' | 'histogram';

interface Family {
  readonly name: string;
  readonly help: string;
  readonly kind: Kind;
  readonly labels: readonly string[];
  render(out: string[]): void;
}

/** A label value as the format quotes it: backslash, double quote and line feed escaped. */
function escapeValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function labelText(names: readonly string[], values: readonly string[], extra = ''): string {
  const parts = names.map((name, i) => `${name}="${escapeValue(values[i] ?? '')}"`);
  if (extra !== '') parts.push(extra);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

const SEP = '\u0000';

abstract class Series<T> implements Family {
  protected readonly series = new Map<string, { values: readonly string[]; state: T }>();
  abstract readonly kind: Kind;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labels: readonly string[],
  ) {}

  protected entry(values: readonly string[], fresh: () => T): T {
    if (values.length !== this.labels.length)
      throw new Error(`${this.name} takes ${this.labels.length} label values, got ${values.length}`);
    const key = values.join(SEP);
    let found = this.series.get(key);
    if (found === undefined) {
      found = { values: [...values], state: fresh() };
      this.series.set(key, found);
    }
    return found.state;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`);
    out.push(`# TYPE ${this.name} ${this.kind}`);
    for (const { values, state } of this.series.values()) this.renderOne(out, values, state);
  }

  protected abstract renderOne(out: string[], values: readonly string[], state: T): void;
}

export class Counter extends Series<{ value: number }> {
  readonly kind = 'counter';

  inc(values: readonly string[], by = 1): void {
    if (!(by >= 0) || !Number.isFinite(by)) return;
    this.entry(values, () => ({ value: 0 })).value += by;
  }

  /** The current count of one series (0 when never incremented): for tests and the console. */
  get(values: readonly string[]): number {
    return this.series.get(values.join(SEP))?.state.value ?? 0;
  }

  protected renderOne(out: string[], values: readonly string[], state: { value: number }): void {
    out.push(`${this.name}${labelText(this.labels, values)} ${formatNumber(state.value)}`);
  }
}

export class Gauge extends Series<{ value: number }> {
  readonly kind = 'gauge';

  set(values: readonly string[], value: number): void {
    this.entry(values, () => ({ value: 0 })).value = value;
  }

  add(values: readonly string[], by: number): void {
    this.entry(values, () => ({ value: 0 })).value += by;
  }

  /** Forget every series (a gauge rebuilt from a snapshot at each scrape). */
  reset(): void {
    this.series.clear();
  }

  protected renderOne(out: string[], values: readonly string[], state: { value: number }): void {
    out.push(`${this.name}${labelText(this.labels, values)} ${formatNumber(state.value)}`);
  }
}

interface Buckets {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Series<Buckets> {
  readonly kind = 'histogram';

  constructor(
    name: string,
    help: string,
    labels: readonly string[],
    /** Upper bounds, ascending; +Inf is implied. */
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labels);
  }

  observe(values: readonly string[], value: number): void {
    if (!Number.isFinite(value)) return;
    const state = this.entry(values, () => ({ counts: this.bounds.map(() => 0), sum: 0, count: 0 }));
    // The first bucket whose bound holds the value; the cumulative counts are summed when rendered.
    const at = this.bounds.findIndex((bound) => value <= bound);
    if (at >= 0) state.counts[at] = (state.counts[at] ?? 0) + 1;
    state.sum += value;
    state.count += 1;
  }

  protected renderOne(out: string[], values: readonly string[], state: Buckets): void {
    let cumulative = 0;
    this.bounds.forEach((bound, i) => {
      cumulative += state.counts[i] ?? 0;
      out.push(`${this.name}_bucket${labelText(this.labels, values, `le="${formatNumber(bound)}"`)} ${cumulative}`);
    });
    out.push(`${this.name}_bucket${labelText(this.labels, values, 'le="+Inf"')} ${state.count}`);
    out.push(`${this.name}_sum${labelText(this.labels, values)} ${formatNumber(state.sum)}`);
    out.push(`${this.name}_count${labelText(this.labels, values)} ${state.count}`);
  }
}

/** The families in the order they were registered, rendered as one exposition. */
export class Registry {
  private readonly families: Family[] = [];

  counter(name: string, help: string, labels: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labels));
  }

  gauge(name: string, help: string, labels: readonly string[] = []): Gauge {
    return this.add(new Gauge(name, help, labels));
  }

  histogram(name: string, help: string, labels: readonly string[], bounds: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labels, bounds));
  }

  render(): string {
    const out: string[] = [];
    for (const family of this.families) family.render(out);
    return `${out.join('\n')}\n`;
  }

  private add<F extends Family>(family: F): F {
    this.families.push(family);
    return family;
  }
}
