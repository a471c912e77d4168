/**
 * The configuration file's JSON Schema (for editors) and its reference table (docs/configuration.md),
 * both generated from the zod schema: `npm run config:docs` writes them, and a test fails when the
 * files differ from what the schema gives.
 */
import { z } from 'zod';
import { fileSchema } from './file-schema.js';

type JsonSchema = {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  required?: string[];
};

/** The JSON Schema of the file as a user writes it (defaults optional). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(fileSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    ...schema,
    $id: 'https://agentq.dev/agentq.config.schema.json',
    title: 'agentq configuration file (agentq.config.yaml)',
  };
}

/** One Markdown table row per setting, by its path in the file. */
export function configReference(): string {
  const rows: string[] = [];
  walk(configJsonSchema() as JsonSchema, '', rows);
  // A key two shapes share (a server's `timeoutMs`) is said once.
  const unique = [...new Map(rows.map((line) => [line.split(' | ')[0], line])).values()];
  return ['| key | type | default | meaning |', '| --- | --- | --- | --- |', ...unique].join('\n');
}

function walk(schema: JsonSchema, at: string, rows: string[]): void {
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (key === '$schema') continue;
    const where = at ? `${at}.${key}` : key;
    rows.push(row(where, property));
    descend(property, where, rows);
  }
}

function descend(schema: JsonSchema, where: string, rows: string[]): void {
  if (schema.properties) walk(schema, where, rows);
  if (typeof schema.additionalProperties === 'object' && !isScalarish(schema.additionalProperties)) {
    const name = `${where}.<${singular(where)}>`;
    rows.push(row(name, schema.additionalProperties));
    descend(schema.additionalProperties, name, rows);
  }
  // A union of objects (a stdio server or an HTTP one): every shape's keys, under one name.
  for (const option of schema.anyOf ?? []) if (option.properties) walk(option, where, rows);
}

function row(where: string, schema: JsonSchema): string {
  const fallback = schema.default === undefined ? '' : `\`${JSON.stringify(schema.default)}\``;
  return `| \`${where}\` | ${typeOf(schema)} | ${fallback} | ${(schema.description ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ')} |`;
}

function typeOf(schema: JsonSchema): string {
  if (schema.enum) return schema.enum.map((value) => `\`${String(value)}\``).join(' \\| ');
  if (schema.anyOf) return [...new Set(schema.anyOf.map(typeOf))].join(' or ');
  if (schema.type === 'array') return `list of ${schema.items ? typeOf(schema.items) : 'values'}`;
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object')
    return `map of ${typeOf(schema.additionalProperties)}`;
  return Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? 'any');
}

/** A map whose values are plain (a server's `env`): one row says it all. */
function isScalarish(schema: JsonSchema): boolean {
  return (
    !schema.properties &&
    !(schema.anyOf ?? []).some((option) => option.properties && Object.keys(option.properties).length > 1)
  );
}

function singular(where: string): string {
  const last = where.split('.').at(-1) ?? '';
  return { agents: 'agent', mcpServers: 'server', models: 'model', tenants: 'tenant' }[last] ?? 'name';
}
