/**
 * A pool's concurrency (AGENTQ_CONCURRENCY) shared by its BullMQ workers, one per cell: a job runs only
 * once it holds one of the pool's slots, so no more than the pool's concurrency run at once in this
 * process, however many cells. A job a cell's worker took beyond the free slots waits here for one, in
 * the order taken, its job's lock kept by BullMQ.
 *
 * How many jobs each cell's worker may take (its BullMQ concurrency, which BullMQ reads before each
 * fetch) follows the slots: what it holds, plus a cell's share of the slots nobody holds. A cell can so
 * grow to every slot while the others are idle (a concurrency key's tasks are all in its cell), and once
 * every slot is taken, a cell's worker takes a job only as one of its own ends, or one at most while it
 * holds none. A process so holds about one job a cell waiting, not the (cells - 1) x concurrency each
 * cell's worker would take at the pool's concurrency, jobs another process could run (DESIGN.md, "Cells").
 * A slot handed from one cell's job to another's waiting job also moves the cells' shares toward even.
 */
export class CellSlots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  /** Per cell: the jobs its worker handed over and that did not end yet (running, or waiting for a slot). */
  private readonly held: number[];
  /** The cells' BullMQ workers, in cell order (`bound`). */
  private workers: ReadonlyArray<{ concurrency: number }> = [];
  /** Until when the pool is paused (a provider's rate limit): a job taken meanwhile waits for it. */
  private pausedUntil = 0;

  constructor(
    concurrency: number,
    private readonly cells: number,
  ) {
    this.free = concurrency;
    this.held = Array.from({ length: cells }, () => 0);
  }

  /** The cells' workers, in cell order: from now on, how many jobs each may take follows the slots. */
  bound(workers: ReadonlyArray<{ concurrency: number }>): void {
    if (this.cells === 1) return;
    this.workers = workers;
    this.limit();
  }

  /**
   * The pool is paused for `ms` (its workers were rate limited): a job another cell's worker took before
   * the pause, waiting for a slot, starts only after it, as BullMQ's pause holds back the jobs it fetches.
   */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  /**
   * `processor` of cell `cell`'s worker, run while holding a slot (with one cell, the worker's own
   * concurrency is the bound).
   */
  wrap<Args extends unknown[], Result>(
    processor: (...args: Args) => Promise<Result>,
    cell = 0,
  ): (...args: Args) => Promise<Result> {
    if (this.cells === 1) return processor;
    return async (...args) => {
      this.held[cell]!++;
      const slot = this.take();
      this.limit();
      try {
        await slot;
        for (let wait = this.pausedUntil - Date.now(); wait > 0; wait = this.pausedUntil - Date.now())
          await new Promise((resolve) => setTimeout(resolve, wait));
        return await processor(...args);
      } finally {
        this.held[cell]!--;
        this.give();
        this.limit();
      }
    };
  }

  /** Each cell's worker may hold what it holds and its share of the free slots; one at least. */
  private limit(): void {
    const share = Math.ceil(this.free / this.cells);
    for (const [cell, worker] of this.workers.entries()) {
      const most = Math.max(1, this.held[cell]! + share);
      if (worker.concurrency !== most) worker.concurrency = most;
    }
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
