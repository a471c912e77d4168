/**
 * Names the contract owns are imported, never written out again: a copy goes stale without a word when a
 * status or a tool protocol is added (the CLI would wait forever on a new ended status, the dashboard
 * offer to cancel it). Every source file of the apps, the packages and the tests is read for copies.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.join(import.meta.dirname, '../..');

const COPIES = [
  {
    what: 'the terminal statuses',
    // The four ended statuses in one line, as strings or as fields (`counts.skipped`).
    pattern: /(['"]|\.)completed\b.*(['"]|\.)failed\b.*(['"]|\.)skipped\b.*(['"]|\.)cancelled\b/,
    instead: 'TERMINAL_STATUSES or isTerminalStatus from @agentq/contract',
    owner: 'packages/contract/src/tasks.ts',
  },
  {
    what: "the tool protocols' names",
    pattern: /['"]native['"]\s*\|\s*['"]fences['"]|\[\s*['"]native['"]\s*,\s*['"]fences['"]\s*\]/,
    instead: 'ToolProtocolName or TOOL_PROTOCOLS from @agentq/contract',
    owner: 'packages/contract/src/tasks.ts',
  },
];

function sourceFiles(): string[] {
  const files: string[] = [];
  for (const top of ['apps', 'packages', 'tests', 'bench', 'scripts'])
    for (const entry of readdirSync(path.join(root, top), { recursive: true, encoding: 'utf8' })) {
      const file = path.join(top, entry);
      if (/(^|\/)(node_modules|dist)\//.test(file) || !/\.(ts|mjs|js)$/.test(file)) continue;
      files.push(file);
    }
  return files;
}

describe('names the contract owns', () => {
  it.each(COPIES.map((copy) => [copy.what, copy] as const))(
    'has %s in one place, imported everywhere else',
    (_, copy) => {
      const { pattern, instead, owner } = copy;
      const copies: string[] = [];
      for (const file of sourceFiles()) {
        if (file === owner || file === path.join('tests', 'unit', 'shared-names.test.ts')) continue;
        readFileSync(path.join(root, file), 'utf8')
          .split('\n')
          .forEach((line, index) => {
            if (pattern.test(line)) copies.push(`${file}:${index + 1}: ${line.trim()}`);
          });
      }
      expect(copies, `use ${instead} in`).toEqual([]);
    },
  );
});
