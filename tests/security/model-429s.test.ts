/**
 * A model's 429s, attacked from outside (round 4). A tenant's prompts can draw 429s every time (its own
 * prompt too large for the provider's tokens per minute, "Request too large ... on tokens per min"). On a
 * model with shared limits (models.<m>.limits) the 429's Retry-After blocked the model for every tenant:
 * with Retry-After: 40 from the hostile tenant's calls, another tenant's 3 tasks on that model took
 * 40,077 ms (now they are held as on a model without limits: that tenant's calls only). There such a task
 * was not bounded either: attempts: 1 and a 429 with Retry-After: 1 every time, still queued after 45 s
 * and 42 calls (now: failed after at most 3). A 429 saying insufficient_quota in error.type only (code
 * null) was taken for a rate: 4 calls and "answered 429 (rate limited)" (now it fails at its first).
 * A Retry-After given as an HTTP date (RFC 9110) 20 s ahead was not believed: called again within
 * seconds, the task failed after 3 calls in 2.8 s (now it waits the 20 s, and its second call is served).
 * Real API and worker processes, the wire double as the model.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { firstUserText, startOpenAIDouble, type DoubleReply, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd, waitForEventWhere } from '../helpers/sse.js';

const HOSTILE = `hostile-${randomBytes(8).toString('hex')}`;
const VICTIM = `victim-${randomBytes(8).toString('hex')}`;
const prefix = freshPrefix('model-429s');

const calls = new Map<string, number>();
let datedUntil: number | undefined;
const callsOf = (prompt: string) => calls.get(prompt) ?? 0;
const reply = (request: DoubleRequest): DoubleReply => {
  const prompt = firstUserText(request);
  calls.set(prompt, (calls.get(prompt) ?? 0) + 1);
  const limited = /^LIMITED\[(.*)\]/.exec(prompt);
  if (limited)
    return {
      error: {
        status: 429,
        message: 'Request too large for gpt-x in organization org-1 on tokens per min (TPM): Limit 30000',
        type: 'tokens',
        code: 'rate_limit_exceeded',
        headers: limited[1] === 'none' ? {} : { 'retry-after': limited[1]! },
      },
    };
  if (prompt.startsWith('DATED')) {
    // The provider asks, as an HTTP date (RFC 9110), to wait until 20 s after the first call; then it answers.
    datedUntil ??= Math.ceil((Date.now() + 20_000) / 1000) * 1000;
    if (Date.now() < datedUntil)
      return {
        error: {
          status: 429,
          message: 'Rate limit reached for requests',
          type: 'requests',
          code: 'rate_limit_exceeded',
          headers: { 'retry-after': new Date(datedUntil).toUTCString() },
        },
      };
  }
  if (prompt.startsWith('QUOTA'))
    return {
      error: {
        status: 429,
        message: 'You exceeded your current quota, please check your plan and billing details.',
        type: 'insufficient_quota',
      },
    };
  return { content: 'served' };
};

let double: OpenAIDouble;
let dataDir: string;
let env: Record<string, string>;
let api: AgentqProcess;
const workers: AgentqProcess[] = [];
let baseUrl: string;

const startWorker = async () => {
  const worker = spawnAgentq(['worker', '--pools', 'casual'], env);
  workers.push(worker);
  await worker.waitFor(/serving casual/);
  return worker;
};

beforeAll(async () => {
  double = await startOpenAIDouble({ rules: [{ reply }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-model-429s-'));
  env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'm',
    extra: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: '10',
      ...tenantsEnv(
        { hostile: { keys: [HOSTILE] }, victim: { keys: [VICTIM] } },
        {
          agents: {
            casual: {
              description: 'chats',
              instructions: 'You are a helpful assistant.',
              retry: { attempts: 2, maxAttempts: 3 },
            },
          },
          models: {
            m: { outage: { rateLimitedWaits: 2 } },
            dated: { outage: { rateLimitedWaits: 2 } },
            bounded: { limits: { rpm: 10_000, tpm: 10_000_000 }, outage: { rateLimitedWaits: 2 } },
            shared: { limits: { rpm: 10_000, tpm: 10_000_000 }, outage: { rateLimitedWaits: 2 } },
          },
        },
      ),
    },
  });
  api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await Promise.all([startWorker(), startWorker()]);
}, 60_000);

afterAll(async () => {
  await Promise.all([api, ...workers].map((process) => process?.stop('SIGKILL')));
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function submit(key: string, tasks: unknown[]): Promise<string[]> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify({ tasks }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

async function taskOf(key: string, id: string): Promise<TaskView> {
  return (await (await fetch(`${baseUrl}/v1/tasks/${id}`, { headers: auth(key) })).json()) as TaskView;
}

const isRateLimitedWait = (event: TaskEvent) => event.type === 'task.queued' && event.data.rateLimited === true;

describe('429s on a model with shared limits (models.<m>.limits)', () => {
  it("hold only the tenant that drew them, never another tenant's tasks", async () => {
    const limited = await submit(
      HOSTILE,
      Array.from({ length: 3 }, (_, index) => ({ prompt: `LIMITED[40] (${index})`, agent: 'casual', model: 'shared' })),
    );
    await Promise.all(limited.map((id) => waitForEventWhere(baseUrl, id, isRateLimitedWait, auth(HOSTILE))));
    const started = Date.now();
    const victims = await submit(
      VICTIM,
      Array.from({ length: 3 }, (_, index) => ({
        prompt: `fine on shared ${index}`,
        agent: 'casual',
        model: 'shared',
      })),
    );
    await Promise.all(victims.map((id) => waitForEnd(baseUrl, id, auth(VICTIM))));
    const waitedMs = Date.now() - started;
    const tasks = await Promise.all(victims.map((id) => taskOf(VICTIM, id)));
    console.log(`shared-limits model, hostile 429s with Retry-After: 40: the victim's 3 tasks took ${waitedMs} ms`);
    expect(tasks.map((task) => task.status)).toEqual(['completed', 'completed', 'completed']);
    expect(waitedMs).toBeLessThan(15_000);
  }, 120_000);
});

async function endsWithin(key: string, id: string, ms: number): Promise<boolean> {
  return Promise.race([
    waitForEnd(baseUrl, id, auth(key)).then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
}

describe('a task that draws a 429 every time', () => {
  // On a model without limits, rate-limit-hold.test.ts: failed after 3 calls (rateLimitedWaits: 2, attempts: 1).
  it('on a model with shared limits ends bounded by its attempts too', async () => {
    const prompt = 'LIMITED[1] on a shared-limits model, attempts 1';
    const started = Date.now();
    const [id] = await submit(HOSTILE, [{ prompt, agent: 'casual', model: 'bounded', retry: { attempts: 1 } }]);
    const ended = await endsWithin(HOSTILE, id!, 45_000);
    const task = await taskOf(HOSTILE, id!);
    console.log(
      `shared-limits model, 429 with Retry-After: 1 every time, attempts: 1: ended ${ended}, ${task.status} after ` +
        `${Date.now() - started} ms and ${callsOf(prompt)} calls (each 429 blocks the model for every tenant)`,
    );
    expect(task.status).toBe('failed');
    expect(callsOf(prompt)).toBeLessThanOrEqual(3);
  }, 90_000);

  it('with error.type insufficient_quota (no error.code) fails at once', async () => {
    const prompt = 'QUOTA, said in the type only';
    const [id] = await submit(HOSTILE, [{ prompt, agent: 'casual' }]);
    const ended = await endsWithin(HOSTILE, id!, 20_000);
    const task = await taskOf(HOSTILE, id!);
    console.log(
      `429 {type: insufficient_quota, code: null}: ended ${ended}, ${task.status} after ${callsOf(prompt)} calls in 20 s`,
    );
    expect(task.status).toBe('failed');
    expect(task.error?.message).toMatch(/insufficient_quota/);
    expect(callsOf(prompt)).toBe(1);
  }, 60_000);
});

describe('Retry-After as an HTTP date', () => {
  it('is waited out, not retried at once until the task fails', async () => {
    const prompt = 'DATED retry-after';
    const started = Date.now();
    const [id] = await submit(VICTIM, [{ prompt, agent: 'casual', model: 'dated', retry: { attempts: 1 } }]);
    await endsWithin(VICTIM, id!, 60_000);
    const task = await taskOf(VICTIM, id!);
    console.log(
      `429s with Retry-After: <HTTP date 20 s ahead>: ${task.status} after ${Date.now() - started} ms and ` +
        `${callsOf(prompt)} calls: ${task.error?.message.slice(0, 80)}`,
    );
    expect(task.status).toBe('completed');
    expect(callsOf(prompt)).toBe(2);
  }, 90_000);
});
