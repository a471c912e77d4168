/**
 * How soon a SIGKILLed worker's task runs again on another worker: within AGENTQ_JOB_LOCK_MS of the
 * kill. Four kills in a row, each measured from the kill to the resumed task's `task.started` event.
 */
import type { TaskEvent } from '@agentq/contract';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, stopSpawned, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';

const LOCK_MS = 2_000;
const prefix = freshPrefix('resume');
let double: OpenAIDouble | undefined;
let dataDir: string | undefined;

afterAll(async () => {
  await stopSpawned();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

it(`runs a killed worker's task again within AGENTQ_JOB_LOCK_MS (${LOCK_MS} ms)`, async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 120' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-resume-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'resume-model',
    extra: { AGENTQ_JOB_LOCK_MS: String(LOCK_MS) },
  });
  const api = spawnAgentq(['api'], env);
  const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  const startWorker = async (): Promise<AgentqProcess> => {
    const worker = spawnAgentq(['worker', '--pools', 'coder'], env);
    await worker.waitFor(/serving coder/);
    return worker;
  };
  const events = async (taskId: string) =>
    (await (
      await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, { headers: { accept: 'application/json' } })
    ).json()) as TaskEvent[];

  const resumes: number[] = [];
  let current = await startWorker();
  for (let kill = 0; kill < 4; kill++) {
    const response = await fetch(`${baseUrl}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: `survive ${kill}`, agent: 'coder' }] }),
    });
    const taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
    // The task is in its tool on the only worker there is; then a second worker comes, and the first dies.
    await expect
      .poll(async () => (await events(taskId)).some((event) => event.type === 'tool.call'), {
        timeout: 15_000,
        interval: 50,
      })
      .toBe(true);
    const next = await startWorker();
    const killedAt = Date.now();
    await current.stop('SIGKILL');
    const resumed = await expect
      .poll(
        async () =>
          (await events(taskId)).find(
            (event) => event.type === 'task.started' && (event.data as { resumed?: boolean }).resumed,
          ),
        { timeout: 4 * LOCK_MS, interval: 25 },
      )
      .toBeDefined()
      .then(async () =>
        (await events(taskId)).find(
          (event) => event.type === 'task.started' && (event.data as { resumed?: boolean }).resumed,
        )!,
      );
    resumes.push(Date.parse(resumed.ts) - killedAt);
    await fetch(`${baseUrl}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
    current = next;
  }
  const sorted = [...resumes].sort((a, b) => a - b);
  console.log(
    `resume after SIGKILL with AGENTQ_JOB_LOCK_MS=${LOCK_MS}: ${resumes.join(', ')} ms (p50 ${sorted[Math.floor(sorted.length / 2)]}, max ${sorted.at(-1)})`,
  );
  // Within the setting, with a little room for the new worker to write its start.
  for (const ms of resumes) expect(ms).toBeLessThan(LOCK_MS + 250);
}, 90_000);
