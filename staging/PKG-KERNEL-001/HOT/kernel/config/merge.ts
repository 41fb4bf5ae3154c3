/**
 * How operator overrides combine with a package's defaults (docs/architecture/packages-and-roots.md, "Operator configuration"):
 * objects merge key by key, recursively; an array or a scalar replaces the default whole; `null` removes the
 * key from the effective config (the default is unset). Nothing else is special.
 */
export type JsonObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Set an own data property. A plain `out[key] = v` with the key "__proto__" (which JSON.parse keeps as an own key of
 * a hand-edited file) replaces the object's prototype instead: its content would reach every reader while
 * JSON.stringify, and so `config show`, never prints it.
 */
function put(out: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

export function mergeConfig(defaults: unknown, override: unknown): unknown {
  if (override === undefined) return clone(defaults);
  if (!isPlainObject(override) || !isPlainObject(defaults)) return clone(override);
  const out: JsonObject = clone(defaults);
  for (const [key, value] of Object.entries(override)) {
    if (value === null) delete out[key];
    else put(out, key, Object.hasOwn(out, key) ? mergeConfig(out[key], value) : stripNulls(value));
  }
  return out;
}

/** A new subtree has no default to unset: its nulls are dropped rather than kept as values. */
function stripNulls(value: unknown): unknown {
  if (!isPlainObject(value)) return clone(value);
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) if (v !== null) put(out, key, stripNulls(v));
  return out;
}

export function getAt(value: unknown, path: readonly string[]): unknown {
  let cur: unknown = value;
  for (const seg of path) {
    if (!isPlainObject(cur) || !Object.hasOwn(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

/** Set `path` in a copy of `value`, creating objects on the way (a non-object on the way is replaced). */
export function setAt(value: JsonObject, path: readonly string[], leaf: unknown): JsonObject {
  const out = clone(value);
  let cur: JsonObject = out;
  for (const seg of path.slice(0, -1)) {
    if (!Object.hasOwn(cur, seg) || !isPlainObject(cur[seg])) put(cur, seg, {});
    cur = cur[seg] as JsonObject;
  }
  put(cur, path[path.length - 1] as string, clone(leaf));
  return out;
}

/** Remove `path` from a copy of `value`, and every object that this leaves empty. */
export function unsetAt(value: JsonObject, path: readonly string[]): JsonObject {
  const out = clone(value);
  const trail: JsonObject[] = [out];
  let cur: JsonObject = out;
  for (const seg of path.slice(0, -1)) {
    if (!Object.hasOwn(cur, seg) || !isPlainObject(cur[seg])) return out;
    cur = cur[seg] as JsonObject;
    trail.push(cur);
  }
  delete cur[path[path.length - 1] as string];
  for (let i = trail.length - 1; i > 0; i -= 1) {
    if (Object.keys(trail[i] as JsonObject).length > 0) break;
    delete (trail[i - 1] as JsonObject)[path[i - 1] as string];
  }
  return out;
}

/** Leaf paths (an array counts as a leaf) whose values differ between `a` and `b`, sorted. */
export function changedPaths(a: unknown, b: unknown, prefix: string[] = []): string[][] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => changedPaths(a[k], b[k], [...prefix, k]));
  }
  if (isPlainObject(a) || isPlainObject(b)) {
    if (a !== undefined && b !== undefined) return [prefix];
    const side = (a ?? b) as JsonObject;
    return Object.keys(side)
      .sort()
      .flatMap((k) =>
        changedPaths(a === undefined ? undefined : side[k], b === undefined ? undefined : side[k], [...prefix, k]),
      );
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [prefix];
}

/** JSON with object keys sorted at every level: the override file's bytes depend only on its content. */
export function sortedJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (!isPlainObject(v)) return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sort(v[k])]),
    );
  };
  return `${JSON.stringify(sort(value), null, 2)}\n`;
}
