/**
 * Listens on the cancel channel and aborts the running task it names, if this process holds it.
 * One subscriber connection per worker process, whatever the number of jobs.
 */
import type { Redis } from 'ioredis';

export class CancelListener {
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {
    subscriber.on('message', (from: string, taskId: string) => {
      if (from === channel) this.running.get(taskId)?.abort(new Error('cancelled'));
    });
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
  }

  /** True once `interruptAll` ran: the process is shutting down, its runs must go back to the queue. */
  interrupted = false;

  /** Stops every run of this process (shutdown); they are not cancelled, and resume elsewhere. */
  interruptAll(): void {
    this.interrupted = true;
    for (const controller of this.running.values()) controller.abort(new Error('worker shutting down'));
  }

  /** The controller for a task this process starts running; call `release` when it ends. */
  register(taskId: string): { controller: AbortController; release: () => void } {
    const controller = new AbortController();
    this.running.set(taskId, controller);
    return { controller, release: () => this.running.delete(taskId) };
  }
}
