/**
 * agentq as a user runs it, for the benchmarks: `agentq api` and one `agentq worker` process against
 * the benchmark's Redis and model, each with the probe loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { countByStatus, createKeys } from '@agentq/store';
import { startAgentqApi, startAgentqWorker } from './processes.mjs';

export async function startAgentq({
  redisUrl,
  modelURL,
  prefix = 'agentq-bench',
  pools = 'casual',
  concurrency = 50,
  env = {},
  /** AGENTQ_CELLS: its lists are counted in every cell. */
  cells = 1,
}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
  const common = {
    REDIS_URL: redisUrl,
    AGENTQ_REDIS_PREFIX: prefix,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: modelURL,
    OPENAI_API_KEY: 'bench',
    AGENTQ_MODEL: 'bench',
    AGENTQ_CELLS: String(cells),
    ...env,
  };
  // No pools: the API alone (what is submitted stays queued).
  // However the benchmark ends (private-redis.mjs makes a signal end it through exit): its processes
  // stopped first, so that none writes in the folder once it is removed.
  let started = [];
  const removeDataDir = () => {
    for (const running of started) running?.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', removeDataDir);
  let batches = 0;
  const [api, worker] = (started = await Promise.all([
    startAgentqApi(common),
    pools ? startAgentqWorker(common, { pools, concurrency }) : undefined,
  ]));
  return {
    api,
    worker,
    prefix,
    /** Submits tasks, 10,000 a request at most (with `apiKey`, as its tenant); resolves with their ids. */
    async submit(tasks, apiKey) {
      const ids = [];
      for (let start = 0; start < tasks.length; start += 10_000) {
        const { status, body } = await post(
          `${api.url}/v1/tasks`,
          JSON.stringify({ tasks: tasks.slice(start, start + 10_000) }),
          apiKey ? { authorization: `Bearer ${apiKey}` } : {},
        );
        if (status !== 202) throw new Error(`submit: ${status} ${body}`);
        ids.push(...JSON.parse(body).tasks.map((task) => task.id));
      }
      return ids;
    },
    /**
     * Submits `count` single-step tasks to `agent` (prompts that differ from every earlier batch's) and
     * resolves once as many more tasks ended, as counted on `redis` every `everyMs`.
     */
    async runTasks(redis, count, { agent = 'casual', everyMs = 50 } = {}) {
      const before = (await this.ended(redis)).ended;
      const batch = batches++;
      await this.submit(Array.from({ length: count }, (_, index) => ({ prompt: `${agent} ${batch} ${index}`, agent })));
      await until(async () => (await this.ended(redis)).ended, before + count, everyMs);
    },
    /** How many submitted tasks ended so far (completed or failed). */
    async ended(redis) {
      const keys = createKeys(prefix, cells);
      const { completed, failed } = await countByStatus(
        redis,
        keys.cells.map((cell) => cell.tenantTasks('default')),
      );
      return { completed, failed, ended: completed + failed };
    },
    async stop() {
      await Promise.all([api.stop(), worker?.stop()]);
      process.off('exit', removeDataDir);
      removeDataDir();
    },
  };
}

/**
 * A POST as a busy client sends it: node:http on a kept-alive connection. (The global fetch costs the
 * client about a millisecond a request on this machine, which is not agentq's time.) A connection left
 * idle is closed before the API's 5 s keep-alive ends: Node's agent heeds the server's `Keep-Alive:
 * timeout` only when given a timeout of its own, and a POST on a connection the API closed meanwhile
 * fails ("socket hang up").
 */
const client = new http.Agent({ keepAlive: true, timeout: 4_000 });
export function post(url, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: 'POST', agent: client, headers: { 'content-type': 'application/json', ...headers } },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Resolves once `count()` reaches `target`, polling every `everyMs`. */
export async function until(count, target, everyMs = 10) {
  for (;;) {
    if ((await count()) >= target) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
