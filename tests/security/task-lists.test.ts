/**
 * A tenant filling its task list with large prompts (and large metadata) to make every list of it huge:
 * a page of `GET /v1/tasks` was every listed task's whole prompt, tens of megabytes for one request, read
 * whole from Redis by the API. A list shows each prompt's first 1,024 bytes (cut on a character
 * boundary, `truncated: true`), built in Redis; a page stops at 4 MiB with a cursor; a prompt is at most
 * 200,000 bytes at submit; `GET /v1/tasks/:id` still has it whole. Against a real API and worker process.
 */
import type { TaskSummaryView, TaskView } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { apiCall } from '../helpers/api-call.js';

const MIB = 1024 * 1024;
const PREVIEW_BYTES = 1024;
const prefix = freshPrefix('task-lists');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
const BETA = `beta-${randomBytes(8).toString('hex')}`;

let dataDir: string;
let api: AgentqProcess | undefined;
let baseUrl: string;

type ListRow = TaskSummaryView & { result?: string | null; truncated: boolean };
type ListPage = { tasks: ListRow[]; nextCursor: string | null };

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-task-lists-'));
  // No worker: the tasks stay queued, as a tenant's backlog does.
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: 'http://127.0.0.1:9/v1',
    model: 'none',
    extra: tenantsEnv({ acme: { keys: [ACME] }, beta: { keys: [BETA] } }),
  });
  api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
}, 60_000);

afterAll(async () => {
  await api?.stop('SIGKILL');
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const call = <T>(key: string, method: string, url: string, body?: unknown) =>
  apiCall<T>(baseUrl, key, method, url, body);

async function submit(key: string, tasks: Array<Record<string, unknown>>): Promise<string[]> {
  const answer = await call<{ tasks: Array<{ id: string }> }>(key, 'POST', '/v1/tasks', { tasks });
  expect(answer.status).toBe(202);
  return answer.body.tasks.map((task) => task.id);
}

/** Every page of a list, following `nextCursor`: their sizes and rows. */
async function allPages(key: string, query: string) {
  const pages: Array<{ bytes: number; rows: number }> = [];
  const rows: ListRow[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; bytes: number; body: ListPage } = await call<ListPage>(
      key,
      'GET',
      `/v1/tasks?${query}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(page.status).toBe(200);
    pages.push({ bytes: page.bytes, rows: page.body.tasks.length });
    rows.push(...page.body.tasks);
    cursor = page.body.nextCursor;
  } while (cursor && pages.length < 100);
  return { pages, rows };
}

describe('a tenant listing tasks with large prompts', () => {
  it('gets each prompt as its first 1,024 bytes, cut on a character, and the whole one from the task', async () => {
    // 100 prompts of 190,000 bytes: ASCII, then 3-byte characters whose cut falls inside one.
    const prompts = Array.from({ length: 100 }, (_, index) =>
      index % 2 ? `${index} `.padEnd(190_000, 'x') : `${index} `.padEnd(63_333, '€'),
    );
    const ids: string[] = [];
    for (let start = 0; start < prompts.length; start += 20)
      ids.push(
        ...(await submit(
          ACME,
          prompts.slice(start, start + 20).map((prompt) => ({ prompt, agent: 'casual' })),
        )),
      );
    for (const query of ['limit=500&fields=summary', 'limit=500']) {
      const list = await allPages(ACME, query);
      console.log(`GET /v1/tasks?${query} of 100 tasks of 190 KB prompts: pages ${JSON.stringify(list.pages)}`);
      expect(list.pages.every((page) => page.bytes < 512 * 1024)).toBe(true);
      expect(new Set(list.rows.map((row) => row.id))).toEqual(new Set(ids));
      for (const row of list.rows) {
        const whole = prompts[ids.indexOf(row.id)]!;
        expect(row.truncated).toBe(true);
        expect(Buffer.byteLength(row.prompt)).toBeLessThanOrEqual(PREVIEW_BYTES);
        expect(Buffer.byteLength(row.prompt)).toBeGreaterThan(PREVIEW_BYTES - 4);
        // A prefix of the prompt, no character split (no U+FFFD).
        expect(whole.startsWith(row.prompt)).toBe(true);
      }
    }
    const one = await call<TaskView>(ACME, 'GET', `/v1/tasks/${ids[0]}`);
    expect(one.body.prompt).toBe(prompts[0]);
    // A search still reads each whole prompt (in Redis): text past the preview is found, over the pages
    // (each reads at most 4 MiB of prompts).
    const found = await allPages(ACME, `q=${encodeURIComponent('€€€€')}&limit=500&fields=summary`);
    expect(found.rows).toHaveLength(50);
    expect(found.pages.every((page) => page.bytes < 256 * 1024)).toBe(true);
    // A short prompt is whole, and says so.
    const [short] = await submit(BETA, [{ prompt: 'short one', agent: 'casual' }]);
    const betas = await call<ListPage>(BETA, 'GET', '/v1/tasks');
    expect(betas.body.tasks.find((row) => row.id === short)).toMatchObject({ prompt: 'short one', truncated: false });
  }, 120_000);

  it('caps a page at 4 MiB, with a cursor to the rest, whatever the rows hold', async () => {
    // Metadata of almost 64 KiB each (the most a task may carry): 100 of them are 6 MiB.
    const metadata = { blob: 'm'.repeat(64 * 1024 - 100) };
    const ids: string[] = [];
    for (let start = 0; start < 100; start += 25)
      ids.push(
        ...(await submit(
          BETA,
          Array.from({ length: 25 }, (_, index) => ({ prompt: `meta ${start + index}`, agent: 'casual', metadata })),
        )),
      );
    const list = await allPages(BETA, 'limit=500&fields=summary');
    console.log(`GET /v1/tasks?limit=500 of 100 tasks with 64 KiB metadata: pages ${JSON.stringify(list.pages)}`);
    expect(list.pages.length).toBeGreaterThan(1);
    expect(list.pages.every((page) => page.bytes <= 4 * MIB)).toBe(true);
    const listed = list.rows.map((row) => row.id);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual(expect.arrayContaining(ids));
  }, 120_000);

  it('refuses a prompt past 200,000 bytes at submit, naming the limit and its size', async () => {
    // 100,000 characters, 300,000 bytes.
    const answer = await call<{ error: { code: string; message: string } }>(ACME, 'POST', '/v1/tasks', {
      tasks: [{ prompt: '€'.repeat(100_000), agent: 'casual' }],
    });
    console.log(`a 300,000-byte prompt: ${answer.status} ${answer.body.error?.message}`);
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(/tasks\.0\.prompt/);
    expect(answer.body.error.message).toMatch(/300000 bytes/);
    expect(answer.body.error.message).toMatch(/200000 bytes/);
    const fits = await call(ACME, 'POST', '/v1/tasks', { tasks: [{ prompt: 'x'.repeat(200_000), agent: 'casual' }] });
    expect(fits.status).toBe(202);
  });
});
