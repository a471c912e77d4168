/**
 * Worker processes seen from outside: one killed mid-task (its job is picked up by another worker
 * process and resumes at its last completed step, without repeating the model calls already
 * answered), and a cancel that must reach the process that holds a task.
 */
import type { TaskView } from '@agentq/contract';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { processesMatching, processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const running: AgentqProcess[] = [];
let double: OpenAIDouble | undefined;
let dataDir: string | undefined;
const prefix = freshPrefix('crash');

afterEach(async () => {
  await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')));
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The API and one coder worker as processes on the double; submits one task and returns its id. */
async function startProcesses(options: { label: string; prompt: string; env?: Record<string, string> }) {
  dataDir = await mkdtemp(path.join(tmpdir(), `agentq-${options.label}-`));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double!.baseURL,
    model: `${options.label}-model`,
    ...(options.env ? { extra: options.env } : {}),
  });
  const api = spawnAgentq(['api'], env);
  const worker = spawnAgentq(['worker', '--pools', 'coder'], env);
  running.push(api, worker);
  const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving coder/);
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: options.prompt, agent: 'coder' }] }),
  });
  const taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
  return { env, worker, baseUrl, taskId, dataDir };
}

it("resumes a crashed worker's task on another worker at its last completed step", async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'step1.txt', content: 'one' } }] },
      },
      // The first worker dies while this call is in flight; the second gets an answer.
      {
        match: (request) => toolResults(request) === 1,
        times: 1,
        reply: { content: 'never delivered', delayMs: 60_000 },
      },
      { reply: { content: 'finished after the crash' } },
    ],
  });
  const {
    env,
    worker: first,
    baseUrl,
    taskId,
  } = await startProcesses({ label: 'crash', prompt: 'survive', env: { AGENTQ_JOB_LOCK_MS: '2000' } });

  // Wait until step 2's model call has reached the model, then kill the worker outright.
  await expect
    .poll(() => double!.requests.filter((request) => toolResults(request) === 1).length, { timeout: 20_000 })
    .toBe(1);
  await first.stop('SIGKILL');

  const second = spawnAgentq(['worker', '--pools', 'coder'], env);
  running.push(second);
  const events = await waitForEnd(baseUrl, taskId);

  const task = (await (await fetch(`${baseUrl}/v1/tasks/${taskId}`)).json()) as TaskView;
  expect(task).toMatchObject({ status: 'completed', result: 'finished after the crash', steps: 2 });
  // Step 1's model call was made once, by the first worker; it was not repeated.
  expect(double.requests.filter((request) => toolResults(request) === 0)).toHaveLength(1);
  expect(events.filter((event) => event.event === 'tool.call')).toHaveLength(1);
  expect(events.map((event) => event.data.seq)).toEqual(events.map((_, index) => index + 1));
  const starts = events.filter((event) => event.event === 'task.started').map((event) => event.data);
  expect(starts).toHaveLength(2);
  expect(starts[1]!.data).toMatchObject({ resumed: true });
  expect(starts[0]!.worker).not.toBe(starts[1]!.worker);
  expect(events.filter((event) => event.event === 'step.completed').map((event) => event.data.step)).toEqual([1, 2]);
});

it('a cancel reaches the worker process that holds the task, and kills its tool', async () => {
  const marker = `6${Date.now() % 1_000_000}`;
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: `echo $$ > shell.pid; sleep ${marker}` } }] },
      },
      { reply: { content: 'never' } },
    ],
  });
  const { baseUrl, taskId, dataDir: workRoot } = await startProcesses({ label: 'cancel', prompt: 'sleep' });
  const pidFile = path.join(workRoot, 'work', taskId, 'shell.pid');
  await expect
    .poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', { timeout: 10_000 })
    .toBe(true);
  expect(processesMatching(`sleep ${marker}`).length).toBeGreaterThan(0);

  // The tool sleeps for days: the task ends only because the cancel reached the worker and killed it.
  await fetch(`${baseUrl}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
  const events = await waitForEnd(baseUrl, taskId);
  expect(events.at(-1)!.event).toBe('task.cancelled');
  // What ran stays recorded, and the tool's process is gone.
  expect(events.find((event) => event.event === 'tool.result')!.data.data).toMatchObject({
    ok: false,
    output: expect.stringMatching(/\[cancelled: the task was cancelled while this ran\]/),
  });
  await expect.poll(() => processesMatching(`sleep ${marker}`), { timeout: 2_000 }).toEqual([]);
  expect(double.requests).toHaveLength(1);
});
