/**
 * A cell's BullMQ worker, for a pool whose concurrency its cells share (cell-slots.ts): as one of its
 * jobs ends, whether it fetches the next in the same call is the slots' answer. BullMQ's own answer
 * compares the jobs it holds with its concurrency, and counts those it is still finishing, whose slots
 * were let go already: with the cells' concurrency following the slots, it declined about half of
 * those fetches on 3 cells, each then a call of its own (`moveToActive`, after a blocking wait at times).
 */
import { Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';

/**
 * The bullmq whose internal `processJob` this was checked against (and the exact version package.json
 * pins): tests/integration/cell-worker.test.ts fails, saying what to check, on any other.
 */
export const BULLMQ_CHECKED = '6.7.0';

export class CellWorker extends Worker {
  /** `mayTake`: whether the cell may take one more job now; none, BullMQ's own answer (one cell). */
  constructor(
    name: string,
    processor: Processor,
    options: WorkerOptions,
    private readonly mayTake: (() => boolean) | undefined,
  ) {
    super(name, processor, options);
  }

  override processJob(job: Job, token: string, fetchNext?: () => boolean): ReturnType<Worker['processJob']> {
    return super.processJob(job, token, this.mayTake ?? fetchNext);
  }
}
