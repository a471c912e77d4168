/**
 * What a step costs Redis in writes, through the Redis journal: an answer that asks for a tool goes out
 * with the call's announcement, before the tool runs, however long the tool then takes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BUILTIN_TOOLS } from '@agentq/contract';
import { runAgent } from '@agentq/core';
import { createScriptedModel } from '@agentq/llm';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { createRedisJournal, Transitions } from '@agentq/tasks';
import { builtinTools, createToolSettings } from '@agentq/tools';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';

const prefix = freshPrefix('step-writes');
let store: TaskStore;
let transitions: Transitions;
let workdir: string;

beforeAll(async () => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), createKeys(prefix));
  transitions = new Transitions(store);
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-step-writes-'));
});
afterAll(async () => {
  store.redis.disconnect();
  await deletePrefix(prefix);
  await rm(workdir, { recursive: true, force: true });
});

it('writes a step whose tool runs long in two commits: the answer with its announced call, then the result', async () => {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'coder' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await transitions.claim(task, { runToken: 'run' });
  const commits: string[][] = [];
  store.observe((commit) => commits.push(commit.events.map((event) => event.type)));
  const journal = createRedisJournal({
    store,
    taskId: task.id,
    tenant: 'acme',
    agent: 'coder',
    worker: 'w1',
    runToken: 'run',
  });
  // Longer than a call may run unannounced (300 ms): before, its announcement was a write of its own.
  const model = createScriptedModel({
    script: [{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.6; echo slept' } }] }, { content: 'done' }],
  });
  const outcome = await runAgent({
    model,
    journal,
    tools: builtinTools(BUILTIN_TOOLS),
    systemPrompt: 'You are a test agent.',
    prompt: 'Sleep.',
    toolContext: createToolSettings({ workdir, isolation: { kind: 'none' } }),
    maxSteps: 5,
    signal: new AbortController().signal,
  });
  expect(outcome).toMatchObject({ status: 'completed', answer: 'done' });
  // (the final answer is held for the run's outcome, which this test does not write)
  expect(commits).toEqual([
    ['llm.request', 'llm.response', 'tool.call'],
    ['tool.result', 'step.completed'],
  ]);
  const events = await store.events(task.id);
  const call = events.find((event) => event.type === 'tool.call')!;
  const result = events.find((event) => event.type === 'tool.result')!;
  // Announced before it ran: its time is the answer's, at least the tool's run before its result.
  expect(Date.parse(result.ts) - Date.parse(call.ts)).toBeGreaterThanOrEqual(550);
});
