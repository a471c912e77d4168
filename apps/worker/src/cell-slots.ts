/**
 * A pool's concurrency (AGENTQ_CONCURRENCY) shared by its BullMQ workers, one per cell: a job runs only
 * once it holds one of the pool's slots, so no more than the pool's concurrency run at once in this
 * process, however many cells. A job a cell's worker took beyond the free slots waits here for one, in
 * the order taken, its job's lock kept by BullMQ.
 *
 * How many jobs each cell's worker may take (its BullMQ concurrency, which BullMQ reads before each
 * fetch; and `mayTake`, asked as a job ends to fetch the next, cell-worker.ts) follows the slots. While
 * some are free: what it holds, plus a cell's share of them, so a cell can grow to every slot while the
 * others are idle (a concurrency key's tasks are all in its cell). Once every slot is taken: what it
 * runs, and one job to wait while it runs fewer than an even share of the slots. A process so holds at
 * most a job a cell waiting, not the (cells - 1) x concurrency each cell's worker would take at the
 * pool's concurrency, jobs another process could run (DESIGN.md, "Cells"); and as jobs end, their slots
 * go to the cells below their share.
 */
export class CellSlots {
  private free: number;
  private readonly waiting: Array<{ cell: number; start: () => void }> = [];
  /** Per cell: the jobs its worker handed over and that did not end yet (running, or waiting for a slot). */
  private readonly held: number[];
  /** Per cell: those of them that hold a slot. */
  private readonly running: number[];
  /** A cell's even share of the slots. */
  private readonly even: number;
  /** The cells' BullMQ workers, in cell order (`bound`). */
  private workers: ReadonlyArray<{ concurrency: number }> = [];

  constructor(
    concurrency: number,
    private readonly cells: number,
  ) {
    this.free = concurrency;
    this.held = Array.from({ length: cells }, () => 0);
    this.running = Array.from({ length: cells }, () => 0);
    this.even = Math.ceil(concurrency / cells);
  }

  /** The cells' workers, in cell order: from now on, how many jobs each may take follows the slots. */
  bound(workers: ReadonlyArray<{ concurrency: number }>): void {
    if (this.cells === 1) return;
    this.workers = workers;
    this.limit();
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
      const slot = this.take(cell);
      this.limit();
      try {
        await slot;
        return await processor(...args);
      } finally {
        this.held[cell]!--;
        this.running[cell]!--;
        this.give();
        this.limit();
      }
    };
  }

  /**
   * Whether cell `cell`'s worker may take one more job now: asked as one of its jobs ends, to fetch the
   * next in the same call (BullMQ's own test counts the jobs it still finishes, which hold no slot, and
   * with several cells declined about half of those fetches, each then a call of its own).
   */
  mayTake(cell: number): boolean {
    return this.held[cell]! < this.most(cell);
  }

  /** `mayTake` for cell `cell`'s worker; none with one cell (its worker's own concurrency bounds it). */
  mayTakeFor(cell: number): (() => boolean) | undefined {
    return this.cells === 1 ? undefined : () => this.mayTake(cell);
  }

  /** How many jobs each cell's worker may hold now; one at least. */
  private limit(): void {
    for (const [cell, worker] of this.workers.entries()) {
      const most = this.most(cell);
      if (worker.concurrency !== most) worker.concurrency = most;
    }
  }

  private most(cell: number): number {
    const share = Math.ceil(this.free / this.cells);
    const running = this.running[cell]!;
    return Math.max(1, share > 0 ? this.held[cell]! + share : running + (running < this.even ? 1 : 0));
  }

  private take(cell: number): Promise<void> {
    if (this.free > 0) {
      this.free--;
      this.running[cell]!++;
      return Promise.resolve();
    }
    return new Promise((start) => this.waiting.push({ cell, start }));
  }

  /** A slot let go: to the oldest waiting job, whatever its cell, else free. */
  private give(): void {
    const next = this.waiting.shift();
    if (!next) return void this.free++;
    this.running[next.cell]!++;
    next.start();
  }
}
