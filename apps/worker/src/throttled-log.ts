/**
 * A log line at most once per interval, with how many were held back: after an outage BullMQ reports
 * every job whose lock was lost (twice each), and a thousand jobs must not make a thousand lines.
 */
export function throttledLog(options: { intervalMs: number; write: (line: string) => void }): (line: string) => void {
  let lastAt = -Infinity;
  let held = 0;
  return (line) => {
    const now = Date.now();
    if (now - lastAt < options.intervalMs) {
      held++;
      return;
    }
    options.write(held ? `${line} (and ${held} more like it since the last report)` : line);
    lastAt = now;
    held = 0;
  };
}
