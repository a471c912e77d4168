/**
 * agentq installed from its tarballs, as a user's app (or its Docker build) installs it: `npm pack` of
 * the workspaces, an empty folder outside the checkout, `npm install` of the tarballs. The installed
 * `agentq` runs the API and a worker; a program (an ES module), its types (`tsc --noEmit`) and
 * `npx agentq` from that folder submit, wait for and download a task's files through them.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const packageOf = (folder: string) =>
  JSON.parse(readFileSync(path.join(ROOT, folder, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    workspaces: string[];
  };
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;

/** What `npm pack --json` says of each tarball. */
interface Packed {
  name: string;
  filename: string;
  files: Array<{ path: string }>;
}

/** npm as a user runs it: none of the npm_* variables of the npm that started the tests (its workspace, its prefix). */
async function npm(args: string[], cwd: string): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  const { stdout } = await execFileAsync('npm', args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');

const prefix = freshPrefix('packages');
const folders: string[] = [];
let packs: Packed[] = [];
let app = '';
let url = '';
let double: OpenAIDouble | undefined;
const running: AgentqProcess[] = [];

beforeAll(async () => {
  const [tarballs, appFolder, dataDir] = await Promise.all(
    ['agentq-tarballs-', 'agentq-app-', 'agentq-packages-data-'].map((name) => mkdtemp(path.join(tmpdir(), name))),
  );
  folders.push(tarballs!, appFolder!, dataDir!);
  app = appFolder!;
  // npm prints the prepack scripts' lines before its JSON.
  const packed = await npm(['pack', '--workspaces', '--json', '--pack-destination', tarballs!], ROOT);
  packs = JSON.parse(packed.slice(packed.search(/^\[/m))) as Packed[];
  await npm(['init', '-y'], app);
  await npm(
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      // The registry sometimes stalls (as .ci/run says): each fetch is tried again.
      '--fetch-retries=5',
      '--fetch-retry-mintimeout=2000',
      '--fetch-timeout=120000',
      ...packs.map((pack) => path.join(tarballs!, pack.filename)),
      `typescript@${versionOf('typescript')}`,
      `@types/node@${versionOf('@types/node')}`,
    ],
    app,
  );

  double = await startOpenAIDouble({ rules: [{ reply: (request) => ({ content: `done: ${promptOf(request)}` }) }] });
  const env = await processEnv({ prefix, dataDir: dataDir!, modelURL: double.baseURL, model: 'packed-model' });
  // The installed CLI (what `npx agentq` runs), from the app's folder: no agentq.config.yaml there, so
  // the file and prompts shipped in the tarballs.
  const agentqMain = path.join(app, 'node_modules', '@agentq', 'cli', 'dist', 'main.js');
  const api = spawnAgentq(['api'], env, { cwd: app, main: agentqMain });
  const worker = spawnAgentq(['worker', '--pools', 'casual'], env, { cwd: app, main: agentqMain });
  running.push(api, worker);
  url = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving casual/);
}, 300_000);

afterAll(async () => {
  await Promise.all(running.map((process) => process.stop('SIGTERM')));
  await double?.close();
  await deletePrefix(prefix);
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

describe('agentq from its tarballs', () => {
  it('packs each workspace with its built code and shipped files, nothing secret or test-only', () => {
    expect(packs.map((pack) => pack.name).sort()).toEqual(
      packageOf('.')
        .workspaces.map((folder) => packageOf(folder).name)
        .sort(),
    );
    const allowed = [
      /^package\.json$/,
      /^dist\/.+\.(js|d\.ts)(\.map)?$/,
      /^src\/.+\.ts$/,
      /^scripts\/.+\.lua$/,
      /^public\/[\w-]+\.(html|css)$/,
      /^shipped\/(agentq\.config\.yaml|agentq\.config\.schema\.json|\.env\.example|prompts\/[\w-]+\.md)$/,
    ];
    for (const pack of packs) {
      const files = pack.files.map((file) => file.path);
      expect(
        files.filter((file) => !allowed.some((pattern) => pattern.test(file))),
        pack.name,
      ).toEqual([]);
      expect(
        // `.env.example` holds no value (config init copies it); any other .env file would.
        files.filter((file) => /\.test\.|tsbuildinfo|tsconfig|(^|\/)\.env(?!\.example$)|\.npmrc/.test(file)),
        pack.name,
      ).toEqual([]);
    }
    const filesOf = (name: string) => packs.find((pack) => pack.name === name)!.files.map((file) => file.path);
    expect(filesOf('@agentq/client')).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts']));
    expect(filesOf('@agentq/contract')).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts']));
    expect(filesOf('@agentq/cli')).toContain('dist/main.js');
    expect(filesOf('@agentq/store')).toContain('scripts/commit.lua');
    expect(filesOf('@agentq/config')).toEqual(
      expect.arrayContaining(['shipped/agentq.config.yaml', 'shipped/prompts/coder.md', 'shipped/prompts/planner.md']),
    );
  });

  it('serves the dashboard, its contract and its client from the installed API', async () => {
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    for (const asset of ['/assets/contract/index.js', '/assets/client/index.js', '/assets/main.js']) {
      const response = await fetch(`${url}${asset}`);
      expect(response.status, asset).toBe(200);
      expect(response.headers.get('content-type'), asset).toMatch(/javascript/);
    }
  });

  it("submits, waits for and downloads a task's files from an ES module that imports the installed client", async () => {
    await writeFile(
      path.join(app, 'use-client.mjs'),
      `import { AgentqApiError, createClient } from '@agentq/client';
const agentq = createClient({ baseUrl: process.env.AGENTQ_URL });
const [id] = await agentq.submit([
  {
    prompt: 'keep these files',
    agent: 'casual',
    files: [
      { path: 'notes/hello.txt', content: Buffer.from('hello from a tarball').toString('base64') },
      { path: 'raw.bin', content: new Uint8Array([0, 1, 254, 255]) },
    ],
  },
]);
const task = await agentq.wait(id, { timeoutMs: 60_000 });
const listed = await agentq.files.list(id);
const hello = new TextDecoder().decode(await agentq.files.download(id, 'notes/hello.txt'));
const raw = [...(await agentq.files.download(id, 'raw.bin'))];
const missing = await agentq.get('01f6dd9a-1890-458d-a3e8-10066049cecf').catch((error) => error);
console.log(JSON.stringify({
  status: task.status,
  result: task.result,
  files: listed.files.map((file) => file.path).sort(),
  hello,
  raw,
  missing: missing instanceof AgentqApiError ? missing.code : String(missing),
}));
`,
    );
    const { stdout } = await execFileAsync(process.execPath, ['use-client.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH ?? '', AGENTQ_URL: url },
    });
    expect(JSON.parse(stdout)).toEqual({
      status: 'completed',
      result: 'done: keep these files',
      files: ['notes/hello.txt', 'raw.bin'],
      hello: 'hello from a tarball',
      raw: [0, 1, 254, 255],
      missing: 'not_found',
    });
    // The worker read the agent's instructions from the prompts shipped in the tarballs.
    const asked = double!.requests.find((request) => promptOf(request).includes('keep these files'))!;
    expect(asked.messages[0]).toMatchObject({
      role: 'system',
      content: readFileSync(path.join(ROOT, 'prompts', 'casual.md'), 'utf8').trim(),
    });
  });

  it('type-checks a TypeScript program against the installed types (tsc --noEmit)', async () => {
    await writeFile(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2023',
          noEmit: true,
          types: ['node'],
        },
        files: ['typed.ts'],
      }),
    );
    await writeFile(
      path.join(app, 'typed.ts'),
      `import { AgentqApiError, createClient, type TaskView } from '@agentq/client';
import { TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';

const agentq = createClient({ baseUrl: 'http://127.0.0.1:8080' });
export async function run(): Promise<string | null> {
  const [id] = await agentq.submit([{ prompt: 'typed', agent: 'casual', files: [{ path: 'a.txt', content: 'YQ==' }] }]);
  const task: TaskView = await agentq.wait(id!, { timeoutMs: 1_000 });
  const status: TaskStatus = task.status;
  const bytes: Uint8Array = await agentq.files.download(task.id, 'a.txt');
  void bytes;
  // @ts-expect-error: a prompt is text (the types are real, not any)
  await agentq.submit([{ prompt: 42 }]);
  try {
    await agentq.get(id!);
  } catch (error) {
    if (error instanceof AgentqApiError) return error.code;
  }
  return TERMINAL_STATUSES.has(status) ? task.result ?? null : null;
}
`,
    );
    // The app's own TypeScript (installed beside the tarballs), as its build would run it.
    const tsc = await execFileAsync(
      process.execPath,
      [path.join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', '.'],
      {
        cwd: app,
      },
    ).catch((error: { stdout?: string; code?: number }) => ({ stdout: error.stdout ?? '', failed: error.code }));
    expect(tsc).toEqual({ stdout: '', stderr: '' });
  }, 120_000);

  it('runs npx agentq submit, watch and result from the installed CLI', async () => {
    const npx = async (args: string[], input?: string) => {
      const child = execFileAsync('npx', ['--no', '--', 'agentq', ...args, '--url', url], {
        cwd: app,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? app, NO_COLOR: '1' },
      });
      if (input !== undefined) child.child.stdin!.end(input);
      return (await child).stdout;
    };
    expect(await npx(['--version'])).toBe(`agentq ${packageOf('apps/cli').version}\n`);
    const [id, ...rest] = (await npx(['submit', '-', '--agent', 'casual'], 'from the cli\n')).trim().split('\n');
    expect(rest).toEqual([]);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const watched = await npx(['watch', id!]);
    expect(watched).toMatch(/ completed\n\nAnswer\ndone: from the cli\n$/);
    expect(await npx(['result', id!])).toBe('done: from the cli\n');
  }, 120_000);

  it('writes a starting folder that checks, with npx agentq config init, from the installed CLI', async () => {
    const folder = path.join(app, 'starter');
    const run = (args: string[]) =>
      execFileAsync('npx', ['--no', '--', 'agentq', ...args], {
        cwd: app,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? app, NO_COLOR: '1' },
      });
    const init = await run(['config', 'init', folder]);
    expect(init.stdout).toMatch(/wrote .*agentq\.config\.schema\.json\n/);
    expect(init.stdout).toMatch(/wrote .*\.env\.example\n/);
    const check = await run(['config', 'check', path.join(folder, 'agentq.config.yaml')]);
    // Exits 0 (else execFile throws), printing the file as it takes effect.
    expect(check.stdout).toMatch(/casual/);
  }, 120_000);
});
