/**
 * Approval before a tool runs, through the real API and real worker processes: an agent whose `bash`
 * calls need a person's approval. A call under the rule does not run until approved (its task waits,
 * holding no worker slot), runs once when approved (on whichever worker takes it), and a rejected one
 * reaches the model with the reason. Two calls of one answer are decided one by one; a time limit
 * rejects what nobody decided; a waiting task can be cancelled and retried.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AgentqApiError, createClient, type TaskView } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { spawnAgentq } from '../helpers/processes.js';
import { waitForEnd, waitForEvent, type SseMessage } from '../helpers/sse.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

let fleet: Fleet;
let client: ReturnType<typeof createClient>;

const prompt = (request: DoubleRequest) => String(request.messages[1]?.content ?? '');
const toolMessages = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool');
/** Each call appends a line to count.txt and says how many lines it holds: a call that ran twice says 2. */
const countingCall = (id: string) => ({
  id,
  name: 'bash',
  arguments: { command: 'echo ran >> count.txt && wc -l < count.txt' },
});

beforeAll(async () => {
  const bash = { tool: 'bash' };
  fleet = await startFleet({
    name: 'approvals',
    model: 'approvals-model',
    workers: 2,
    pools: 'ops,hurried',
    env: {
      AGENTQ_WEBHOOK_SECRET: WEBHOOK_SECRET,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTQ_CONFIG: configFile({
        agents: {
          ops: {
            description: 'runs commands once a person approves them',
            instructions: 'You run commands.',
            tools: ['bash'],
            approvals: { rules: [bash] },
          },
          hurried: {
            description: 'runs commands a person must approve within a second',
            instructions: 'You run commands.',
            tools: ['bash'],
            approvals: { rules: [bash], timeoutMinutes: 0.02 },
          },
        },
      }),
    },
    rules: [
      {
        match: (request) => prompt(request).startsWith('two calls') && toolMessages(request).length === 0,
        reply: { toolCalls: [countingCall('first'), countingCall('second')] },
      },
      {
        // A model names its calls as it likes: names an object has of its own must not pass for decisions.
        match: (request) => prompt(request).startsWith('hostile ids') && toolMessages(request).length === 0,
        reply: { toolCalls: [countingCall('__proto__'), countingCall('constructor'), countingCall('toString')] },
      },
      {
        match: (request) => toolMessages(request).length === 0,
        reply: { toolCalls: [countingCall('only')] },
      },
      // The answer says what each call's result was, as the model read it.
      {
        reply: (request) => ({
          content: toolMessages(request)
            .map((message) => message.content)
            .join(' | '),
        }),
      },
    ],
  });
  client = createClient({ baseUrl: fleet.baseUrl });
}, 60_000);

afterAll(() => fleet?.stop());

async function waitingTask(agent: string, text: string): Promise<TaskView> {
  const [id] = await client.submit([{ prompt: text, agent }]);
  await waitForEvent(fleet.baseUrl, id!, 'task.waiting');
  return client.get(id!);
}

const activeJobs = async (pool: string) => {
  const { pools } = await client.request<{ pools: Array<{ name: string; counts: { active: number } }> }>(
    'GET',
    '/v1/pools',
  );
  return pools.find((one) => one.name === pool)!.counts.active;
};

const eventsOf = (events: SseMessage[], type: string) => events.filter((event) => event.event === type);

it('runs nothing until approved, holds no worker slot while it waits, and runs the call once', async () => {
  const task = await waitingTask('ops', 'count');
  expect(task.status).toBe('waiting');
  expect(task.waitingFor).toEqual({
    kind: 'approval',
    calls: [
      {
        id: 'only',
        name: 'bash',
        arguments: JSON.stringify(countingCall('only').arguments),
        rule: 'every bash call',
        decision: null,
      },
    ],
    expiresAt: null,
  });
  // Nothing ran: no folder, no file; and no worker holds its job.
  expect((await client.files.list(task.id)).files).toEqual([]);
  expect(await activeJobs('ops')).toBe(0);

  expect(await client.decide(task.id, { callId: 'only', approve: true })).toEqual({
    id: task.id,
    status: 'queued',
    remaining: 0,
  });
  const events = await waitForEnd(fleet.baseUrl, task.id);
  const ended = await client.get(task.id);
  expect(ended).toMatchObject({ status: 'completed', result: '1', waitingFor: null });
  expect(eventsOf(events, 'tool.result')).toHaveLength(1);
  expect(new TextDecoder().decode(await client.files.download(task.id, 'count.txt'))).toBe('ran\n');
  expect(eventsOf(events, 'approval.decided').map((event) => event.data.data)).toEqual([
    { id: 'only', name: 'bash', approve: true },
  ]);
  // The stored log stays gapless across the wait.
  expect(events.map((event) => event.data.seq)).toEqual(events.map((_, index) => index + 1));

  const again = await client.decide(task.id, { callId: 'only', approve: false }).catch((error: unknown) => error);
  expect(again).toBeInstanceOf(AgentqApiError);
  expect((again as AgentqApiError).status).toBe(409);
});

it('answers a rejected call to the model with the reason, and runs nothing', async () => {
  const task = await waitingTask('ops', 'count, please');
  await client.decide(task.id, { callId: 'only', approve: false, reason: 'not on a Friday' });
  await waitForEnd(fleet.baseUrl, task.id);
  const ended = await client.get(task.id);
  expect(ended.status).toBe('completed');
  expect(ended.result).toContain("needs a person's approval, and a person rejected it: not on a Friday");
  expect((await client.files.list(task.id)).files).toEqual([]);
});

it('decides two calls of one answer one by one, and resumes once both are', async () => {
  const task = await waitingTask('ops', 'two calls');
  expect(task.waitingFor?.kind === 'approval' && task.waitingFor.calls.map((call) => call.id)).toEqual([
    'first',
    'second',
  ]);
  const unknown = await client.decide(task.id, { callId: 'third', approve: true }).catch((error: unknown) => error);
  expect((unknown as AgentqApiError).message).toMatch(/No call "third" .* those that do: first, second/);

  expect(await client.decide(task.id, { callId: 'second', approve: false, reason: 'once is enough' })).toMatchObject({
    status: 'waiting',
    remaining: 1,
  });
  const between = await client.get(task.id);
  expect(between.status).toBe('waiting');
  expect(between.waitingFor?.kind === 'approval' && between.waitingFor.calls.map((call) => call.decision)).toEqual([
    null,
    { approve: false, reason: 'once is enough' },
  ]);
  expect(await activeJobs('ops')).toBe(0);

  await client.decide(task.id, { callId: 'first', approve: true });
  await waitForEnd(fleet.baseUrl, task.id);
  const ended = await client.get(task.id);
  expect(ended.result).toMatch(/^1 \| Not run: .*a person rejected it: once is enough/);
  expect(new TextDecoder().decode(await client.files.download(task.id, 'count.txt'))).toBe('ran\n');
});

it('decides many at once without losing one: each call is decided once', async () => {
  const task = await waitingTask('ops', 'two calls');
  const outcomes = await Promise.allSettled(
    ['first', 'second', 'first', 'second'].map((callId) => client.decide(task.id, { callId, approve: true })),
  );
  // Each call is decided by exactly one request; the other answers 409.
  expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(2);
  await waitForEnd(fleet.baseUrl, task.id);
  expect(new TextDecoder().decode(await client.files.download(task.id, 'count.txt'))).toBe('ran\nran\n');
});

it('decides calls whose ids are names every object has (__proto__, constructor, toString), each once', async () => {
  const task = await waitingTask('ops', 'hostile ids');
  const ids = ['__proto__', 'constructor', 'toString'];
  expect(task.waitingFor?.kind === 'approval' && task.waitingFor.calls.map((call) => [call.id, call.decision])).toEqual(
    ids.map((id) => [id, null]),
  );
  expect(await client.decide(task.id, { callId: 'constructor', approve: false, reason: 'no' })).toMatchObject({
    remaining: 2,
  });
  expect(await client.decide(task.id, { callId: '__proto__', approve: true })).toMatchObject({ remaining: 1 });
  expect(await client.decide(task.id, { callId: 'toString', approve: true })).toMatchObject({
    status: 'queued',
    remaining: 0,
  });
  await waitForEnd(fleet.baseUrl, task.id);
  const ended = await client.get(task.id);
  expect(ended.status).toBe('completed');
  // The two approved ran, once each; the rejected one did not.
  expect(new TextDecoder().decode(await client.files.download(task.id, 'count.txt'))).toBe('ran\nran\n');
  expect(ended.result).toMatch(/^1 \| Not run: .*a person rejected it: no\. .* \| 2$/);
});

it("rejects what nobody decided within the agent's time limit", async () => {
  const task = await waitingTask('hurried', 'count');
  expect(task.waitingFor?.kind === 'approval' && task.waitingFor.expiresAt).toMatch(/^\d{4}-/);
  const events = await waitForEnd(fleet.baseUrl, task.id);
  expect(eventsOf(events, 'approval.decided').map((event) => event.data.data)).toEqual([
    { id: 'only', name: 'bash', approve: false, expired: true },
  ]);
  expect((await client.get(task.id)).result).toContain('nobody approved it in time');
});

it("tells a task's webhook what waits: each call, its arguments and its rule", async () => {
  const hook = await startWebhookReceiver();
  try {
    const [id] = await client.submit([
      { prompt: 'count', agent: 'ops', webhook: { url: hook.url, events: ['task.waiting'] } },
    ]);
    const [delivery] = await hook.receivedCount(1);
    const { secret } = await client.webhooks.secret();
    const body = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>);
    expect(body).toMatchObject({
      type: 'task.waiting',
      data: {
        id,
        status: 'waiting',
        waitingFor: {
          kind: 'approval',
          calls: [{ id: 'only', name: 'bash', rule: 'every bash call', decision: null }],
        },
      },
    });
    await client.cancel(id!);
  } finally {
    await hook.close();
  }
});

it('can be cancelled while it waits, and retried', async () => {
  const task = await waitingTask('ops', 'count');
  await client.cancel(task.id);
  await waitForEnd(fleet.baseUrl, task.id);
  expect((await client.get(task.id)).status).toBe('cancelled');
  const late = await client.decide(task.id, { callId: 'only', approve: true }).catch((error: unknown) => error);
  expect((late as AgentqApiError).message).toMatch(/is cancelled, with no call awaiting approval/);

  const retried = await client.retry(task.id);
  await waitForEvent(fleet.baseUrl, retried.id, 'task.waiting');
  expect((await client.get(retried.id)).waitingFor).toMatchObject({ kind: 'approval', calls: [{ id: 'only' }] });
  // Decided from the command line this time.
  const cli = spawnAgentq(['approve', retried.id, 'only', '--url', fleet.baseUrl], {});
  expect(await cli.exited).toBe(0);
  expect(cli.output()).toBe(`approved; ${retried.id} is queued again\n`);
  await waitForEnd(fleet.baseUrl, retried.id);
  expect((await client.get(retried.id)).result).toBe('1');
});
