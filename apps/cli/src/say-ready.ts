import type { Logger } from '@agentq/telemetry';

/**
 * Tells `agentq start` (the parent, over IPC) that this process is ready, once its log lines so far
 * are written: lines are written asynchronously, and a "ready" ahead of them would have `start` say
 * it is ready before a worker's "serving" line.
 */
export async function sayReady(logger: Logger, message: Record<string, unknown> = {}): Promise<void> {
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  process.send?.({ type: 'ready', ...message });
}
