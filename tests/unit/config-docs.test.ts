/** The file's reference and JSON Schema are generated from its zod schema: they cannot drift from it. */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { loadConfigFile, DEFAULT_CONFIG_FILE } from '@agentq/config';
// @ts-expect-error: a plain script, with no types.
import { generated } from '../../scripts/config-docs.mjs';

it('docs/configuration.md and agentq.config.schema.json are what the schema gives (npm run config:docs)', () => {
  const { schema, docs } = generated() as { schema: string; docs: string };
  expect(readFileSync(new URL('../../agentq.config.schema.json', import.meta.url), 'utf8')).toBe(schema);
  expect(readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8')).toBe(docs);
  // Every key of the file has its row.
  for (const key of ['agents.<agent>.instructions', 'mcpServers.<server>.command', 'models.<model>.limits.rpm'])
    expect(docs).toContain(`| \`${key}\` |`);
});

it('ships a valid default file: the built-in agents', () => {
  const file = loadConfigFile(DEFAULT_CONFIG_FILE);
  expect(Object.keys(file.settings.agents)).toEqual(['coder', 'file', 'casual', 'web']);
  for (const name of Object.keys(file.settings.agents)) expect(file.instructions[name]).toMatch(/^You are /);
});
