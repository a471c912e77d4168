/**
 * A variable the configuration file replaced stops every process that finds it (replaced-variables.ts).
 * A text that names one as a setting (a message, a help string, a comment, a doc) sends its reader to a
 * variable agentq refuses: none may, but the refusal itself (that file, and the paragraph of
 * docs/configuration.md that lists what it refuses).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPLACED_VARIABLE_NAME } from '@agentq/config/replaced-variables';

const root = path.resolve(import.meta.dirname, '../..');
/** What a reader of the sources and docs reads: code, scripts, docs, prompts and the shipped files. */
const FOLDERS = ['apps', 'packages', 'docs', 'prompts', 'scripts', 'bench'];
const ROOT_FILES = [
  'README.md',
  'agentq.config.yaml',
  'agentq.config.schema.json',
  '.env.example',
  'docker-compose.yml',
  'Dockerfile',
];
const TEXT = /\.(ts|mjs|js|cjs|md|lua|ya?ml|json|html|css|acl)$/;
/** The refusal, which names what it refuses. */
const REFUSAL_FILE = 'packages/config/src/replaced-variables.ts';
const REFUSAL_PARAGRAPH = 'A variable the file replaced';

function sourcesAndDocs(): string[] {
  const files = FOLDERS.flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && TEXT.test(entry.name))
      .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
      .filter(
        (file) =>
          !file.split(path.sep).some((part) => part === 'node_modules' || part === 'dist') &&
          !/\.test\.ts$/.test(file) &&
          file !== REFUSAL_FILE,
      ),
  );
  return [...files, ...ROOT_FILES];
}

/** Each name of a replaced variable in `file`, with its line; the refusal's paragraph of a doc left out. */
function namesIn(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const found: string[] = [];
  let offset = 0;
  for (const paragraph of text.split(/(\n\s*\n)/)) {
    if (!paragraph.includes(REFUSAL_PARAGRAPH))
      for (const match of paragraph.matchAll(REPLACED_VARIABLE_NAME)) {
        const line = text.slice(0, offset + match.index).split('\n').length;
        found.push(`${file}:${line}: ${match[0]}`);
      }
    offset += paragraph.length;
  }
  return found;
}

it('names no replaced variable in a source or doc, but in the refusal', () => {
  const files = sourcesAndDocs();
  // The scan reaches what it must: the refusal's doc, a package's code, a worker's.
  expect(files).toEqual(
    expect.arrayContaining(['docs/configuration.md', 'packages/llm/src/prices.ts', 'apps/worker/src/hold-task.ts']),
  );
  expect(files.length).toBeGreaterThan(300);
  expect(files.flatMap(namesIn)).toEqual([]);
});

it('finds a replaced variable however it is written', () => {
  const names = (text: string) => [...text.matchAll(REPLACED_VARIABLE_NAME)].map((match) => match[0]);
  expect(names('the shared limit (AGENTQ_LIMITS) is used up')).toEqual(['AGENTQ_LIMITS']);
  expect(names('AGENTQ_MODEL_CODER=x and `AGENTQ_TOOL_NETWORK_<POOL>`')).toEqual([
    'AGENTQ_MODEL_CODER',
    'AGENTQ_TOOL_NETWORK_<POOL',
  ]);
  // The variables that stay are not refused.
  expect(names('AGENTQ_MODEL, AGENTQ_TOOL_NETWORK=egress, AGENTQ_LIMITS_X, AGENTQ_PRICES2')).toEqual([]);
});
