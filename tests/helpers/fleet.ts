/**
 * agentq as a fleet, from outside: the wire double, `agentq api` and several `agentq worker` processes
 * serving the same pools, on a fresh key prefix and data folder; `stop` ends and removes it all.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startOpenAIDouble, type DoubleRule, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from './processes.js';
import { deletePrefix, freshPrefix } from './redis.js';

export interface Fleet {
  baseUrl: string;
  double: OpenAIDouble;
  stop(): Promise<void>;
}

/** `pools`: what each worker serves, e.g. `casual` or `planner,file,casual`. */
export async function startFleet(options: {
  name: string;
  model: string;
  rules: DoubleRule[];
  workers: number;
  pools: string;
  env: Record<string, string>;
}): Promise<Fleet> {
  const prefix = freshPrefix(options.name);
  const double = await startOpenAIDouble({ rules: options.rules });
  const dataDir = await mkdtemp(path.join(tmpdir(), `agentq-${options.name}-`));
  const processes: AgentqProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((process) => process.stop()));
    await double.close();
    await deletePrefix(prefix);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const env = await processEnv({
      prefix,
      dataDir,
      modelURL: double.baseURL,
      model: options.model,
      extra: options.env,
    });
    const api = spawnAgentq(['api'], env);
    processes.push(
      api,
      ...Array.from({ length: options.workers }, () => spawnAgentq(['worker', '--pools', options.pools], env)),
    );
    const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
    await Promise.all(
      processes.slice(1).map((worker) => worker.waitFor(new RegExp(`serving ${options.pools.split(',').join(', ')}`))),
    );
    return { baseUrl, double, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
