/**
 * The CPU time some work takes this process, for tests that bound how much work a step is: unlike the
 * time on the clock, it does not grow when other processes share the machine's cores (a loaded CI
 * runner, other test files in parallel), so a bound on it fails only when the work itself grew.
 */

/** Milliseconds of CPU (user and system, every thread of the process) that `work` took. */
export async function cpuTimeOf(work: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const { user, system } = process.cpuUsage(before);
  return (user + system) / 1000;
}
