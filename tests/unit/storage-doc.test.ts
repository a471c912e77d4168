/**
 * docs/storage.md lists every key keys.ts makes: a key added to the code and not to the page leaves an
 * operator reading Redis with no idea what it holds. The page writes a key as keys.ts builds it, with
 * `P` for the install's prefix, `C` for a cell's and `C0` for cell 0's, and each name as `<name>`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const keysSource = readFileSync(path.join(root, 'packages/store/src/keys.ts'), 'utf8');
const storageDoc = readFileSync(path.join(root, 'docs/storage.md'), 'utf8');

/** How the page spells each prefix keys.ts starts a key with. */
const PREFIXES: Record<string, string> = { prefix: 'P', at: 'C', schedulesAt: 'C0' };

/** Every key and channel `createKeys` builds (its template literals that begin with a prefix), as the page spells it. */
function keysAsDocumented(): string[] {
  const body = keysSource.slice(keysSource.indexOf('export function createKeys'));
  return [...body.matchAll(/`\$\{(prefix|at|schedulesAt|of\(\w+\))\}(:[^`]*)`/g)].map(([, start = '', rest = '']) => {
    const prefix = PREFIXES[start] ?? 'C';
    return prefix + rest.replace(/\$\{(\w+(?:\(\w+\))?)\}/g, '<$1>');
  });
}

it('documents every key keys.ts makes', () => {
  const keys = keysAsDocumented();
  expect(keys).toContain('C:task:<taskId>');
  expect(keys).toContain('C:tenant:<tenant>:idem:<sha256(key)>');
  expect(keys.length).toBeGreaterThan(40);
  // BullMQ's prefixes are documented with the queues under them (`C:bull:<pool>:*`).
  const documented = (key: string) => storageDoc.includes(`\`${key}${key.endsWith(':bull') ? ':' : '`'}`);
  expect(keys.filter((key) => !documented(key))).toEqual([]);
});
