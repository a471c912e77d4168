/**
 * Jailed tool calls in a busy worker: a process with a large heap (a worker with many tasks in
 * memory) runs `calls` jailed `bash -c true` calls, `concurrency` at once, started by itself (the
 * jail in-process) or by its tool launcher (as a worker does), alternating. What each costs the
 * process's CPU per call, and how long its event loop was held (every other task of the worker waits
 * that long).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { bashTool, chooseIsolation } from '@agentq/tools';
import { alternate, median } from '../lib/stats.mjs';

export async function measureBusyWorkerTools({ quick, heapMb = 250, concurrency = 20 }) {
  const calls = quick ? 100 : 300;
  const rounds = quick ? 1 : 2;
  // About `heapMb` of live objects, kept until the end.
  const heap = Array.from({ length: heapMb * 10_000 }, (_, index) => ({ index, text: `entry ${index}` }));
  const root = mkdtempSync(path.join(tmpdir(), 'agentq-bench-busy-'));
  const limits = { processes: 128, memoryMb: 1024, fileMb: 512, cpuSeconds: 60 };
  const here = await chooseIsolation({ mode: 'bwrap', workRoot: root, jail: { network: 'none', limits } });
  const launched = await chooseIsolation({
    mode: 'bwrap',
    workRoot: root,
    jail: { network: 'none', limits, separateProcess: true },
  });
  try {
    const workdir = path.join(root, 'task');
    await here.jail.prepareWorkdir(workdir);
    const measured = (isolation) => async () => {
      // A signal per call, as each task has its own.
      const context = () => ({
        workdir,
        signal: new AbortController().signal,
        timeoutMs: 10_000,
        outputLimit: 1_000,
        isolation,
      });
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const cpu = process.cpuUsage();
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < calls) {
            const result = await bashTool.run({ command: 'true' }, context());
            if (!result.ok) throw new Error(`a jailed call failed: ${result.output}`);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      delay.disable();
      return {
        rate: calls / seconds,
        cpuMs: (used.user + used.system) / 1000 / calls,
        loopP99Ms: delay.percentile(99) / 1e6,
      };
    };
    const samples = await alternate({ here: measured(here), launcher: measured(launched) }, rounds);
    const of = (name) => ({
      rate: median(samples[name].map((s) => s.rate)),
      cpuMs: median(samples[name].map((s) => s.cpuMs)),
      loopP99Ms: median(samples[name].map((s) => s.loopP99Ms)),
    });
    return {
      calls,
      rounds,
      concurrency,
      heapMb,
      rssMb: process.memoryUsage().rss / 1e6,
      entries: heap.length,
      here: of('here'),
      launcher: of('launcher'),
    };
  } finally {
    await launched.jail.close();
    rmSync(root, { recursive: true, force: true });
  }
}
