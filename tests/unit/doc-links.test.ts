/**
 * A doc's relative link leads somewhere: the file exists, and its `#anchor` is a heading of that file
 * (as GitHub makes a heading's anchor). A section moved to another page otherwise leaves its readers
 * at the top of the old one, or at a 404.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const DOCS = [
  'README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Fenced blocks, whose lines are neither headings nor links. */
const FENCED = /^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;
/** A code span: a run of backticks, then the first run of exactly as many. */
const CODE_SPAN = /(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g;

/** The text a reader sees as prose: a link shown as code is no link. Lines kept, for their numbers. */
function prose(markdown: string): string {
  const blank = (text: string) => text.replace(/[^\n]/g, '');
  return markdown.replace(FENCED, blank).replace(CODE_SPAN, blank);
}

/** GitHub's anchor of a heading: its text lower-cased, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(FENCED, '');
  for (const [, heading = ''] of withoutFences.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Each relative link of `file` that leads nowhere, as `file:line: target (why)`. */
function brokenLinks(file: string): string[] {
  const markdown = readFileSync(path.join(root, file), 'utf8');
  const broken: string[] = [];
  const lines = prose(markdown).split('\n');
  lines.forEach((line, index) => {
    for (const [, target = ''] of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // http:, mailto: ...
      const [pathPart = '', anchor] = target.split('#');
      const linked =
        pathPart === '' ? path.join(root, file) : path.resolve(path.dirname(path.join(root, file)), pathPart);
      const where = `${file}:${index + 1}: ${target}`;
      if (!existsSync(linked)) broken.push(`${where} (no such file)`);
      else if (anchor !== undefined && linked.endsWith('.md') && !anchorsOf(readFileSync(linked, 'utf8')).has(anchor))
        broken.push(`${where} (no such heading in ${path.relative(root, linked)})`);
    }
  });
  return broken;
}

it('finds every file and heading a doc links to', () => {
  expect(DOCS.length).toBeGreaterThan(5);
  expect(DOCS.flatMap(brokenLinks)).toEqual([]);
});

it('makes anchors as GitHub does', () => {
  const anchors = anchorsOf(
    '# Fair tenants\n## Storage in Redis (prefix `AGENTQ_REDIS_PREFIX`)\n```\n# not a heading\n```\n## Fair tenants\n## [The CLI](x.md)\n',
  );
  expect([...anchors]).toEqual([
    'fair-tenants',
    'storage-in-redis-prefix-agentq_redis_prefix',
    'fair-tenants-1',
    'the-cli',
  ]);
});

/** What a section may be named by: its heading, or the bold words that lead its paragraph or item. */
function sectionNames(markdown: string): string[] {
  const withoutFences = markdown.replace(FENCED, '');
  const headings = [...withoutFences.matchAll(/^#{1,6}\s+(.*?)\s*$/gm)].map(([, text = '']) => text);
  const leads = [...withoutFences.matchAll(/^\s*(?:[-*]\s+)?\*\*(.+?)\*\*/gm)].map(([, text = '']) => text);
  return [...headings, ...leads].map((name) => name.replace(/`/g, '').toLowerCase());
}

/** Text files a reader of the code or the docs meets, outside node_modules and dist. */
function sourcesAndDocs(): string[] {
  const folders = ['apps', 'packages', 'bench', 'tests', 'scripts', 'docs'];
  const files = folders.flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.(ts|mjs|js|cjs|lua|md|ya?ml)$/.test(entry.name))
      .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
      .filter((file) => !file.split(path.sep).some((part) => part === 'node_modules' || part === 'dist')),
  );
  return [...files, 'README.md', 'docker-compose.yml', 'Dockerfile'];
}

it('finds every section a source or doc names by its title (docs/X.md, "Title")', () => {
  const references: string[] = [];
  const missing: string[] = [];
  for (const file of sourcesAndDocs().filter((file) => file !== path.relative(root, import.meta.filename))) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const match of text.matchAll(/([\w-]+\.md)\)?, "([^"]+)"/g)) {
      const [, doc = '', title = ''] = match;
      const docPath = doc === 'README.md' ? 'README.md' : `docs/${doc}`;
      const line = text.slice(0, match.index).split('\n').length;
      references.push(`${file}:${line}`);
      const names = existsSync(path.join(root, docPath))
        ? sectionNames(readFileSync(path.join(root, docPath), 'utf8'))
        : [];
      if (!names.some((name) => name.startsWith(title.toLowerCase())))
        missing.push(`${file}:${line}: ${docPath}, "${title}"`);
    }
  }
  expect(references.length).toBeGreaterThan(5);
  expect(missing).toEqual([]);
});

it('names only source files that exist (a doc naming `x.ts` finds a file of that name or path)', () => {
  const rootFiles = readdirSync(root, { withFileTypes: true }).filter((entry) => entry.isFile());
  const files = [...sourcesAndDocs(), ...rootFiles.map((entry) => entry.name)].map(
    (file) => `/${file.split(path.sep).join('/')}`,
  );
  const named: string[] = [];
  const missing: string[] = [];
  for (const doc of DOCS) {
    const text = readFileSync(path.join(root, doc), 'utf8');
    // A name or a relative path of agentq's own kinds of source, neither a pattern (`*`) nor a placeholder.
    for (const [, name = ''] of text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\.(?:ts|lua|mjs|cjs))`/g)) {
      named.push(name);
      if (!files.some((file) => file.endsWith(`/${name}`))) missing.push(`${doc}: ${name}`);
    }
  }
  expect(named.length).toBeGreaterThan(100);
  expect([...new Set(missing)]).toEqual([]);
});
