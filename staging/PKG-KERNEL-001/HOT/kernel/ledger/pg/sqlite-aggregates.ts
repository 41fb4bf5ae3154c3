/**
 * What SQLite's json_extract, sum() and total() give, computed in node over metadata parsed there: PostgreSQL
 * cannot read a metadata row holding `\u0000` as json, and the readers that total metadata on PostgreSQL must print
 * the same numbers as on the SQLite file, to the last bit.
 */

/** json_extract(metadata, '$.<field>') of a parsed top-level value: null when absent, booleans as 1 and 0. */
export function jsonExtract(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

/**
 * sum() and total() over json_extract values in row order: integers added exactly, and from the first value that
 * is not an integer, floating point with Kahan-Babuska-Neumaier compensation (SQLite since 3.43), so a sum of
 * prices is the very double SQLite returns.
 */
export class SqliteSum {
  private count = 0;
  private approx = false;
  private integer = 0;
  private sum = 0;
  private error = 0;

  add(extracted: unknown): void {
    if (extracted === null || extracted === undefined) return;
    this.count += 1;
    if (typeof extracted === 'number' && Number.isSafeInteger(extracted) && !this.approx) {
      this.integer += extracted;
      if (Number.isSafeInteger(this.integer)) return;
      this.integer -= extracted;
    }
    if (!this.approx) {
      this.approx = true;
      this.sum = this.integer;
      this.error = 0;
    }
    this.step(numeric(extracted));
  }

  /** sum(): null over no values. */
  sumValue(): number | null {
    if (this.count === 0) return null;
    return this.total();
  }

  /** total(): 0 over no values. */
  total(): number {
    if (!this.approx) return this.integer;
    return Number.isFinite(this.error) ? this.sum + this.error : this.sum;
  }

  private step(r: number): void {
    const s = this.sum;
    const t = s + r;
    if (Math.abs(s) > Math.abs(r)) this.error += s - t + r;
    else this.error += r - t + s;
    this.sum = t;
  }
}

/** A value as SQLite's sum reads it: a number as it is, text by its leading number (0 when it has none). */
function numeric(value: unknown): number {
  if (typeof value === 'number') return value;
  const parsed = Number.parseFloat(String(value));
  return Number.isNaN(parsed) ? 0 : parsed;
}
