/** The API and a worker in this process, on a fresh key prefix, with the wire double as the LLM. */
import type { AgentPool } from '@agentq/contract';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startApi, type ApiHandle } from '@agentq/api';
import { loadConfig, poolNames, type Config } from '@agentq/config';
import { startOpenAIDouble, type DoubleRule, type OpenAIDouble } from '@agentq/llm';
import type { Logger } from '@agentq/telemetry';
import { startWorker, type StartWorkerOptions, type WorkerHandle } from '@agentq/worker';
import { deletePrefix, freshPrefix, redisUrl } from './redis.js';

export interface Stack {
  api: ApiHandle;
  worker: WorkerHandle | undefined;
  double: OpenAIDouble;
  config: Config;
  dataDir: string;
  submit(tasks: unknown[]): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * `logger`: where the API's and the worker's lines go (default: nowhere, AGENTQ_LOG_LEVEL=silent);
 * `worker`: the worker's timings, where a test needs others than its defaults.
 */
export async function startStack(
  options: {
    rules?: DoubleRule[];
    pools?: AgentPool[];
    env?: Record<string, string>;
    logger?: Logger;
    worker?: Pick<StartWorkerOptions, 'admitIntervalMs' | 'sweepIntervalMs'>;
  } = {},
): Promise<Stack> {
  const double = await startOpenAIDouble({ rules: options.rules ?? [] });
  const prefix = freshPrefix();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-stack-'));
  const config = loadConfig({
    env: {
      PORT: '0',
      REDIS_URL: redisUrl(),
      AGENTQ_REDIS_PREFIX: prefix,
      AGENTQ_DATA_DIR: dataDir,
      OPENAI_BASE_URL: double.baseURL,
      AGENTQ_MODEL: 'test-model',
      AGENTQ_LLM_MAX_RETRIES: '0',
      // In-process API and worker: their log lines would go straight to the test runner's output.
      AGENTQ_LOG_LEVEL: 'silent',
      // AGENTQ_TEST_CELLS=4 runs every stack's install in cells (docs/DESIGN.md, "Cells").
      ...(process.env.AGENTQ_TEST_CELLS ? { AGENTQ_CELLS: process.env.AGENTQ_TEST_CELLS } : {}),
      ...options.env,
    },
  });
  const logged = options.logger ? { logger: options.logger } : {};
  const api = await startApi({ config, host: '127.0.0.1', ...logged });
  const pools = options.pools ?? poolNames(config);
  const worker = pools.length
    ? await startWorker({ config, pools, shutdownGraceMs: 200, ...options.worker, ...logged })
    : undefined;
  return {
    api,
    worker,
    double,
    config,
    dataDir,
    async submit(tasks) {
      const response = await fetch(`${api.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tasks }),
      });
      if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    },
    async close() {
      await worker?.close();
      await api.close();
      await double.close();
      await deletePrefix(prefix);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<{ status: number; body: T }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as T };
}
