#!/usr/bin/env node
/**
 * Writes what is generated from the configuration file's schema (packages/config/src/file-schema.ts):
 * agentq.config.schema.json, for editors, and the file's reference table in docs/configuration.md.
 * `--check`: writes nothing, exits 1 when either differs (tests/unit/config-docs.test.ts runs it too).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { configJsonSchema, configReference } from '@agentq/config';

const root = new URL('../', import.meta.url);
const schemaFile = new URL('agentq.config.schema.json', root);
const docsFile = new URL('docs/configuration.md', root);
const START = '<!-- generated from the schema: npm run config:docs -->';
const END = '<!-- end of generated -->';

export function generated() {
  const docs = readFileSync(docsFile, 'utf8');
  const from = docs.indexOf(START);
  const to = docs.indexOf(END);
  if (from < 0 || to < from) throw new Error(`docs/configuration.md has no ${START} ... ${END} section`);
  return {
    schema: `${JSON.stringify(configJsonSchema(), null, 2)}\n`,
    docs: `${docs.slice(0, from + START.length)}\n\n${configReference()}\n\n${docs.slice(to)}`,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { schema, docs } = generated();
  if (process.argv.includes('--check')) {
    const stale = [
      readFileSync(schemaFile, 'utf8') !== schema && 'agentq.config.schema.json',
      readFileSync(docsFile, 'utf8') !== docs && 'docs/configuration.md',
    ].filter(Boolean);
    if (stale.length) {
      console.error(`${stale.join(' and ')} differ from the schema: run npm run config:docs`);
      process.exit(1);
    }
  } else {
    writeFileSync(schemaFile, schema);
    writeFileSync(docsFile, docs);
  }
}
