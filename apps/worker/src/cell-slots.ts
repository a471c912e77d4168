/**
 * A pool's concurrency (AGENTQ_CONCURRENCY) shared by its BullMQ workers, one per cell: a job runs only
 * once it holds one of the pool's slots, so no more than the pool's concurrency run at once in this
 * process, however many cells. Each cell's worker may take as many jobs as the pool's concurrency (a
 * cell can be busier than the others: a concurrency key's tasks are all in its cell); what it took
 * beyond the free slots waits here for one, in the order taken, its job's lock kept by BullMQ. With
 * every cell busy, a process so holds up to (cells - 1) x concurrency jobs waiting (DESIGN.md, "Cells").
 */
export class CellSlots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  /** Until when the pool is paused (a provider's rate limit): a job taken meanwhile waits for it. */
  private pausedUntil = 0;

  constructor(
    concurrency: number,
    private readonly cells: number,
  ) {
    this.free = concurrency;
  }

  /**
   * The pool is paused for `ms` (its workers were rate limited): a job another cell's worker took before
   * the pause, waiting for a slot, starts only after it, as BullMQ's pause holds back the jobs it fetches.
   */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  /** `processor`, run while holding a slot (with one cell, the worker's own concurrency is the bound). */
  wrap<Args extends unknown[], Result>(
    processor: (...args: Args) => Promise<Result>,
  ): (...args: Args) => Promise<Result> {
    if (this.cells === 1) return processor;
    return async (...args) => {
      await this.take();
      try {
        for (let wait = this.pausedUntil - Date.now(); wait > 0; wait = this.pausedUntil - Date.now())
          await new Promise((resolve) => setTimeout(resolve, wait));
        return await processor(...args);
      } finally {
        this.give();
      }
    };
  }

  private take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
