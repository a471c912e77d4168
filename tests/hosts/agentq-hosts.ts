/**
 * agentq on the test network, as users run it across machines: Redis on a host of its own, the API on
 * another, the model double on a third, worker processes each on a host of their own (their tools in
 * their own jail there), and a client host through which the test makes its API calls.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TaskEvent } from '@agentq/contract';
import { createKeys } from '@agentq/store';
import { TestNetwork } from './test-network.js';
import { tenantsEnv } from '../helpers/config-file.js';

const AGENTQ_MAIN = fileURLToPath(new URL('../../apps/cli/dist/main.js', import.meta.url));
const MODEL_SERVER = fileURLToPath(new URL('../../bench/lib/model-server.mjs', import.meta.url));
const CLIENT = fileURLToPath(new URL('./client-host.mjs', import.meta.url));
const DELAY_PROXY = fileURLToPath(new URL('./delay-proxy.mjs', import.meta.url));
const API_KEY = 'hosts-test-key';
const ENDED = new Set(['completed', 'failed', 'cancelled', 'skipped']);

export interface AgentqHosts {
  network: TestNetwork;
  /** An API call made from the client host (JSON in and out); answers the status and the body. */
  call<T = unknown>(method: string, route: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Every model request so far: [when (ms since the epoch), the first user text]. */
  modelLog(): Promise<Array<[number, string]>>;
  /**
   * Starts `agentq worker` on a new host; resolves once it serves its pools. `redisUrl`: another way to
   * Redis (a slow link); `onRedisHost`: on the Redis host itself, reaching it over loopback.
   */
  startWorker(name: string, options?: { redisUrl?: string; onRedisHost?: boolean }): Promise<ChildProcess>;
  /** Kills the first Redis primary (SIGKILL), as a crashed machine; on a cluster, the master of agentq's cell. */
  killPrimary(): Promise<void>;
  /** On a cluster: the address of the master that serves agentq's cell now (its hash tag's slot); '' for none. */
  cellMasterNow(): Promise<string>;
  /** With Sentinels: stops (SIGSTOP) or lets go on (SIGCONT) both replicas. */
  pauseReplicas(paused: boolean): void;
  /** With Sentinels: the primary's address they name now. */
  primaryNow(): Promise<string>;
  /** The tasks' statuses once every one ended, or as they stand `withinMs` from now. */
  statusesOnceEnded(ids: readonly string[], withinMs: number): Promise<string[]>;
  /** What a failover may have lost, over the tasks' streams: tasks whose events' seq repeats or skips, and with a step completed twice. */
  losses(ids: readonly string[]): Promise<{ gaps: number; repeatedSteps: number }>;
  /** A slow link to Redis: a host that forwards to it, `delayMs` each way; answers its `redis://` URL. */
  startSlowLink(name: string, delayMs: number): Promise<string>;
  /** The end of what the API and each worker wrote (stdout and stderr), by name: for a failing test to show. */
  outputs(chars?: number): Record<string, string>;
  stop(): Promise<void>;
}

/** Answers the first IPC message of `child` that `pick` returns something for. */
function nextMessage<T>(
  child: ChildProcess,
  pick: (message: unknown) => T | undefined,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let output = '';
    const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const done = () => {
      clearTimeout(timer);
      child.off('message', listener);
      child.off('exit', exited);
      child.stdout?.off('data', collect);
      child.stderr?.off('data', collect);
    };
    const listener = (message: unknown) => {
      const picked = pick(message);
      if (picked === undefined) return;
      done();
      resolve(picked);
    };
    const exited = (code: number | null) => {
      done();
      reject(new Error(`${what} exited (${code}) first:\n${output}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what} did not answer within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('message', listener);
    child.once('exit', exited);
  });
}

/** Answers once `redis-cli <args>` run on `host` prints what `done` accepts. */
async function untilRedisCli(
  network: TestNetwork,
  host: string,
  args: string[],
  done: (output: string) => boolean,
): Promise<string> {
  for (let tries = 0; ; tries++) {
    try {
      const output = execFileSync('ip', ['netns', 'exec', network.host(host).ns, 'redis-cli', ...args], {
        stdio: 'pipe',
        encoding: 'utf8',
      });
      if (done(output)) return output;
    } catch (error) {
      if (tries > 200) throw error;
    }
    if (tries > 200) throw new Error(`redis-cli ${args.join(' ')} on ${host} never answered as expected`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `sentinels`: Redis as a primary (host `redis`), a replica (`replica`) and three Sentinels (`sentinel1`..3),
 * each on a host of its own; agentq's processes find the primary through the Sentinels.
 * `cluster`: a Redis Cluster of 3 masters (`redis`, `redis2`, `redis3`), each with two replicas on hosts
 * of their own (`redis-r1`, `redis-r2`...), a third of the slots each; agentq's processes reach it
 * through REDIS_CLUSTER_NODES.
 */
export async function startAgentqHosts(options: {
  script: string;
  latencyMs: number;
  concurrency: number;
  env?: Record<string, string>;
  sentinels?: boolean;
  cluster?: boolean;
  /** AGENTQ_CELLS for every process (default 1); `cellMasterNow` then names the first cell's master. */
  cells?: number;
}): Promise<AgentqHosts> {
  const network = TestNetwork.create();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-hosts-'));
  // The jail runs each task's tools as a uid of its own: the work folders must be searchable by others.
  await chmod(dataDir, 0o711);
  try {
    const redisHost = network.addHost('redis');
    const apiHost = network.addHost('api');
    const modelHost = network.addHost('model');
    network.addHost('client');

    // A replica's full sync writes an RDB file into its folder: the run's data folder, not the checkout.
    const redisArgs = (address: string) => [
      '--bind',
      address,
      '--port',
      '6379',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
      '--dir',
      dataDir,
      '--dbfilename',
      `${address}.rdb`,
    ];
    const clusterArgs = (address: string) =>
      options.cluster
        ? [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            path.join(dataDir, `${address}.nodes.conf`),
            '--cluster-node-timeout',
            '1000',
          ]
        : [];
    const primary = network.spawn(
      'redis',
      'redis-server',
      [...redisArgs(redisHost.address), ...clusterArgs(redisHost.address)],
      {},
    );
    await untilRedisCli(network, 'redis', ['-h', redisHost.address, 'ping'], (output) => output.includes('PONG'));
    const sentinelEnv: Record<string, string> = {};
    // On a cluster, every node's process by its address (the test kills the cell's master).
    const clusterNodes = new Map<string, ChildProcess>([[redisHost.address, primary]]);
    if (options.cluster) {
      const cli = (host: string, ...args: string[]) =>
        untilRedisCli(network, host, ['-h', network.host(host).address, ...args], () => true);
      const start = async (name: string) => {
        const host = network.addHost(name);
        clusterNodes.set(
          host.address,
          network.spawn(name, 'redis-server', [...redisArgs(host.address), ...clusterArgs(host.address)], {}),
        );
        await untilRedisCli(network, name, ['-h', host.address, 'ping'], (output) => output.includes('PONG'));
        return name;
      };
      const masters = ['redis', await start('redis2'), await start('redis3')];
      const replicas = [];
      for (const [index] of masters.entries())
        for (const letter of ['a', 'b'])
          replicas.push({ name: await start(`redis-r${index + 1}${letter}`), of: index });
      for (const name of [...masters.slice(1), ...replicas.map((replica) => replica.name)])
        await cli(name, 'cluster', 'meet', redisHost.address, '6379');
      for (const [index, name] of masters.entries())
        await cli(
          name,
          'cluster',
          'addslotsrange',
          String(Math.floor((index * 16_384) / 3)),
          String(Math.floor(((index + 1) * 16_384) / 3) - 1),
        );
      const ids = await Promise.all(masters.map(async (name) => (await cli(name, 'cluster', 'myid')).trim()));
      for (const replica of replicas) {
        await untilRedisCli(
          network,
          replica.name,
          ['-h', network.host(replica.name).address, 'cluster', 'nodes'],
          (output) => output.includes(ids[replica.of]!),
        );
        await cli(replica.name, 'cluster', 'replicate', ids[replica.of]!);
      }
      for (const name of [...masters, ...replicas.map((replica) => replica.name)])
        await untilRedisCli(network, name, ['-h', network.host(name).address, 'cluster', 'info'], (output) =>
          output.includes('cluster_state:ok'),
        );
      // A replica that never synced would not take over.
      for (const replica of replicas)
        await untilRedisCli(
          network,
          replica.name,
          ['-h', network.host(replica.name).address, 'info', 'replication'],
          (output) => output.includes('master_link_status:up'),
        );
      sentinelEnv.REDIS_CLUSTER_NODES = masters.map((name) => `${network.host(name).address}:6379`).join(',');
    }
    const replicas: ChildProcess[] = [];
    if (options.sentinels) {
      // Two replicas: after a failover the promoted one still has one (commits that wait for a replica go on).
      for (const name of ['replica', 'replica2']) {
        const replica = network.addHost(name);
        replicas.push(
          network.spawn(
            name,
            'redis-server',
            [...redisArgs(replica.address), '--replicaof', redisHost.address, '6379'],
            {},
          ),
        );
        await untilRedisCli(network, name, ['-h', replica.address, 'info', 'replication'], (output) =>
          output.includes('master_link_status:up'),
        );
      }
      const sentinels = [1, 2, 3].map((index) => network.addHost(`sentinel${index}`));
      for (const sentinel of sentinels) {
        const file = path.join(dataDir, `${sentinel.name}.conf`);
        await writeFile(
          file,
          `port 26379\nbind ${sentinel.address}\nprotected-mode no\nsentinel monitor mymaster ${redisHost.address} 6379 2\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n`,
        );
        network.spawn(sentinel.name, 'redis-server', [file, '--sentinel'], {});
      }
      // Every Sentinel knows the primary, its replica and the others.
      for (const sentinel of sentinels) {
        await untilRedisCli(
          network,
          sentinel.name,
          ['-h', sentinel.address, '-p', '26379', 'sentinel', 'master', 'mymaster'],
          (output) => /num-slaves\n2\n/.test(output) && /num-other-sentinels\n2\n/.test(output),
        );
      }
      sentinelEnv.REDIS_SENTINELS = sentinels.map((sentinel) => `${sentinel.address}:26379`).join(',');
      sentinelEnv.REDIS_MASTER_NAME = 'mymaster';
    }
    const model = network.spawn(
      'model',
      process.execPath,
      [
        MODEL_SERVER,
        '--host',
        modelHost.address,
        '--script',
        options.script,
        '--latency',
        String(options.latencyMs),
        '--log',
      ],
      {},
    );
    const modelURL = await nextMessage(model, (message) => (message as { ready?: string })?.ready, 'the model double');

    const env = {
      REDIS_URL: `redis://${redisHost.address}:6379`,
      AGENTQ_REDIS_PREFIX: 'hosts',
      // Each host its own folder, as on separate machines.
      OPENAI_BASE_URL: modelURL,
      OPENAI_API_KEY: 'hosts',
      AGENTQ_MODEL: 'hosts-model',
      AGENTQ_LOG_LEVEL: 'warn',
      ...tenantsEnv({ default: { keys: [API_KEY] } }),
      ...sentinelEnv,
      AGENTQ_CELLS: String(options.cells ?? 1),
      ...options.env,
    };
    const api = network.spawn('api', process.execPath, [AGENTQ_MAIN, 'api'], {
      ...env,
      AGENTQ_HOST: apiHost.address,
      PORT: '8080',
      AGENTQ_DATA_DIR: path.join(dataDir, 'api'),
    });
    await nextMessage(
      api,
      (message) => ((message as { type?: string })?.type === 'ready' ? true : undefined),
      'agentq api',
    );
    const apiUrl = `http://${apiHost.address}:8080`;

    const client = network.spawn('client', process.execPath, [CLIENT], {});
    await nextMessage(
      client,
      (message) => ((message as { ready?: boolean })?.ready ? true : undefined),
      'the client host',
    );
    let nextId = 0;
    const call = async <T>(method: string, route: string, body?: unknown) => {
      const id = nextId++;
      const answer = nextMessage(
        client,
        (message) => ((message as { id?: number })?.id === id ? (message as { status: number; body: T }) : undefined),
        `the client's call ${method} ${route}`,
      );
      client.send({
        id,
        method,
        url: `${apiUrl}${route}`,
        body,
        headers: { authorization: `Bearer ${API_KEY}`, accept: 'application/json' },
      });
      return answer;
    };
    let modelRequest = 0;
    const modelLog = () => {
      const id = modelRequest++;
      const answer = nextMessage(
        model,
        (message) => (message as { log?: Array<[number, string]> })?.log,
        `the model's log ${id}`,
      );
      model.send({ log: true });
      return answer;
    };
    const agentqProcesses = new Map<string, ChildProcess>([['api', api]]);
    const startWorker = async (name: string, workerOptions: { redisUrl?: string; onRedisHost?: boolean } = {}) => {
      if (!workerOptions.onRedisHost) network.addHost(name);
      const worker = network.spawn(
        workerOptions.onRedisHost ? 'redis' : name,
        process.execPath,
        [
          AGENTQ_MAIN,
          'worker',
          '--pools',
          'planner,coder,file,casual,web',
          '--concurrency',
          String(options.concurrency),
        ],
        {
          ...env,
          AGENTQ_DATA_DIR: path.join(dataDir, name),
          ...(workerOptions.redisUrl ? { REDIS_URL: workerOptions.redisUrl } : {}),
        },
      );
      await nextMessage(
        worker,
        (message) => ((message as { type?: string })?.type === 'ready' ? true : undefined),
        `agentq worker on ${name}`,
      );
      agentqProcesses.set(name, worker);
      return worker;
    };
    const startSlowLink = async (name: string, delayMs: number) => {
      const proxy = network.addHost(name);
      const child = network.spawn(
        name,
        process.execPath,
        [DELAY_PROXY, '--host', proxy.address, '--to', `${redisHost.address}:6379`, '--delay', String(delayMs)],
        {},
      );
      await nextMessage(child, (message) => (message as { ready?: string })?.ready, `the slow link ${name}`);
      return `redis://${proxy.address}:6379`;
    };
    const cellMasterNow = async (): Promise<string> => {
      // Asked of a replica: the test kills masters only.
      const ask = (...args: string[]) =>
        untilRedisCli(network, 'redis-r1a', ['-h', network.host('redis-r1a').address, ...args], () => true);
      // The first cell's hash tag (one cell: the prefix's, `{hosts}`).
      const tag = createKeys('{hosts}', options.cells ?? 1).cells[0]!.cellPrefix;
      const slot = Number((await ask('cluster', 'keyslot', tag)).trim());
      const nodes = await ask('cluster', 'nodes');
      for (const line of nodes.split('\n')) {
        const [, address, flags, , , , , , ...ranges] = line.split(' ');
        if (!flags?.includes('master') || flags.includes('fail')) continue;
        for (const range of ranges) {
          const [from, to = from] = range.split('-').map(Number);
          if (slot >= from! && slot <= to!) return address!.split('@')[0]!;
        }
      }
      // None: the cell's master failed, and no replica took over yet.
      return '';
    };
    const statusesOnceEnded = async (ids: readonly string[], withinMs: number): Promise<string[]> => {
      const deadline = Date.now() + withinMs;
      let statuses: string[] = [];
      while (Date.now() < deadline) {
        const answer = await call<{ tasks: Array<{ status: string }> }>('POST', '/v1/tasks/statuses', { ids });
        if (
          answer.status === 200 &&
          (statuses = answer.body.tasks.map((task) => task.status)).every((s) => ENDED.has(s))
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return statuses;
    };
    const losses = async (ids: readonly string[]) => {
      let gaps = 0;
      let repeatedSteps = 0;
      for (const id of ids) {
        const stream = (await call<TaskEvent[]>('GET', `/v1/tasks/${id}/events`)).body;
        if (stream.some((event, index) => event.seq !== index + 1)) gaps++;
        const steps = stream.filter((event) => event.type === 'step.completed').map((event) => event.step);
        if (new Set(steps).size !== steps.length) repeatedSteps++;
      }
      return { gaps, repeatedSteps };
    };
    return {
      network,
      call,
      modelLog,
      statusesOnceEnded,
      losses,
      startWorker,
      startSlowLink,
      pauseReplicas(paused: boolean) {
        for (const replica of replicas) replica.kill(paused ? 'SIGSTOP' : 'SIGCONT');
      },
      async killPrimary() {
        const victim = options.cluster ? clusterNodes.get((await cellMasterNow()).split(':')[0]!)! : primary;
        const exited = new Promise((resolve) => victim.once('exit', resolve));
        victim.kill('SIGKILL');
        await exited;
      },
      outputs(chars = 4_000) {
        return Object.fromEntries(
          [...agentqProcesses].map(([name, child]) => [name, network.outputOf(child).slice(-chars)]),
        );
      },
      cellMasterNow,
      async primaryNow() {
        const sentinel = network.host('sentinel1');
        const output = await untilRedisCli(
          network,
          'sentinel1',
          ['-h', sentinel.address, '-p', '26379', 'sentinel', 'get-master-addr-by-name', 'mymaster'],
          (text) => text.trim().length > 0,
        );
        return output.trim().split('\n')[0]!;
      },
      async stop() {
        await network.remove();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await network.remove();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}
