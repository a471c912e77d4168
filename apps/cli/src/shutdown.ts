/** Runs `close` once on SIGINT/SIGTERM, then exits; a second signal exits at once. */
export function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) process.exit(130);
    closing = true;
    close()
      .catch((error: unknown) => console.error(`[agentq] error while stopping: ${String(error)}`))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 0));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
