/**
 * A redis-server run under valgrind's callgrind, for a figure this shared machine cannot make noisy: the
 * instructions Redis runs for some work, counted, not timed (the same work counts the same to within
 * about 1%, whatever else the machine does). Counting runs only while `count(work)` runs; callgrind is
 * told through `vgdb`. Redis runs 30 to 50 times slower under it, so the work must be small.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectWhenUp, exitOnSignals, freePort } from './private-redis.mjs';

/** Whether valgrind is installed (the figure is left out without it). */
export function canCount() {
  return spawnSync('valgrind', ['--version']).status === 0;
}

export async function startCountedRedis() {
  const server = await startCountedServer([]);
  const url = `redis://127.0.0.1:${server.port}`;
  // Slow to start under valgrind: a few seconds.
  const client = await connectWhenUp(url, { everyMs: 100, tries: 100 });
  return {
    url,
    client,
    /** The instructions Redis ran while `work()` ran (its last reply included: a PING behind it is awaited). */
    count: async (work) => (await countInstructions([{ server, client }], work)).total,
    async stop() {
      client.disconnect();
      await server.stop();
    },
  };
}

/**
 * A redis-server under callgrind, counting nothing until told, with `args` after the port's (the caller
 * connects to it). `tell` speaks to callgrind; `instructions()` reads and clears what it dumped.
 */
export async function startCountedServer(args) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-callgrind-'));
  // vgdb's pipes in the same folder: a server killed cannot remove its own from /tmp.
  // prettier-ignore
  const server = spawn('valgrind', [
    '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${dir}/out.%p`, `--vgdb-prefix=${dir}/vgdb`,
    'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args,
  ], { stdio: 'ignore' });
  // valgrind's launcher may not be the process that runs Redis: its pid is the one in the output's name.
  let pid;
  const stop = () => {
    try {
      if (pid) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone already.
    }
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  exitOnSignals();
  for (let tries = 0; !pid; tries++) {
    pid = readdirSync(dir)
      .find((name) => /^out\.\d+$/.test(name))
      ?.slice('out.'.length);
    if (!pid && tries > 200) throw new Error('callgrind did not start redis-server');
    if (!pid) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    tell: (...command) =>
      execFileSync('vgdb', [`--vgdb-prefix=${dir}/vgdb`, `--pid=${pid}`, ...command], { stdio: 'pipe' }),
    instructions() {
      const dumps = readdirSync(dir).filter((name) => name.startsWith(`out.${pid}.`));
      const total = dumps.reduce((sum, name) => sum + selfCost(readFileSync(path.join(dir, name), 'utf8')), 0);
      for (const name of dumps) rmSync(path.join(dir, name));
      return total;
    },
    /** Stops it, and waits until its port is free again (the next server may be given the same). */
    async stop() {
      process.off('exit', stop);
      stop();
      for (let tries = 0; tries < 100 && running(pid); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
    },
  };
}

function running(pid) {
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The instructions every one of `nodes` ({server, client}) ran while `work()` ran, each its own and
 * their sum: each node's last reply included (a PING behind it is awaited).
 */
export async function countInstructions(nodes, work) {
  for (const { server } of nodes) {
    server.tell('zero');
    server.tell('instrumentation', 'on');
  }
  await work();
  await Promise.all(nodes.map(({ client }) => client.ping()));
  const each = nodes.map(({ server }) => {
    server.tell('instrumentation', 'off');
    server.tell('dump');
    return server.instructions();
  });
  return { each, total: each.reduce((sum, count) => sum + count, 0) };
}

/**
 * The sum of a callgrind dump's self costs: every cost line but those that follow a `calls=` line
 * (a call's inclusive cost, already counted where it was spent).
 */
function selfCost(text) {
  let total = 0;
  let callCost = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('calls=')) {
      callCost = true;
      continue;
    }
    const cost = /^(?:[+-]?\d+|\*) (\d+)$/.exec(line);
    if (cost && !callCost) total += Number(cost[1]);
    callCost = false;
  }
  return total;
}
