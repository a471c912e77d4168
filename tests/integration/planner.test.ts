import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
/**
 * The planner: a task without an agent becomes a DAG of subtasks across the pools, with real
 * workers, a real Redis and the wire double answering as the planner, the agents and the finisher.
 */
import type { TaskEvent, TaskView } from '@agentq/contract';
import { afterEach, describe, expect, it } from 'vitest';
import type { DoubleReply, DoubleRequest, DoubleRule } from '@agentq/llm';
import { connectRedis, createKeys } from '@agentq/store';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const isPlanner = (request: DoubleRequest) => system(request).startsWith('You are the planner');
const isFinisher = (request: DoubleRequest) => system(request).startsWith('You write the final answer');
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const plannerAsks = (stack: Stack) => stack.double.requests.filter(isPlanner);
const planJson = (plan: unknown) => ({ content: `Here is the plan:\n\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\`` });

/** Rules: the planner answers `plans` in turn; the finisher joins the results; agents answer by their task. */
function scenario(options: {
  plans: DoubleReply[];
  agents: Array<{ when: string; reply: DoubleReply | ((request: DoubleRequest) => DoubleReply) }>;
}): DoubleRule[] {
  let plans = 0;
  return [
    { match: isPlanner, reply: () => options.plans[Math.min(plans++, options.plans.length - 1)]! },
    {
      match: isFinisher,
      reply: (request) => ({
        content: `FINAL from: ${
          promptOf(request)
            .match(/result of \w+/g)
            ?.join(', ') ?? 'nothing'
        }`,
      }),
    },
    ...options.agents.map((agent) => ({
      match: (request: DoubleRequest) => promptOf(request).startsWith(agent.when),
      reply: agent.reply,
    })),
  ];
}

async function eventsOf(stack: Stack, taskId: string): Promise<TaskEvent[]> {
  const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`, {
    headers: { accept: 'application/json' },
  });
  return (await response.json()) as TaskEvent[];
}

describe('a planned task', () => {
  it('is deleted with its subtasks, once every one of them has ended; a subtask alone is not', async () => {
    stack = await startStack({
      rules: scenario({
        plans: [
          planJson([
            { id: '1', agent: 'casual', task: 'step one', need: [] },
            { id: '2', agent: 'casual', task: 'step two', need: ['1'] },
          ]),
        ],
        agents: [
          { when: 'step one', reply: { content: 'result of one' } },
          { when: 'step two', reply: { content: 'result of two' } },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'two steps' }]);
    await waitForEnd(stack.api.url, rootId!);
    const { body: root } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`);
    const [first, second] = root.children!.map((child) => child.id);
    const redis = connectRedis({ url: stack.config.REDIS_URL });
    const keys = createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS);
    const remove = (id: string) => fetch(`${stack!.api.url}/v1/tasks/${id}`, { method: 'DELETE' });
    try {
      const subtask = await remove(first!);
      expect(subtask.status).toBe(409);
      expect(((await subtask.json()) as { error: { message: string } }).error.message).toBe(
        `Task "${first}" is a subtask of ${rootId}: delete that task, which removes its subtasks with it.`,
      );
      // As a subtask still stopping after its task was cancelled: its worker would write on.
      await redis.hset(keys.task(second!), 'status', 'running');
      const running = await remove(rootId!);
      expect(running.status).toBe(409);
      expect(((await running.json()) as { error: { message: string } }).error.message).toMatch(
        new RegExp(
          `^Subtask ${second!.replace(/\./g, '\\.')} of task "${rootId}" is running: only a task that has ended`,
        ),
      );
      await redis.hset(keys.task(second!), 'status', 'completed');
      expect((await remove(rootId!)).status).toBe(204);
      expect(
        await redis.exists(
          ...[rootId!, first!, second!].flatMap((id) => [keys.task(id), keys.events(id), keys.messages(id)]),
        ),
      ).toBe(0);
      expect(await redis.exists(keys.scratchpad(rootId!), keys.finishedSubtasks(rootId!))).toBe(0);
      expect((await fetch(`${stack.api.url}/v1/tasks/${second}`)).status).toBe(404);
    } finally {
      redis.disconnect();
    }
  });

  it('is deleted in bulk with its batch: every ended task with its subtasks, but one whose subtask has not ended', async () => {
    stack = await startStack({
      rules: scenario({
        plans: [planJson([{ id: '1', agent: 'casual', task: 'step one', need: [] }])],
        agents: [
          { when: 'step one', reply: { content: 'result of one' } },
          { when: 'alone', reply: { content: 'alone done' } },
          { when: 'another batch', reply: { content: 'kept' } },
        ],
      }),
      worker: { sweepIntervalMs: 100 },
    });
    const post = (body: unknown) =>
      fetch(`${stack!.api.url}/v1/tasks/bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const submitted = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        batch: 'nightly',
        tasks: [{ prompt: 'plan a' }, { prompt: 'plan b' }, { prompt: 'alone', agent: 'casual' }],
      }),
    });
    const ids = ((await submitted.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    const [kept] = await stack.submit([{ prompt: 'another batch', agent: 'casual' }]);
    for (const id of [...ids, kept!]) await waitForEnd(stack.api.url, id);
    const [held, gone] = await Promise.all(
      ids
        .slice(0, 2)
        .map(async (id) => (await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)).body.children![0]!.id),
    );
    // Their work directories (these tasks wrote no file: made here), which a worker's sweep removes.
    const workdir = (id: string) => path.join(stack!.dataDir, 'work', id);
    for (const id of [...ids, gone!, held!]) mkdirSync(workdir(id), { recursive: true });
    const redis = connectRedis({ url: stack.config.REDIS_URL });
    const keys = createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS);
    try {
      // Not ended: nothing of its status is deleted, and the request says what is.
      const refused = await post({ action: 'delete', batch: 'nightly', status: 'running' });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
        'Only completed, failed, skipped, cancelled tasks can be deleted; got status running.',
      );
      // As a subtask still stopping after its task was cancelled: its tree stays, the others go.
      await redis.hset(keys.task(held!), 'status', 'running');
      expect(await (await post({ action: 'delete', batch: 'nightly' })).json()).toEqual({
        action: 'delete',
        matched: 3,
        changed: 2,
        more: false,
      });
      expect(
        await redis.exists(
          ...[ids[1]!, gone!, ids[2]!].flatMap((id) => [keys.task(id), keys.events(id), keys.messages(id)]),
        ),
      ).toBe(0);
      expect(await redis.exists(keys.task(ids[0]!), keys.task(held!), keys.task(kept!))).toBe(3);
      await expect
        .poll(() => [ids[1]!, gone!, ids[2]!].some((id) => existsSync(workdir(id))), { timeout: 5_000 })
        .toBe(false);
      expect([ids[0]!, held!].every((id) => existsSync(workdir(id)))).toBe(true);
      const listed = (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?batch=nightly`)).body.tasks;
      expect(listed.map((task) => task.id)).toEqual([ids[0]!]);
      // Once it ended, the tree goes too; the task of another batch stays.
      await redis.hset(keys.task(held!), 'status', 'completed');
      expect(await (await post({ action: 'delete', batch: 'nightly' })).json()).toEqual({
        action: 'delete',
        matched: 1,
        changed: 1,
        more: false,
      });
      expect(await redis.exists(keys.task(ids[0]!), keys.task(held!), keys.scratchpad(ids[0]!))).toBe(0);
      expect((await fetch(`${stack.api.url}/v1/tasks/${kept}`)).status).toBe(200);
    } finally {
      redis.disconnect();
    }
  });

  it('runs a diamond: 2 and 3 at the same time after 1, and 4 gets both results', async () => {
    stack = await startStack({
      env: { AGENTQ_CONCURRENCY: '2' },
      rules: scenario({
        plans: [
          planJson([
            { id: '1', agent: 'coder', task: 'step one', need: [] },
            { id: '2', agent: 'coder', task: 'step two', need: ['1'] },
            { id: '3', agent: 'casual', task: 'step three', need: ['1'] },
            { id: '4', agent: 'casual', task: 'step four', need: ['2', '3'] },
          ]),
        ],
        agents: [
          { when: 'step one', reply: { content: 'result of one' } },
          { when: 'step two', reply: { content: 'result of two', delayMs: 400 } },
          { when: 'step three', reply: { content: 'result of three', delayMs: 400 } },
          {
            when: 'step four',
            reply: (request) => ({
              content: `result of four (saw: ${promptOf(request)
                .match(/result of (two|three)/g)
                ?.join(' + ')})`,
            }),
          },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'do the diamond', priority: 8 }]);
    const rootEvents = await waitForEnd(stack.api.url, rootId!);

    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root).toMatchObject({ status: 'completed', agent: 'planner', progress: { done: 4, ended: 4, total: 4 } });
    expect(root.result).toMatch(/^FINAL from: result of one, result of two, result of three, result of four/);
    expect(root.plan!.map((node) => [node.id, node.agent, node.need])).toEqual([
      ['1', 'coder', []],
      ['2', 'coder', ['1']],
      ['3', 'casual', ['1']],
      ['4', 'casual', ['2', '3']],
    ]);
    expect(root.children!.map((child) => [child.planId, child.status])).toEqual([
      ['1', 'completed'],
      ['2', 'completed'],
      ['3', 'completed'],
      ['4', 'completed'],
    ]);
    const childUsage = await Promise.all(
      root.children!.map(
        async (child) => (await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${child.id}`)).body.usage,
      ),
    );
    expect(root.totalUsage!.promptTokens).toBe(
      root.usage.promptTokens + childUsage.reduce((sum, usage) => sum + usage.promptTokens, 0),
    );

    // 4 received both results in its prompt.
    const four = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${root.children![3]!.id}`)).body;
    expect(four).toMatchObject({
      result: 'result of four (saw: result of two + result of three)',
      priority: 8,
      parentId: rootId,
      rootId,
    });

    // 2 and 3 ran at the same time.
    const span = async (id: string) => {
      const own = await eventsOf(stack!, id);
      return {
        start: Date.parse(own.find((event) => event.type === 'task.started')!.ts),
        end: Date.parse(own.find((event) => event.type === 'task.completed')!.ts),
      };
    };
    const [two, three] = await Promise.all([span(root.children![1]!.id), span(root.children![2]!.id)]);
    const overlapMs = Math.min(two.end, three.end) - Math.max(two.start, three.start);
    console.log(
      `diamond: subtasks 2 and 3 overlapped for ${overlapMs} ms (2: ${two.end - two.start} ms, 3: ${three.end - three.start} ms)`,
    );
    expect(overlapMs).toBeGreaterThan(300);

    // The root's stream: the plan, the subtasks queued and their ends, then its own end; no gaps.
    const types = rootEvents.map((event) => event.event);
    expect(types.slice(0, 2)).toEqual(['task.queued', 'task.started']);
    expect(types).toContain('plan.created');
    const queued = rootEvents.filter((event) => event.event === 'subtask.queued');
    expect(queued).toHaveLength(4);
    // 1's end released 2 and 3 together: one write queued both.
    const [, queuedTwo, queuedThree] = queued.map((event) => event.data as { seq: number; ts: string });
    expect([queuedThree!.seq - queuedTwo!.seq, queuedThree!.ts]).toEqual([1, queuedTwo!.ts]);
    expect(rootEvents.filter((event) => event.event === 'task.completed' && event.data.taskId !== rootId)).toHaveLength(
      4,
    );
    expect(rootEvents.at(-1)!.data).toMatchObject({ type: 'task.completed', taskId: rootId });
    expect(rootEvents.map((event) => event.data.seq)).toEqual(rootEvents.map((_, index) => index + 1));
    // Each subtask has its own stream too.
    expect((await eventsOf(stack, root.children![0]!.id)).map((event) => event.type)).toEqual([
      'task.queued',
      'task.started',
      'llm.request',
      'llm.response',
      'step.completed',
      'task.completed',
    ]);
    // No model call between subtasks: one plan, four agents, one final answer.
    expect(stack.double.requests).toHaveLength(6);
  });

  it('accepts a plan of one subtask', async () => {
    stack = await startStack({
      rules: scenario({
        plans: [planJson([{ id: 'only', agent: 'casual', task: 'step solo', need: [] }])],
        agents: [{ when: 'step solo', reply: { content: 'result of solo' } }],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'small' }]);
    await waitForEnd(stack.api.url, rootId!);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body).toMatchObject({
      status: 'completed',
      result: 'FINAL from: result of solo',
    });
  });

  const good = planJson([{ id: '1', agent: 'casual', task: 'step fine', need: [] }]);
  it.each([
    [
      'an unknown agent',
      planJson([{ id: '1', agent: 'wizard', task: 't', need: [] }]),
      'subtask 1 uses agent "wizard", which does not exist: use one of coder, file, casual, web',
    ],
    [
      'a need that does not exist',
      planJson([
        { id: '1', agent: 'casual', task: 'a', need: [] },
        { id: '2', agent: 'casual', task: 'b', need: [] },
        { id: '3', agent: 'casual', task: 'c', need: ['7'] },
      ]),
      'subtask 3 needs 7, which does not exist',
    ],
    [
      'a duplicate id',
      planJson([
        { id: '1', agent: 'casual', task: 'a', need: [] },
        { id: '1', agent: 'casual', task: 'b', need: [] },
      ]),
      'subtask id 1 is used twice: give every subtask its own id',
    ],
    [
      'a cycle',
      planJson([
        { id: '1', agent: 'casual', task: 'a', need: ['2'] },
        { id: '2', agent: 'casual', task: 'b', need: ['1'] },
      ]),
      'subtasks 1 -> 2 -> 1 need each other in a cycle',
    ],
    [
      'a subtask that needs itself',
      planJson([{ id: '1', agent: 'casual', task: 'a', need: ['1'] }]),
      'subtask 1 needs itself',
    ],
    ['a missing field', planJson([{ id: '1', agent: 'casual', need: [] }]), 'subtask #1 field "task": '],
    ['an empty plan', planJson([]), 'plan: must hold at least one subtask'],
    [
      'too many subtasks',
      planJson(
        Array.from({ length: 4 }, (_, index) => ({ id: String(index + 1), agent: 'casual', task: 't', need: [] })),
      ),
      'the plan has 4 subtasks; at most 3 are allowed: merge some',
    ],
    ['an answer that is not JSON', { content: '```json\n{"plan": [ {"id": 1,\n```' }, 'The plan is not valid JSON'],
  ])('answers %s with the exact error, and runs the fixed plan', async (_case, bad, error) => {
    stack = await startStack({
      env: { AGENTQ_MAX_SUBTASKS: '3' },
      rules: scenario({ plans: [bad, good], agents: [{ when: 'step fine', reply: { content: 'result of fine' } }] }),
    });
    const [rootId] = await stack.submit([{ prompt: 'plan it' }]);
    await waitForEnd(stack.api.url, rootId!);
    const asks = plannerAsks(stack);
    expect(asks).toHaveLength(2);
    const feedback = String(asks[1]!.messages.at(-1)!.content);
    expect(feedback).toMatch(/^The plan was not accepted:\n- /);
    expect(feedback).toContain(error);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body).toMatchObject({
      status: 'completed',
      result: 'FINAL from: result of fine',
    });
  });

  it('fails with the errors when the model never fixes its plan', async () => {
    stack = await startStack({
      env: { AGENTQ_PLAN_ATTEMPTS: '2' },
      rules: scenario({ plans: [planJson([{ id: '1', agent: 'casual', task: 'a', need: ['9'] }])], agents: [] }),
    });
    const [rootId] = await stack.submit([{ prompt: 'plan it' }]);
    await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root).toMatchObject({
      status: 'failed',
      error: {
        code: 'invalid_plan',
        message: 'The planner gave no valid plan in 2 attempts: subtask 1 needs 9, which does not exist',
      },
    });
    expect(plannerAsks(stack)).toHaveLength(2);
  });

  it('skips the subtasks that need a failed one while an independent branch completes', async () => {
    stack = await startStack({
      env: { AGENTQ_REPLANS: '0' },
      rules: scenario({
        plans: [
          planJson([
            { id: '1', agent: 'casual', task: 'step doomed', need: [] },
            { id: '2', agent: 'casual', task: 'step after', need: ['1'] },
            { id: '3', agent: 'casual', task: 'step later', need: ['2'] },
            { id: '4', agent: 'casual', task: 'step free', need: [] },
          ]),
        ],
        agents: [
          { when: 'step doomed', reply: { error: { status: 400, message: 'context too long' } } },
          { when: 'step free', reply: { content: 'result of free', delayMs: 300 } },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'partly doomed' }]);
    const rootEvents = await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root.children!.map((child) => [child.planId, child.status])).toEqual([
      ['1', 'failed'],
      ['2', 'skipped'],
      ['3', 'skipped'],
      ['4', 'completed'],
    ]);
    expect(root).toMatchObject({ status: 'failed', error: { code: 'subtasks_failed' } });
    expect(root.error!.message).toMatch(
      /^3 of 4 steps did not complete: step 1 failed \(The LLM endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(model test-model\) answered 400: .*context too long\); step 2 skipped \(skipped: it needs subtask 1, which failed\); step 3 skipped \(skipped: it needs subtask 2, which was skipped\)/,
    );
    expect(root.result).toMatch(/Partial results:[\s\S]*### Step 4 \(casual, completed\): step free\nresult of free/);
    const skipped = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${root.children![1]!.id}`)).body;
    expect(skipped.error).toEqual({ code: 'needs_failed', message: 'skipped: it needs subtask 1, which failed' });
    expect(
      rootEvents.flatMap((event) =>
        event.data.type === 'task.failed' && event.data.taskId !== rootId ? [event.data.data.status] : [],
      ),
    ).toEqual(expect.arrayContaining(['failed', 'skipped', 'skipped']));
    // No subtask of a failed need was ever sent to the model.
    expect(stack.double.requests.some((request) => promptOf(request).startsWith('step after'))).toBe(false);
  });

  it('re-plans once around a failure', async () => {
    stack = await startStack({
      rules: scenario({
        plans: [
          planJson([{ id: '1', agent: 'casual', task: 'step doomed', need: [] }]),
          planJson([{ id: 'a', agent: 'casual', task: 'step rescue', need: [] }]),
        ],
        agents: [
          { when: 'step doomed', reply: { error: { status: 400, message: 'nope' } } },
          { when: 'step rescue', reply: { content: 'result of rescue' } },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'try twice' }]);
    await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root).toMatchObject({ status: 'completed', result: 'FINAL from: result of rescue' });
    expect(root.plan!.map((node) => [node.id, node.version])).toEqual([
      ['1', 1],
      ['a', 2],
    ]);
    expect(String(plannerAsks(stack)[1]!.messages.at(-1)!.content)).toMatch(
      /^Some steps did not complete: step 1 failed/,
    );
  });

  it('runs a plan its client gave: no planning call, its subtasks as a DAG, then the final answer', async () => {
    stack = await startStack({
      rules: scenario({
        plans: [planJson([{ id: 'x', agent: 'casual', task: 'step never', need: [] }])],
        agents: [
          { when: 'step one', reply: { content: 'result of one' } },
          {
            when: 'step two',
            reply: (request) => ({
              content: `result of two (saw: ${
                promptOf(request)
                  .match(/result of one/g)
                  ?.join(' + ') ?? 'nothing'
              })`,
            }),
          },
          { when: 'step three', reply: { content: 'result of three' } },
        ],
      }),
    });
    const plan = [
      { id: 'fetch', agent: 'coder', task: 'step one', need: [] },
      { id: 'sum', agent: 'casual', task: 'step two', need: ['fetch'] },
      // `need` may be left out: none.
      { id: 'aside', agent: 'file', task: 'step three' },
    ];
    const [rootId] = await stack.submit([{ prompt: 'run my plan', plan, priority: 7 }]);
    const rootEvents = await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root).toMatchObject({ status: 'completed', agent: 'planner', progress: { done: 3, ended: 3, total: 3 } });
    expect(root.result).toBe('FINAL from: result of one, result of two, result of one, result of three');
    expect(root.plan!.map((node) => [node.id, node.agent, node.task, node.need, node.version])).toEqual([
      ['fetch', 'coder', 'step one', [], 1],
      ['sum', 'casual', 'step two', ['fetch'], 1],
      ['aside', 'file', 'step three', [], 1],
    ]);
    // Started, then planned (the run's start goes out with the plan), with no gap in its stream.
    expect(rootEvents.slice(0, 3).map((event) => event.event)).toEqual(['task.queued', 'task.started', 'plan.created']);
    expect(rootEvents.map((event) => event.data.seq)).toEqual(rootEvents.map((_, index) => index + 1));
    const created = rootEvents.find((event) => event.event === 'plan.created')!.data as {
      data: { given?: boolean; plan: Array<{ id: string }> };
    };
    expect(created.data).toMatchObject({ given: true, plan: [{ id: 'fetch' }, { id: 'sum' }, { id: 'aside' }] });
    // The subtask that needs another got its result, and kept the root's priority.
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${root.children![1]!.id}`)).body).toMatchObject({
      result: 'result of two (saw: result of one)',
      priority: 7,
    });
    // No model was asked for a plan: three agents and one final answer.
    expect(plannerAsks(stack)).toHaveLength(0);
    expect(stack.double.requests).toHaveLength(4);
  });

  it('does not re-plan a plan its client gave: it fails with what its steps did, and a retry runs the same plan', async () => {
    stack = await startStack({
      env: { AGENTQ_REPLANS: '1' },
      rules: scenario({
        plans: [planJson([{ id: 'x', agent: 'casual', task: 'step rescue', need: [] }])],
        agents: [
          { when: 'step doomed', reply: { error: { status: 400, message: 'nope' } } },
          { when: 'step fine', reply: { content: 'result of fine' } },
        ],
      }),
    });
    const plan = [
      { id: 'a', agent: 'casual', task: 'step fine', need: [] },
      { id: 'b', agent: 'casual', task: 'step doomed', need: ['a'] },
    ];
    const [rootId] = await stack.submit([{ prompt: 'my doomed plan', plan }]);
    await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect(root).toMatchObject({
      status: 'failed',
      error: {
        code: 'subtasks_failed',
        message: expect.stringMatching(/^1 of 2 steps did not complete: step b failed/),
      },
    });
    expect(root.result).toMatch(/Partial results:[\s\S]*### Step a \(casual, completed\): step fine\nresult of fine/);
    // Its two steps were the only model calls: no re-plan was asked for, and no final answer.
    expect(stack.double.requests.map(promptOf)).toEqual([
      expect.stringContaining('step fine'),
      expect.stringContaining('step doomed'),
    ]);
    const retry = (await (await fetch(`${stack.api.url}/v1/tasks/${rootId}/retry`, { method: 'POST' })).json()) as {
      id: string;
    };
    await waitForEnd(stack.api.url, retry.id);
    const again = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${retry.id}`)).body;
    expect(again).toMatchObject({ status: 'failed', error: { code: 'subtasks_failed' } });
    expect(again.plan!.map((node) => [node.id, node.task, node.need])).toEqual([
      ['a', 'step fine', []],
      ['b', 'step doomed', ['a']],
    ]);
    expect(plannerAsks(stack)).toHaveLength(0);
  });

  it('refuses a plan its client gave with what to change, and stores nothing', async () => {
    stack = await startStack({ pools: [], env: { AGENTQ_MAX_SUBTASKS: '3' } });
    const step = (id: string, need: string[] = [], agent = 'casual') => ({ id, agent, task: `do ${id}`, need });
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      [
        'an agent beside the plan',
        { agent: 'coder', plan: [step('1')] },
        'tasks.0.agent',
        'a task with a plan is planned: each subtask names its agent; leave "agent" out',
      ],
      [
        'an unknown agent',
        { plan: [step('1', [], 'wizard')] },
        'tasks.0.plan.0.agent',
        '"wizard" is not an agent of this install; agents: "coder", "file", "casual", "web"',
      ],
      [
        'a need that does not exist',
        { plan: [step('1'), step('2', ['7'])] },
        'tasks.0.plan',
        'subtask 2 needs 7, which does not exist',
      ],
      [
        'a duplicate id',
        { plan: [step('1'), step('1')] },
        'tasks.0.plan',
        'subtask id 1 is used twice: give every subtask its own id',
      ],
      [
        'a cycle',
        { plan: [step('1', ['2']), step('2', ['1'])] },
        'tasks.0.plan',
        'subtasks 1 -> 2 -> 1 need each other in a cycle',
      ],
      ['an empty plan', { plan: [] }, 'tasks.0.plan', 'must hold at least one subtask'],
      [
        'more subtasks than AGENTQ_MAX_SUBTASKS',
        { plan: [step('1'), step('2'), step('3'), step('4')] },
        'tasks.0.plan',
        'has 4 subtasks; at most 3 are allowed here (AGENTQ_MAX_SUBTASKS): merge some',
      ],
      [
        'a misspelt field',
        { plan: [{ id: '1', agent: 'casual', task: 'do 1', needs: [] }] },
        'tasks.0.plan.0',
        'unknown field "needs": the fields are "id", "agent", "task", "need"',
      ],
      [
        'a subtask without work',
        { plan: [{ id: '1', agent: 'casual', task: '  ' }] },
        'tasks.0.plan.0.task',
        'must describe the work',
      ],
    ];
    for (const [name, fields, path, message] of cases) {
      const response = await fetch(`${stack.api.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tasks: [{ prompt: 'mine', ...fields }] }),
      });
      expect(response.status, name).toBe(400);
      const { error } = (await response.json()) as { error: { details: Array<{ path: string; message: string }> } };
      expect(error.details, name).toContainEqual({ path, message: expect.stringContaining(message) });
    }
    expect((await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks`)).body.tasks).toEqual([]);
  });

  it('cancelling the root cancels every subtask, running or waiting for its needs', async () => {
    stack = await startStack({
      env: { AGENTQ_CONCURRENCY: '2' },
      rules: scenario({
        plans: [
          planJson([
            { id: '1', agent: 'casual', task: 'step slow1', need: [] },
            { id: '2', agent: 'coder', task: 'step slow2', need: [] },
            { id: '3', agent: 'casual', task: 'step later', need: ['1'] },
          ]),
        ],
        agents: [
          // Ten minutes: the subtasks end only because the cancel aborted their calls.
          { when: 'step slow1', reply: { content: 'late', delayMs: 600_000 } },
          { when: 'step slow2', reply: { content: 'late', delayMs: 600_000 } },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'long haul' }]);
    await expect
      .poll(() => stack!.double.requests.filter((request) => promptOf(request).startsWith('step slow')).length, {
        timeout: 10_000,
      })
      .toBe(2);
    expect((await fetch(`${stack.api.url}/v1/tasks/${rootId}/cancel`, { method: 'POST' })).status).toBe(202);
    await expect
      .poll(
        async () =>
          ((await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${rootId}`)).body.children ?? []).map(
            (child) => child.status,
          ),
        { timeout: 5_000 },
      )
      .toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body.status).toBe('cancelled');
  });

  it("a 429 on the planner holds the task's planning for Retry-After instead of failing the task", async () => {
    stack = await startStack({
      env: { AGENTQ_CONFIG: configFile({ planner: { concurrency: 1 } }) },
      rules: [
        {
          match: isPlanner,
          times: 1,
          reply: { error: { status: 429, message: 'Rate limit reached', headers: { 'retry-after': '2' } } },
        },
        ...scenario({
          plans: [planJson([{ id: '1', agent: 'casual', task: 'step any', need: [] }])],
          agents: [{ when: 'step any', reply: { content: 'result of any' } }],
        }),
      ],
    });
    const roots = await stack.submit([{ prompt: 'first' }]);
    await Promise.all(roots.map((id) => waitForEnd(stack!.api.url, id)));
    for (const id of roots)
      expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body.status).toBe('completed');
    const plannerTimes = stack.double.requests.flatMap((request, index) =>
      isPlanner(request) ? [stack!.double.receivedAt[index]!] : [],
    );
    expect(plannerTimes[1]! - plannerTimes[0]!).toBeGreaterThanOrEqual(1_900);
  });

  it('shares memory between subtasks: one writes, the next reads', async () => {
    const toolResult = (request: DoubleRequest) => request.messages.find((message) => message.role === 'tool')?.content;
    stack = await startStack({
      rules: scenario({
        plans: [
          planJson([
            { id: '1', agent: 'coder', task: 'step write', need: [] },
            { id: '2', agent: 'file', task: 'step read', need: ['1'] },
          ]),
        ],
        agents: [
          {
            when: 'step write',
            reply: (request) =>
              toolResult(request)
                ? { content: 'result of write' }
                : { toolCalls: [{ name: 'memory_set', arguments: { key: 'secret', value: 'forty-two' } }] },
          },
          {
            when: 'step read',
            reply: (request) =>
              toolResult(request)
                ? { content: `result of read: ${toolResult(request)}` }
                : { toolCalls: [{ name: 'memory_get', arguments: { key: 'secret' } }] },
          },
        ],
      }),
    });
    const [rootId] = await stack.submit([{ prompt: 'share' }]);
    await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${root.children![1]!.id}`)).body.result).toBe(
      'result of read: forty-two',
    );
  });
});
