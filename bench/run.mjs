/**
 * `npm run bench`: every row of the performance table, each against its raw reference in the same
 * run (raw BullMQ from this project's node_modules, plain Redis subscribers, raw execa), alternating,
 * medians and ratios. `--quick` runs smaller samples (under a minute); `--only B1,B4` some rows;
 * `--json` prints the figures as JSON too.
 *
 *   npm run bench [-- --quick] [-- --only B3]
 */
import { parseArgs } from 'node:util';
import { canCount } from './lib/counted-redis.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { measureBytesPerTask } from './rows/bytes-per-task.mjs';
import { measureCluster } from './rows/cluster.mjs';
import { measureCancel } from './rows/cancel.mjs';
import { measureEventFanout } from './rows/event-fanout.mjs';
import { measureFirstRequest } from './rows/first-request.mjs';
import { measureFiveSteps } from './rows/five-steps.mjs';
import { measureManyLoops } from './rows/many-loops.mjs';
import { measureModelClient } from './rows/model-client.mjs';
import { measureRedisInstructions } from './rows/redis-instructions.mjs';
import { measureSingleStep } from './rows/single-step.mjs';
import { measureSubmit } from './rows/submit.mjs';
import { measureToolCall } from './rows/tool-call.mjs';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const only = values.only ? new Set(values.only.toUpperCase().split(',')) : undefined;
const wanted = (...ids) => !only || ids.some((id) => only.has(id));

const n = (value, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const rows = [];
const figures = {};
const row = (id, what, agentq, reference, ratio, goal, pass) =>
  rows.push({ id, what, agentq, reference, ratio, goal, pass });

const redis = await startPrivateRedis();
const startedAt = performance.now();
try {
  if (wanted('B1', 'B2')) {
    const r = (figures.singleStep = await measureSingleStep({ redis, quick: values.quick }));
    row(
      'B1',
      `single-step tasks/s, 1 worker c=50, 0 ms model (${n(r.count)} tasks)`,
      `${n(r.agentq.rate)}/s`,
      `no-op jobs ${n(r.raw.rate)}/s`,
      `${n((100 * r.agentq.rate) / r.raw.rate)}% of raw`,
      '≥ 30% of raw',
      r.agentq.rate >= 0.3 * r.raw.rate,
    );
    // Of which the main thread (Linux): the rest is V8's helper threads (compiler, GC), which --cpu-prof misses.
    const mainOf = (side) =>
      side.workerMainThreadCpuMs === undefined ? '' : ` (main thread ${n(side.workerMainThreadCpuMs, 2)})`;
    row(
      'B2',
      'worker CPU per step (streamed answers)',
      `${n(r.agentq.workerCpuMs, 2)} ms${mainOf(r.agentq)}`,
      `raw BullMQ's worker per job ${n(r.raw.workerCpuMs, 2)} ms${mainOf(r.raw)}`,
      `${n(r.agentq.workerCpuMs / r.raw.workerCpuMs, 1)}x`,
      '≤ 5x raw',
      r.agentq.workerCpuMs <= 5 * r.raw.workerCpuMs,
    );
    // What no agent step on this stack costs less than: a BullMQ job and a model call through the SDK.
    const least = r.rawModel.workerCpuMs;
    row(
      '',
      "a step's floor: raw BullMQ's worker, each job a model call through the openai SDK and nothing else",
      `${n(r.agentq.workerCpuMs, 2)} ms`,
      `${n(least, 2)} ms${mainOf(r.rawModel)}, ${n(least / r.raw.workerCpuMs, 1)}x raw's no-op job`,
      `${n(r.agentq.workerCpuMs / least, 1)}x the floor`,
      5 * r.raw.workerCpuMs > least
        ? `B2's goal (5x raw) leaves ${n(5 * r.raw.workerCpuMs - least, 2)} ms over it`
        : `B2's goal (5x raw) is under it`,
      null,
    );
    const floor = (figures.modelClient = await measureModelClient({ quick: values.quick }));
    row(
      '',
      "of which a model call's client side (in one process, c=50)",
      `${n(floor.agentqMs, 2)} ms`,
      `the openai SDK alone ${n(floor.sdkMs, 2)} ms; a bare POST ${n(floor.bareMs, 2)} ms`,
      `${n(floor.agentqMs / floor.sdkMs, 2)}x the SDK`,
      'the floor under B2',
      null,
    );
    row(
      '',
      `Redis commands per single-step task (B1's ${n(r.count)}, every command run)`,
      n(r.agentq.commands, 1),
      `a raw job with agentq's options ${n(r.raw.commands, 1)}`,
      `${n(r.agentq.commands / r.raw.commands, 2)}x`,
      '≤ 50',
      r.agentq.commands <= 50,
    );
    row(
      '',
      'Redis CPU per task',
      `${n(r.agentq.redisCpuMs, 3)} ms`,
      `${n(r.raw.redisCpuMs, 3)} ms`,
      `${n(r.agentq.redisCpuMs / r.raw.redisCpuMs, 1)}x`,
      '≤ 0.15 ms',
      r.agentq.redisCpuMs <= 0.15,
    );
    if (canCount()) {
      const counted = (figures.redisInstructions = await measureRedisInstructions({ quick: values.quick }));
      const k = (value) => `${n(value / 1000)}K`;
      row(
        '',
        `Redis instructions per single-step task (callgrind, ${n(counted.count)} tasks)`,
        k(counted.agentq),
        `a raw job with agentq's options ${k(counted.raw)}`,
        `${n(counted.agentq / counted.raw, 2)}x`,
        '≤ 2.5x a raw job',
        counted.agentq <= 2.5 * counted.raw,
      );
      row(
        '',
        `Redis instructions per further step (3-step tasks: ${k(counted.threeSteps)}, less a single step's, halved)`,
        k(counted.furtherStep),
        `a raw job ${k(counted.raw)}`,
        `${n(counted.furtherStep / counted.raw, 2)}x`,
        '≤ 1.0x a raw job',
        counted.furtherStep <= counted.raw,
      );
    } else row('', 'Redis instructions per task (callgrind)', 'valgrind is not installed', '', '', '', null);
    // B1's rate is what the machine's cores give every process of the run together.
    const busy = (side) => `${n(side.busyCores, 2)} of ${r.cores} cores busy`;
    row(
      '',
      'CPU per task, every process of B1',
      `${n(r.agentq.totalCpuMs, 2)} ms: worker ${n(r.agentq.workerCpuMs, 2)}, Redis ${n(r.agentq.redisCpuMs, 2)}, API ${n(r.agentq.apiCpuMs, 2)}, model double ${n(r.agentq.modelCpuMs, 2)}, client ${n(r.agentq.clientCpuMs, 2)}; ${busy(r.agentq)}`,
      `${n(r.raw.totalCpuMs, 2)} ms: worker ${n(r.raw.workerCpuMs, 2)}, Redis ${n(r.raw.redisCpuMs, 2)}, client ${n(r.raw.clientCpuMs, 2)}; ${busy(r.raw)}`,
      `${n(r.agentq.totalCpuMs / r.raw.totalCpuMs, 1)}x`,
      "what bounds B1: the machine's cores",
      null,
    );
  }
  if (wanted('B3')) {
    const r = (figures.firstRequest = await measureFirstRequest({ redis, quick: values.quick }));
    row(
      'B3',
      `submit -> first model request, p50 / p99 (${r.samples} each)`,
      `${n(r.agentq.p50, 1)} / ${n(r.agentq.p99, 1)} ms`,
      `add -> processor ${n(r.raw.p50, 1)} / ${n(r.raw.p99, 1)} ms`,
      `${n(r.agentq.p50 / r.raw.p50, 1)}x / ${n(r.agentq.p99 / r.raw.p99, 1)}x`,
      '≤ 2x raw',
      r.agentq.p50 <= 2 * r.raw.p50 && r.agentq.p99 <= 2 * r.raw.p99,
    );
  }
  if (wanted('B4')) {
    const r = (figures.manyLoops = await measureManyLoops({ redis, quick: values.quick }));
    row(
      'B4',
      `1 worker, 200 ms model, c=2,000 (${n(r.count)} tasks)`,
      `${n(r.agentq.rate)} tasks/s, loop p99 ${n(r.agentq.loopP99, 1)} ms, RSS ${n(r.agentq.peakRssMb)} MB`,
      `sleep(200) jobs ${n(r.raw.rate)}/s, loop p99 ${n(r.raw.loopP99, 1)} ms, RSS ${n(r.raw.peakRssMb)} MB`,
      `${n((100 * r.agentq.rate) / r.raw.rate)}% of raw`,
      '≥ 70% of raw, loop p99 < 50 ms, RSS < 400 MB',
      r.agentq.rate >= 0.7 * r.raw.rate && r.agentq.loopP99 < 50 && r.agentq.peakRssMb < 400,
    );
  }
  if (wanted('B5')) {
    const r = (figures.submit = await measureSubmit({ redis, quick: values.quick }));
    row(
      'B5',
      `POST ${n(r.count)} tasks`,
      `${n(r.agentq.ms / 1000, 2)} s`,
      `addBulk ${n(r.raw.ms / 1000, 2)} s`,
      `${n(r.agentq.ms / r.raw.ms, 2)}x`,
      '≤ 1.5x',
      r.agentq.ms <= 1.5 * r.raw.ms,
    );
  }
  if (wanted('B6')) {
    const r = (figures.toolCall = await measureToolCall({ quick: values.quick }));
    row(
      'B6',
      'bash `true` as a tool, call -> result, p50',
      `${n(r.tool.p50, 1)} ms (no jail)`,
      `execa ${n(r.execa.p50, 1)} ms`,
      `${n(r.tool.p50 / r.execa.p50, 2)}x`,
      '≤ 1.3x raw execa',
      r.tool.p50 <= 1.3 * r.execa.p50,
    );
    row(
      '',
      'the same, jailed',
      `${n(r.jailed.p50, 1)} ms`,
      `bare bwrap ${n(r.bwrap.p50, 1)} ms`,
      `${r.jailed.p50 >= r.bwrap.p50 ? '+' : '−'}${n(Math.abs(r.jailed.p50 - r.bwrap.p50), 1)} ms`,
      '≤ bare bwrap + 1 ms',
      r.jailed.p50 <= r.bwrap.p50 + 1,
    );
  }
  if (wanted('B7')) {
    const r = (figures.eventFanout = await measureEventFanout({ redis, quick: values.quick }));
    row(
      'B7',
      `${n(r.clients)} SSE clients, event -> client, p50 / p99`,
      `${n(r.agentq.p50, 1)} / ${n(r.agentq.p99, 1)} ms`,
      `Redis subscribers ${n(r.raw.p50, 1)} / ${n(r.raw.p99, 1)} ms`,
      `${n(r.agentq.p99 / r.raw.p99, 2)}x (p99)`,
      '≤ 1.5x the subscribers',
      r.agentq.p99 <= 1.5 * r.raw.p99,
    );
  }
  if (wanted('B8')) {
    const r = (figures.bytesPerTask = await measureBytesPerTask({ redis, quick: values.quick }));
    row(
      'B8',
      `Redis bytes per ended 3-step task (${r.completed}/${r.count} completed)`,
      `${n(r.agentq.bytes / 1000, 1)} KB`,
      `kept BullMQ job ${n(r.raw.bytes / 1000, 1)} KB`,
      `${n(r.agentq.bytes / r.raw.bytes, 2)}x`,
      '≤ 5 KB once ended',
      r.agentq.bytes <= 5_000,
    );
  }
  if (wanted('B10')) {
    const r = (figures.fiveSteps = await measureFiveSteps({ redis, quick: values.quick }));
    for (const [label, side] of [
      ['one at a time', r.alone],
      ['50 at a time', r.fifty],
    ])
      row(
        label === 'one at a time' ? 'B10' : '',
        `5-step tasks, 200 ms model, submit -> end, p50 / p99 (${side.count} tasks, ${label})`,
        `${n(side.agentq.p50)} / ${n(side.agentq.p99)} ms`,
        `the same 5 calls from a bare client ${n(side.bare.p50)} / ${n(side.bare.p99)} ms; the ideal ${n(side.ideal)} ms; the floor, raw BullMQ jobs making them through the openai SDK, ${n(side.floor.p50)} / ${n(side.floor.p99)} ms (${n(side.floor.p50 / side.bare.p50, 3)}x / ${n(side.floor.p99 / side.bare.p99, 3)}x)`,
        `${n(side.agentq.p50 / side.bare.p50, 3)}x / ${n(side.agentq.p99 / side.bare.p99, 3)}x the bare client`,
        'p50 ≤ 1.03x, p99 ≤ 1.10x',
        side.agentq.p50 <= 1.03 * side.bare.p50 && side.agentq.p99 <= 1.1 * side.bare.p99,
      );
  }
  if (wanted('B11')) {
    const r = (figures.cluster = await measureCluster({ redis, quick: values.quick }));
    const third = 1 / r.shares.length;
    row(
      'B11',
      `${r.shares.length}-master Redis Cluster, 3 cells, ${n(r.tasks)} single-step tasks of 3 tenants: each master's share of the commands`,
      r.shares.map((share) => `${n(100 * share)}%`).join(' / '),
      `a third each`,
      `${n(r.perTask.cluster, 1)} commands a task, one Redis ${n(r.perTask.one, 1)}: ${n(r.perTask.cluster / r.perTask.one, 2)}x`,
      "each master within 20% of a third; a task's cost ≤ 1.1x one Redis",
      r.shares.every((share) => Math.abs(share - third) <= 0.2 * third) && r.perTask.cluster <= 1.1 * r.perTask.one,
    );
    const counted = r.instructions;
    if (counted) {
      const { cluster, one, oneMaster } = counted.perTask;
      const k = (value) => `${n(value / 1000)}K`;
      row(
        '',
        `the same counted (callgrind on every master, ${n(counted.tasks)} tasks): each master's share of the instructions; a task's, less the install's idle rate (all counted)`,
        `${counted.shares.map((share) => `${n(100 * share)}%`).join(' / ')}; ${k(cluster.withoutIdle)} a task (${k(cluster.all)})`,
        `one Redis ${k(one.withoutIdle)} (${k(one.all)}); a cluster of one master ${k(oneMaster.withoutIdle)} (${k(oneMaster.all)})`,
        `${n(cluster.withoutIdle / one.withoutIdle, 2)}x one Redis (${n(cluster.all / one.all, 2)}x); ${n(cluster.withoutIdle / oneMaster.withoutIdle, 2)}x one master`,
        "each master within 20% of a third; a task's instructions ≤ 1.1x one Redis",
        counted.shares.every((share) => Math.abs(share - third) <= 0.2 * third) &&
          cluster.withoutIdle <= 1.1 * one.withoutIdle,
      );
    }
  }
  if (wanted('B9')) {
    const r = (figures.cancel = await measureCancel({ redis, quick: values.quick }));
    row(
      'B9',
      `cancel of a running task -> its task.cancelled event, p50 / p99 (${r.samples} each)`,
      `${n(r.agentq.p50, 1)} / ${n(r.agentq.p99, 1)} ms`,
      `Redis publish -> subscriber ${n(r.raw.p50, 1)} / ${n(r.raw.p99, 1)} ms`,
      `+${n(r.agentq.p50 - r.raw.p50, 1)} ms (p50)`,
      'what a user waits for a cancel (the tests check that it stops a run, not how fast)',
      null,
    );
  }
} finally {
  await redis.stop();
}

console.log(
  `\nagentq benchmarks${values.quick ? ' (--quick)' : ''}: ${n((performance.now() - startedAt) / 1000)} s, Node ${process.version}; alternating runs, medians\n`,
);
console.log('| | what | agentq | reference | ratio | goal | |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.id} | ${r.what} | ${r.agentq} | ${r.reference} | ${r.ratio} | ${r.goal} | ${r.pass === null ? '' : r.pass ? 'ok' : 'MISSED'} |`,
  );
if (values.json) console.log(JSON.stringify(figures, null, 2));
process.exit(0);
