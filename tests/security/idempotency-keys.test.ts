/**
 * A client chooses its idempotency keys, so a key is bound to exactly one thing: one tenant's task, made
 * from one body. Against a real API and worker process on a Redis prefix of their own: the same key with
 * the same body answers the task it made (`existing: true`); with another body, a 409
 * `idempotency_mismatch` naming that task, and nothing of the request is made, in a batch of any size;
 * one key given twice in a request with two bodies is a 400; another tenant's key of the same name
 * never answers, names or reaches the first tenant's task; a key stored before keys held a digest (a
 * task id alone) still answers its task.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { createKeys } from '@agentq/store';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';

const prefix = freshPrefix('idempotency');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
const BETA = `beta-${randomBytes(8).toString('hex')}`;

let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;

beforeAll(async () => {
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-idempotency-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'idempotency',
    extra: tenantsEnv({ acme: { keys: [ACME] }, beta: { keys: [BETA] } }),
  });
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'casual'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving casual/);
}, 60_000);

afterAll(async () => {
  await Promise.all([api, worker].map((process) => process?.stop('SIGKILL')));
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

interface Submitted {
  tasks: Array<{ id: string; status: string; existing?: true }>;
}
interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

async function submit(
  key: string,
  body: unknown,
): Promise<{ status: number; body: Submitted & ErrorBody; text: string }> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Submitted & ErrorBody, text };
}

/** How many tasks the tenant holds (every page of its list). */
async function taskCount(key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
  return ((await response.json()) as { tasks: { stored: number } }).tasks.stored;
}

const ORDER = { prompt: 'pay invoice 10', agent: 'casual', metadata: { invoice: 10, currency: 'EUR' } };

/** A task of ACME's made from ORDER under `idempotencyKey`: its id. */
async function order(idempotencyKey: string): Promise<string> {
  const made = await submit(ACME, { tasks: [{ ...ORDER, idempotencyKey }] });
  expect(made.status, made.text).toBe(202);
  expect(made.body.tasks[0]!.existing).toBeUndefined();
  return made.body.tasks[0]!.id;
}

describe('an idempotency key sent again', () => {
  it('answers the task it made when the body is the same (its JSON keys in any order)', async () => {
    const first = await order('order-1');
    const again = await submit(ACME, {
      tasks: [
        {
          idempotencyKey: 'order-1',
          metadata: { currency: 'EUR', invoice: 10 },
          agent: 'casual',
          prompt: ORDER.prompt,
        },
      ],
    });
    expect(again.status, again.text).toBe(202);
    expect(again.body.tasks).toEqual([expect.objectContaining({ id: first, existing: true })]);
  });

  it('answers 409 idempotency_mismatch naming the task it made when any field of the body differs', async () => {
    const first = await order('order-1b');
    const before = await taskCount(ACME);
    const variants: Array<[string, unknown]> = [
      ['prompt', { tasks: [{ ...ORDER, prompt: 'pay invoice 11', idempotencyKey: 'order-1b' }] }],
      ['metadata', { tasks: [{ ...ORDER, metadata: { invoice: 11, currency: 'EUR' }, idempotencyKey: 'order-1b' }] }],
      ['priority', { tasks: [{ ...ORDER, priority: 9, idempotencyKey: 'order-1b' }] }],
      ['files', { tasks: [{ ...ORDER, files: [{ path: 'a.txt', content: 'YQ==' }], idempotencyKey: 'order-1b' }] }],
      [
        'plan',
        {
          tasks: [
            { prompt: ORDER.prompt, plan: [{ id: '1', agent: 'casual', task: 'pay' }], idempotencyKey: 'order-1b' },
          ],
        },
      ],
      ['batch', { batch: 'march', tasks: [{ ...ORDER, idempotencyKey: 'order-1b' }] }],
    ];
    for (const [field, body] of variants) {
      const answer = await submit(ACME, body);
      console.log(`another ${field}: ${answer.status} ${answer.text.slice(0, 300)}`);
      expect(answer.status, field).toBe(409);
      expect(answer.body.error.code).toBe('idempotency_mismatch');
      expect(answer.body.error.message).toContain(first);
      expect(answer.body.error.details).toEqual({ tasks: [{ index: 0, idempotencyKey: 'order-1b', taskId: first }] });
    }
    expect(await taskCount(ACME)).toBe(before);
  });

  it('refuses a batch with one mismatched task whole: none of its tasks is made, in one call or in many', async () => {
    const first = await order('order-1c');
    const before = await taskCount(ACME);
    const small = await submit(ACME, {
      tasks: [
        { prompt: 'new, no key', agent: 'casual' },
        { prompt: 'new, keyed', agent: 'casual', idempotencyKey: 'order-2' },
        { ...ORDER, prompt: 'changed', idempotencyKey: 'order-1c' },
      ],
    });
    expect(small.status, small.text).toBe(409);
    expect(small.body.error.details).toEqual({ tasks: [{ index: 2, idempotencyKey: 'order-1c', taskId: first }] });
    // 450 tasks are three CREATE calls: the mismatch in the last refuses the first two as well.
    const many = await submit(ACME, {
      tasks: [
        ...Array.from({ length: 449 }, (_, index) => ({ prompt: `bulk ${index}`, agent: 'casual' })),
        { ...ORDER, prompt: 'changed', idempotencyKey: 'order-1c' },
      ],
    });
    console.log(`450 tasks, the last mismatched: ${many.status} ${many.text.slice(0, 200)}`);
    expect(many.status, many.text.slice(0, 300)).toBe(409);
    expect(many.body.error.details).toEqual({ tasks: [{ index: 449, idempotencyKey: 'order-1c', taskId: first }] });
    expect(await taskCount(ACME)).toBe(before);
    // The new key of the refused batch made nothing: it makes its task now.
    const fresh = await submit(ACME, { tasks: [{ prompt: 'new, keyed', agent: 'casual', idempotencyKey: 'order-2' }] });
    expect(fresh.status).toBe(202);
    expect(fresh.body.tasks[0]!.existing).toBeUndefined();
  });

  it('refuses one key given twice in a request with two bodies (400, naming both places)', async () => {
    const answer = await submit(ACME, {
      tasks: [
        { prompt: 'one', agent: 'casual', idempotencyKey: 'twice' },
        { prompt: 'another', agent: 'casual', idempotencyKey: 'twice' },
      ],
    });
    expect(answer.status, answer.text).toBe(400);
    expect(answer.text).toMatch(/tasks\.1\.idempotencyKey/);
    expect(answer.text).toMatch(/tasks\[0\]|tasks\.0/);
  });
});

describe("another tenant's key of the same name", () => {
  it('never answers, names or reaches the first tenant’s task, whatever the body', async () => {
    const acme = await submit(ACME, { tasks: [{ ...ORDER, idempotencyKey: 'shared-name' }] });
    expect(acme.status).toBe(202);
    const acmeTask = acme.body.tasks[0]!.id;
    // The very same body from beta: a task of beta's own, made now.
    const beta = await submit(BETA, { tasks: [{ ...ORDER, idempotencyKey: 'shared-name' }] });
    expect(beta.status, beta.text).toBe(202);
    expect(beta.body.tasks[0]!.id).not.toBe(acmeTask);
    expect(beta.body.tasks[0]!.existing).toBeUndefined();
    // Another body from beta: the mismatch names beta's task, never acme's.
    const changed = await submit(BETA, { tasks: [{ ...ORDER, prompt: 'steal', idempotencyKey: 'shared-name' }] });
    expect(changed.status).toBe(409);
    expect(changed.text).toContain(beta.body.tasks[0]!.id);
    expect(changed.text).not.toContain(acmeTask);
    const read = await fetch(`${baseUrl}/v1/tasks/${acmeTask}`, { headers: { authorization: `Bearer ${BETA}` } });
    expect(read.status).toBe(404);
    // And acme's key still answers acme's task.
    const again = await submit(ACME, { tasks: [{ ...ORDER, idempotencyKey: 'shared-name' }] });
    expect(again.body.tasks[0]).toMatchObject({ id: acmeTask, existing: true });
  });
});

describe('a key stored before keys held a digest', () => {
  it('still answers its task, whatever the body (nothing to compare it with)', async () => {
    const made = await submit(ACME, { tasks: [{ ...ORDER, idempotencyKey: 'order-legacy' }] });
    const id = made.body.tasks[0]!.id;
    // As an earlier agentq stored it: the task id alone.
    const redis = new Redis(redisUrl());
    const key = createKeys(prefix).cells[0]!.idempotency('acme', 'order-legacy');
    expect(await redis.get(key)).toMatch(new RegExp(`^${id}`));
    await redis.set(key, id, 'KEEPTTL');
    redis.disconnect();
    for (const prompt of [ORDER.prompt, 'another body']) {
      const again = await submit(ACME, { tasks: [{ ...ORDER, prompt, idempotencyKey: 'order-legacy' }] });
      expect(again.status, again.text).toBe(202);
      expect(again.body.tasks[0]).toMatchObject({ id, existing: true });
    }
  });
});
