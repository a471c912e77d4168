/**
 * An approved call runs at most once, even when its worker dies while it runs. A person approves one
 * `bash` call that is not safe to repeat (it appends a line, then takes seconds); the worker running it
 * is SIGKILLed mid-call (as an OOM kill or a lost node would); another worker process resumes the task.
 * The call must not run again unasked: the model is told it was approved and started, and that its
 * worker stopped before it ended, so it may have run in part or whole. Real API and worker processes,
 * the real jail, the wire double as the model.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, stopSpawned, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';

/** A killed worker's job is taken up again this long after its last lock renewal. */
const LOCK_MS = 2_000;
const DEPLOY = 'echo "deployed at $(date +%s.%N)" >> deploys.log; sleep 8; echo ok';
const prefix = freshPrefix('approvals-crash');
let double: OpenAIDouble;
let dataDir: string;
let env: Record<string, string>;
let baseUrl: string;

const toolMessages = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool');

async function startWorker(): Promise<AgentqProcess> {
  const worker = spawnAgentq(['worker', '--pools', 'ops'], env);
  await worker.waitFor(/serving ops/, 60_000);
  return worker;
}

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolMessages(request).length === 0,
        reply: { toolCalls: [{ id: 'deploy', name: 'bash', arguments: { command: DEPLOY } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-approvals-crash-'));
  env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'deployer',
    extra: {
      AGENTQ_JOB_LOCK_MS: String(LOCK_MS),
      AGENTQ_CONFIG: configFile({
        agents: {
          ops: {
            description: 'deploys what a person approves',
            instructions: 'You deploy.',
            tools: ['bash'],
            approvals: { rules: [{ tool: 'bash' }] },
          },
        },
      }),
    },
  });
  const api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/, 60_000))[1]!;
}, 90_000);

afterAll(async () => {
  await stopSpawned();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('does not run an approved call again after its worker died while it ran', async () => {
  const client = createClient({ baseUrl });
  const first = await startWorker();
  const [id] = await client.submit([{ prompt: 'deploy once', agent: 'ops' }]);
  await waitForEvent(baseUrl, id!, 'task.waiting');
  await client.decide(id!, { callId: 'deploy', approve: true });

  // The call runs: its first line is written, and it sleeps. Its worker dies now.
  const log = path.join(dataDir, 'work', id!, 'deploys.log');
  await expect.poll(() => existsSync(log), { timeout: 30_000, interval: 50 }).toBe(true);
  await first.stop('SIGKILL');
  await startWorker();

  const events = await waitForEnd(baseUrl, id!);
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  const results = events
    .filter((event) => event.event === 'tool.result')
    .map((event) => String((event.data.data as { output?: unknown }).output ?? ''));
  console.log(
    `deploys.log after the resume (${lines.length} lines):\n${lines.join('\n')}\ntool results: ${JSON.stringify(results)}`,
  );
  expect(lines).toHaveLength(1);
  expect(events.at(-1)!.event).toBe('task.completed');
  // Nobody was asked again, and the model read what happened, to check before doing it again.
  expect(events.filter((event) => event.event === 'task.waiting')).toHaveLength(1);
  expect(results).toEqual([expect.stringMatching(/approved.*started.*stopped before it ended.*in part or in whole/s)]);
  const last = double.requests.findLast((request) => toolMessages(request).length > 0)!;
  expect(String(toolMessages(last)[0]!.content)).toBe(results[0]);
}, 180_000);
