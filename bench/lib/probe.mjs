/**
 * Loaded into a benchmarked process with `node --import`: it answers `{ probe: 'read' }` on the IPC
 * channel with the process's CPU time (and its main thread's, where Linux tells it), its event-loop
 * delay (p50, p99, max) and its peak RSS since the last `{ probe: 'reset' }`. Nothing of agentq's own
 * code knows about it.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * The main thread's CPU time in ms, from /proc (utime and stime, in the kernel's 100 ticks a second);
 * undefined elsewhere. The rest of the process's time is V8's helper threads (its optimising compiler,
 * the garbage collector's parallel and concurrent work) and libuv's pool: what `--cpu-prof` does not see.
 */
function mainThreadCpuMs() {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
let peakRss = process.memoryUsage.rss();
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 50).unref();

process.on('message', (message) => {
  if (message?.probe === 'reset') {
    delay.reset();
    peakRss = process.memoryUsage.rss();
  } else if (message?.probe === 'read') {
    const cpu = process.cpuUsage();
    process.send({
      probe: {
        cpuMs: (cpu.user + cpu.system) / 1000,
        mainThreadCpuMs: mainThreadCpuMs(),
        loop: { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
        peakRssMb: Math.max(peakRss, process.memoryUsage.rss()) / 2 ** 20,
      },
    });
  }
});
