/**
 * What a cell costs a worker (docs/DESIGN.md, "Cells"): one `agentq worker` of 2 pools against one
 * Redis, its install in 1, 4 and 16 cells (a BullMQ worker per cell and pool: 2, 8, 32). Idle: the
 * Redis commands a second it causes, its own CPU a second, and its connections. Busy: single-step tasks
 * a second (0 ms model, c=50) and Redis commands a task. Cell counts alternate, medians of 3 rounds.
 *
 *   npm run bench:cells -- --tasks 2000
 */
import { parseArgs } from 'node:util';
import { startAgentq } from './lib/agentq.mjs';
import { startModel } from './lib/model.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { request } from './lib/processes.mjs';
import { alternate, median } from './lib/stats.mjs';

const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' } },
});
const CELLS = [1, 4, 16];
const IDLE_MS = 5_000;
const model = await startModel({ script: 'single' });
const cpuMs = async (child) => (await request(child, { probe: 'read' }, (message) => message?.probe)).cpuMs;

const samples = await alternate(
  Object.fromEntries(
    CELLS.map((cells) => [
      cells,
      async () => {
        const redis = await startPrivateRedis();
        const agentq = await startAgentq({
          redisUrl: redis.url,
          modelURL: model.baseURL,
          prefix: `cells${cells}`,
          pools: 'casual,coder',
          concurrency: 50,
          cells,
        });
        try {
          // Settled after start (its first turns, its heartbeat), then idle.
          await agentq.runTasks(redis.client, 50);
          const [callsBefore, cpuBefore] = [(await redis.usage()).calls, await cpuMs(agentq.worker.child)];
          const started = performance.now();
          await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
          const seconds = (performance.now() - started) / 1000;
          const [callsAfter, cpuAfter] = [(await redis.usage()).calls, await cpuMs(agentq.worker.child)];
          const clients = Number(/connected_clients:(\d+)/.exec(await redis.client.info('clients'))?.[1]);
          const count = Number(values.tasks);
          const busyBefore = (await redis.usage()).calls;
          const busyStarted = performance.now();
          await agentq.runTasks(redis.client, count);
          const busySeconds = (performance.now() - busyStarted) / 1000;
          const busyCalls = (await redis.usage()).calls - busyBefore;
          return {
            idleCommands: (callsAfter - callsBefore) / seconds,
            idleCpu: (cpuAfter - cpuBefore) / seconds,
            clients,
            tasksPerSecond: count / busySeconds,
            commandsPerTask: busyCalls / count,
          };
        } finally {
          await agentq.stop();
          await redis.stop();
        }
      },
    ]),
  ),
  Number(values.rounds),
);
await model.stop();

const of = (cells, name) => median(samples[cells].map((sample) => sample[name]));
console.log(`\ncells: one worker of 2 pools (c=50) on one Redis; medians of ${values.rounds} rounds, alternating\n`);
console.log(
  '| cells | BullMQ workers | Redis clients | idle: Redis commands/s | idle: worker CPU ms/s | tasks/s | commands a task |',
);
console.log('|---|---|---|---|---|---|---|');
for (const cells of CELLS)
  console.log(
    `| ${cells} | ${2 * cells} | ${of(cells, 'clients')} | ${of(cells, 'idleCommands').toFixed(1)} | ${of(cells, 'idleCpu').toFixed(2)} | ${of(cells, 'tasksPerSecond').toFixed(0)} | ${of(cells, 'commandsPerTask').toFixed(1)} |`,
  );
process.exit(0);
