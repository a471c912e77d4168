/** docs/api.md's list of operations is generated from the OpenAPI document: it cannot drift from the routes. */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
// @ts-expect-error: a plain script, with no types.
import { generated } from '../../scripts/api-docs.mjs';

it('docs/api.md lists every operation as the OpenAPI document gives it (npm run api:docs)', () => {
  const docs = (generated as () => string)();
  expect(readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')).toBe(docs);
  for (const operation of ['`POST /v1/tasks`', '`GET /v1/pools`', '`GET /v1/tasks/{id}/events`'])
    expect(docs).toContain(`| ${operation} |`);
});
