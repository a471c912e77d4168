/**
 * A worker process: one BullMQ `Worker` per pool it serves, each running up to `concurrency` jobs.
 * Start more processes (here or on other machines) to go faster; Redis is the only shared state.
 */
import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import type { Config } from '@agentq/config';
import { createOpenAIModel, type LanguageModel } from '@agentq/llm';
import { connectRedis, createKeys, TaskStore, type AgentJob, type AgentPool } from '@agentq/queue';
import { resolveInterpreters } from '@agentq/tools';
import { CancelListener } from './cancel-listener.js';
import { runAgentJob } from './run-agent-job.js';

export interface StartWorkerOptions {
  config: Config;
  pools: readonly AgentPool[];
  /** Default: the OpenAI-compatible endpoint of the config. */
  model?: LanguageModel;
  /** Jobs at once per pool. Default `config.AGENTQ_CONCURRENCY`. */
  concurrency?: number;
}

export interface WorkerHandle {
  id: string;
  /** Stops taking jobs, waits for the running ones, and disconnects. */
  close(): Promise<void>;
}

async function failTask(store: TaskStore, taskId: string, error: Error, workerId: string): Promise<void> {
  const failure = { code: 'error', message: error.message };
  await store.commit({
    taskId,
    expect: ['queued', 'running'],
    status: 'failed',
    fields: { error: JSON.stringify(failure), finishedAt: new Date().toISOString() },
    events: [{ type: 'task.failed', worker: workerId, data: { error: failure } }],
  });
}

export async function startWorker(options: StartWorkerOptions): Promise<WorkerHandle> {
  const { config } = options;
  resolveInterpreters();
  const keys = createKeys(config.AGENTQ_REDIS_PREFIX);
  const redis = connectRedis({ url: config.REDIS_URL, name: 'agentq-worker' });
  const subscriber = connectRedis({ url: config.REDIS_URL, name: 'agentq-worker-cancel' });
  const store = new TaskStore(redis, keys);
  const cancels = new CancelListener(subscriber, keys.cancelChannel);
  await cancels.start();
  const workerId = `${hostname()}:${process.pid}`;
  const model =
    options.model ??
    createOpenAIModel({
      model: config.AGENTQ_MODEL ?? 'default',
      ...(config.OPENAI_BASE_URL ? { baseURL: config.OPENAI_BASE_URL } : {}),
      ...(config.OPENAI_API_KEY ? { apiKey: config.OPENAI_API_KEY } : {}),
      timeoutMs: config.AGENTQ_LLM_TIMEOUT_MS,
      maxRetries: config.AGENTQ_LLM_MAX_RETRIES,
    });
  const workers: Worker<AgentJob>[] = options.pools.map(
    (pool) =>
      new Worker<AgentJob>(pool, (job) => runAgentJob(job, { store, model, cancels, workerId, config, rateLimit: (ms) => worker(pool).rateLimit(ms) }), {
        connection: redis,
        prefix: keys.bullPrefix,
        concurrency: options.concurrency ?? config.AGENTQ_CONCURRENCY,
        lockDuration: config.AGENTQ_JOB_LOCK_MS,
        stalledInterval: config.AGENTQ_JOB_LOCK_MS,
        // A stall is usually a worker that died; the job resumes from its journal, so allow a few.
        maxStalledCount: 3,
      }),
  );
  const worker = (pool: AgentPool) => workers[options.pools.indexOf(pool)]!;
  for (const worker of workers) {
    worker.on('error', (error) => console.error(`[worker ${worker.name}] ${error.message}`));
    // A job BullMQ gave up on (retries used up, stalled too often) must not leave its task running.
    worker.on('failed', (job, error) => {
      if (!job) return;
      void job
        .getState()
        .then((state) => (state === 'failed' ? failTask(store, job.data.taskId, error, workerId) : undefined))
        .catch((failure: unknown) => console.error(`[worker ${worker.name}] could not record failure of ${job.id}: ${String(failure)}`));
    });
  }
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  return {
    id: workerId,
    async close() {
      await Promise.all(workers.map((worker) => worker.close()));
      await Promise.all([redis.quit(), subscriber.quit()]);
    },
  };
}
