#!/usr/bin/env node
/**
 * Writes docs/api.md's list of every operation from the OpenAPI document the API serves (the zod schemas
 * of its routes): method, path, what it does, what it answers. `--check`: writes nothing, exits 1 when
 * it differs (tests/unit/api-docs.test.ts runs it too).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiDocument } from '@agentq/api';

const docsFile = new URL('../docs/api.md', import.meta.url);
const START = '<!-- generated from the OpenAPI document: npm run api:docs -->';
const END = '<!-- end of generated -->';

function operations() {
  const rows = ['| operation | what it does | answers |', '| --- | --- | --- |'];
  for (const [route, methods] of Object.entries(openApiDocument().paths ?? {}))
    for (const [method, operation] of Object.entries(methods ?? {})) {
      const statuses = Object.keys(operation.responses ?? {}).join(', ');
      const what = (operation.summary ?? '').replace(/\|/g, '\\|');
      rows.push(`| \`${method.toUpperCase()} ${route}\` | ${what} | ${statuses} |`);
    }
  return rows.join('\n');
}

export function generated() {
  const docs = readFileSync(docsFile, 'utf8');
  const from = docs.indexOf(START);
  const to = docs.indexOf(END, from);
  if (from < 0 || to < from) throw new Error(`docs/api.md has no ${START} ... ${END} section`);
  return `${docs.slice(0, from + START.length)}\n\n${operations()}\n\n${docs.slice(to)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const docs = generated();
  if (process.argv.includes('--check')) {
    if (readFileSync(docsFile, 'utf8') !== docs) {
      console.error('docs/api.md differs from the OpenAPI document: run npm run api:docs');
      process.exit(1);
    }
  } else writeFileSync(docsFile, docs);
}
