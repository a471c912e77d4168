import { endLogs, type Logger } from '@agentq/telemetry';

/**
 * Runs `close` once on SIGINT/SIGTERM, then ends `logger`'s output (telemetry's `endLogs`) and exits; a
 * second signal exits at once. A process that `agentq start` forked also closes when `start` goes away
 * (its IPC channel closes), so that nothing it started outlives it, a SIGKILL of `start` included.
 */
export function onShutdown(close: () => Promise<void>, logger?: Logger): void {
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) process.exit(130);
    closing = true;
    void close()
      .catch((error: unknown) => console.error(`[agentq] error while stopping: ${String(error)}`))
      .then(() => logger && endLogs(logger))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 0));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  if (process.send) process.once('disconnect', () => handler('SIGTERM'));
}
