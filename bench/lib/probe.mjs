/**
 * Loaded into a benchmarked process with `node --import`: it answers `{ probe: 'read' }` on the IPC
 * channel with the process's CPU time, its event-loop delay (p50, p99, max) and its peak RSS since the
 * last `{ probe: 'reset' }`. Nothing of agentq's own code knows about it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

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
        loop: { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
        peakRssMb: Math.max(peakRss, process.memoryUsage.rss()) / 2 ** 20,
      },
    });
  }
});
