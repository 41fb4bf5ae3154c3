import type Database from 'better-sqlite3';
import {
  hashesAsText,
  LEDGER_DDL,
  LEDGER_V1_ENTRIES_DDL,
  LEDGER_V2_DDL,
  legacyIndexes,
  TIMESTAMP_INDEX_DDL,
} from './schema.js';
import { CONTENT_DDL, CONTENT_OBJECTS, LEGACY_BLOCKS_DDL } from './content.js';
import { MERKLE_DDL } from './merkle/sqlite-tree.js';

/**
 * The schema is part of the evidence: a dropped append-only trigger, an altered table or index, or an extra
 * trigger or view is how a ledger gets rewritten. The file's schema (sqlite_master) is compared with the DDL
 * cplane lays out, statement by statement, whitespace normalised.
 */
export type SchemaProblemKind = 'missing' | 'altered' | 'extra';

export interface SchemaProblem {
  kind: SchemaProblemKind;
  /** table, index, trigger or view */
  type: string;
  name: string;
  message: string;
}

interface SchemaObject {
  type: string;
  name: string;
  sql: string;
}

/** SQLite stores a CREATE statement as written, without IF NOT EXISTS; compare modulo whitespace. */
function normalise(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/ ?([(),;]) ?/g, '$1')
    .trim();
}

function parseDdl(ddl: string): SchemaObject[] {
  return ddl
    .split(/;\s*\n/)
    .map((text) => text.trim())
    .filter((text) => text.length > 0)
    .map((text) => {
      const match = /^CREATE (TABLE|INDEX|TRIGGER|VIEW) IF NOT EXISTS (\w+)/.exec(text);
      if (!match) throw new Error(`unexpected ledger DDL statement: ${text.slice(0, 40)}`);
      const type = (match[1] as string).toLowerCase();
      return { type, name: match[2] as string, sql: normalise(text.replace(' IF NOT EXISTS', '')) };
    });
}

let expected: Map<string, SchemaObject> | undefined;
/** A version 2 ledger's objects: the same tables and triggers with the legacy indexes. */
let expectedV2: Map<string, SchemaObject> | undefined;
/** A version 1 ledger's objects: version 2's, with its own entries table. */
let expectedV1: Map<string, SchemaObject> | undefined;
let optional: Map<string, SchemaObject> | undefined;
/** Earlier layouts of an object that a valid ledger may still have (content_blocks before compression). */
let earlier: Map<string, SchemaObject> | undefined;

function expectations(version: string): [Map<string, SchemaObject>, Map<string, SchemaObject>] {
  if (!expected || !expectedV2 || !expectedV1 || !optional) {
    earlier = new Map(parseDdl(LEGACY_BLOCKS_DDL).map((o) => [o.name, o]));
    // The DDL ends its last statement with ';' and a newline, and triggers hold '; END': split on ';' + newline.
    expected = new Map(parseDdl(LEDGER_DDL).map((o) => [o.name, o]));
    expectedV2 = new Map(parseDdl(LEDGER_V2_DDL).map((o) => [o.name, o]));
    expectedV1 = new Map([...expectedV2, ...parseDdl(LEDGER_V1_ENTRIES_DDL).map((o) => [o.name, o] as const)]);
    optional = new Map(parseDdl(`${TIMESTAMP_INDEX_DDL};\n${MERKLE_DDL};\n${CONTENT_DDL}`).map((o) => [o.name, o]));
  }
  const want = hashesAsText(version) ? expectedV1 : legacyIndexes(version) ? expectedV2 : expected;
  return [want, optional];
}

/** Objects SQLite makes itself: UNIQUE/PRIMARY KEY autoindexes (no SQL) and ANALYZE's statistics tables. */
function isInternal(type: string, name: string, sql: string | null): boolean {
  return (
    (type === 'index' && sql === null && name.startsWith('sqlite_autoindex_')) ||
    (type === 'table' && /^sqlite_stat\d$/.test(name))
  );
}

/**
 * Every difference between the file's schema and the DDL of the format version its ledger_meta records (empty when
 * they match): a version 2 file given a version 1 table, or the other way round, is altered.
 */
export function schemaProblems(db: Database.Database, version: string): SchemaProblem[] {
  const [want, maybe] = expectations(version);
  const rows = db.prepare('SELECT type, name, sql FROM sqlite_master').raw().all() as [string, string, string | null][];
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const [type, name, sql] of rows) {
    if (isInternal(type, name, sql)) continue;
    const spec = want.get(name) ?? maybe.get(name);
    if (!spec) {
      problems.push({ kind: 'extra', type, name, message: `${type} ${name} is not part of the ledger's schema` });
      continue;
    }
    seen.add(name);
    if (
      spec.type !== type ||
      sql === null ||
      (normalise(sql) !== spec.sql && normalise(sql) !== earlier?.get(name)?.sql)
    ) {
      problems.push({
        kind: 'altered',
        type,
        name,
        message: `${type} ${name} differs from the ledger's schema: ${sql === null ? 'no SQL' : normalise(sql)}`,
      });
    }
  }
  // The content store is laid out whole by its first write: once any of it is there, all of it must be.
  const contentNames: readonly string[] = CONTENT_OBJECTS;
  const required = contentNames.some((name) => seen.has(name))
    ? [...want.values(), ...[...maybe.values()].filter((spec) => contentNames.includes(spec.name))]
    : [...want.values()];
  for (const spec of required) {
    if (!seen.has(spec.name))
      problems.push({
        kind: 'missing',
        type: spec.type,
        name: spec.name,
        message: `${spec.type} ${spec.name} is missing${spec.type === 'trigger' ? `: ${spec.name.startsWith('content_') ? 'content' : 'entries'} are no longer protected from UPDATE/DELETE` : ''}`,
      });
  }
  return problems;
}
