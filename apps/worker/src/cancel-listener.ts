/**
 * Listens on the cancel channel and aborts the running task it names, if this process holds it.
 * One subscriber connection per worker process, whatever the number of jobs. Why a run was stopped
 * travels as its abort signal's reason: a user's cancel, or this worker's shutdown (then the task is
 * handed back to the queue, not cancelled).
 */
import { CANCELLED, SHUTDOWN } from '@agentq/tools';
import type { Redis } from 'ioredis';
import { onMessage, subscribe } from '@agentq/store';

export { CANCELLED, stoppedByShutdown } from '@agentq/tools';

export class CancelListener {
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {
    onMessage(subscriber, (from: string, taskId: string) => {
      if (from === channel) this.running.get(taskId)?.abort(CANCELLED);
    });
  }

  async start(): Promise<void> {
    await subscribe(this.subscriber, this.channel);
  }

  /** How many runs this process holds now. */
  count(): number {
    return this.running.size;
  }

  /** Stops every run of this process (shutdown); they are not cancelled, and resume elsewhere. */
  interruptAll(): void {
    for (const controller of this.running.values()) controller.abort(SHUTDOWN);
  }

  /** The controller for a task this process starts running; call `release` when it ends. */
  register(taskId: string): { controller: AbortController; release: () => void } {
    const controller = new AbortController();
    this.running.set(taskId, controller);
    return { controller, release: () => this.running.delete(taskId) };
  }
}
