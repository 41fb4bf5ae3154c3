// Gemini's function parameter Schema (an OpenAPI 3.0 subset, types in capitals) as the JSON Schema Messages and
// Chat Completions take: each keyword mapped, an unknown one refused by name.
import { arrayAt, objectAt, refuse, shown } from './refusal.js';

const TYPES: Readonly<Record<string, string>> = {
  STRING: 'string',
  NUMBER: 'number',
  INTEGER: 'integer',
  BOOLEAN: 'boolean',
  ARRAY: 'array',
  OBJECT: 'object',
  NULL: 'null',
};

/** Keywords with the same meaning and shape in both. */
const SAME = new Set([
  'description',
  'title',
  'format',
  'enum',
  'required',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
  'pattern',
  'default',
  'example',
]);

/** Bounds how deep a hostile schema may nest. */
const MAX_DEPTH = 32;

export function geminiSchemaToJson(value: unknown, at: string, depth = 0): Record<string, unknown> {
  if (depth > MAX_DEPTH) refuse(at, `a schema nested deeper than ${MAX_DEPTH} levels`);
  const schema = objectAt(value, at);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(schema)) {
    const where = `${at}.${key}`;
    if (SAME.has(key)) out[key] = v;
    else if (key === 'type') {
      const type = typeof v === 'string' ? TYPES[v.toUpperCase()] : undefined;
      if (type === undefined) refuse(where, `a Gemini type is required, got ${shown(v)}`);
      out.type = type;
    } else if (key === 'properties') {
      const props = objectAt(v, where);
      out.properties = Object.fromEntries(
        Object.entries(props).map(([name, p]) => [name, geminiSchemaToJson(p, `${where}.${name}`, depth + 1)]),
      );
    } else if (key === 'items') out.items = geminiSchemaToJson(v, where, depth + 1);
    else if (key === 'anyOf')
      out.anyOf = arrayAt(v, where).map((s, i) => geminiSchemaToJson(s, `${where}[${i}]`, depth + 1));
    // An ordering hint for generation: JSON Schema's properties keep their order already.
    else if (key === 'propertyOrdering') arrayAt(v, where);
    else if (key !== 'nullable') refuse(where, 'the keyword has no JSON Schema equivalent');
  }
  if (schema.nullable === true) {
    if (typeof out.type !== 'string') refuse(`${at}.nullable`, 'nullable needs a type');
    out.type = [out.type, 'null'];
  } else if (schema.nullable !== undefined && schema.nullable !== false)
    refuse(`${at}.nullable`, `a boolean is required, got ${shown(schema.nullable)}`);
  return out;
}
