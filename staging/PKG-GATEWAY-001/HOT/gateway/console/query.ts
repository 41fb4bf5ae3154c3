/** A console API query string, parsed and bounded at the edge: each value is checked before any read uses it. */
export class QueryError extends Error {
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

type Parse<T> = (name: string, value: string) => T;

const ID = /^[\x21-\x7e]{1,200}$/;
const TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?)?$/;

export function consoleQuery(search: string) {
  if (search.length > 4096) throw new QueryError('the query string is over 4096 characters', 'ask for less');
  const params = new URLSearchParams(search);
  const one = (name: string): string | undefined => {
    const all = params.getAll(name);
    if (all.length > 1) throw new QueryError(`${name} is given ${all.length} times`, `give ${name} once`);
    return all[0];
  };
  return {
    id: ((name, value) => {
      if (!ID.test(value))
        throw new QueryError(`${name} must be 1 to 200 printable ASCII characters`, `e.g. ${name}=SES-1`);
      return value;
    }) as Parse<string>,
    time: ((name, value) => {
      if (!TIME.test(value) || Number.isNaN(Date.parse(value)))
        throw new QueryError(
          `${name} must be an ISO-8601 UTC time, got ${JSON.stringify(value.slice(0, 60))}`,
          `e.g. ${name}=2026-11-26T10:00:00Z`,
        );
      return new Date(
        Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value.endsWith('Z') ? value : `${value}Z`),
      ).toISOString();
    }) as Parse<string>,
    seq: ((name, value) => {
      if (!/^[0-9]{1,15}$/.test(value) || Number(value) < 1)
        throw new QueryError(
          `${name} must be a positive integer, got ${JSON.stringify(value.slice(0, 60))}`,
          `e.g. ${name}=50`,
        );
      return Number(value);
    }) as Parse<number>,
    flag(name: string): boolean {
      const value = one(name);
      return value === '1' || value === 'true';
    },
    optional<T>(name: string, parse: Parse<T>): Record<string, T> {
      const value = one(name);
      return value === undefined || value === '' ? {} : { [name]: parse(name, value) };
    },
    required<T>(name: string, parse: Parse<T>): T {
      const value = one(name);
      if (value === undefined || value === '') throw new QueryError(`${name} is required`, `add ?${name}=…`);
      return parse(name, value);
    },
  };
}
