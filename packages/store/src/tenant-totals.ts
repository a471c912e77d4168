/**
 * A tenant's byte count and day's spending in the other cells, for a commit's limit checks when its
 * tasks are spread over several cells (keys.ts): a commit's script sees its own cell's counters only, so
 * each process keeps the tenant's counters of every cell, read at most a second ago, and passes what the
 * other cells hold with the commit. A limit then stops a tenant's runs within about a second of its
 * tasks passing it in other cells (a submit's room is checked exactly: cell-room.ts).
 */
import type { Redis } from 'ioredis';
import { cellPipeline } from './cell-pipeline.js';
import type { Keys } from './keys.js';
import { execPipeline } from './pipeline-replies.js';

/** What a tenant's tasks hold in other cells than a commit's own. */
export interface OtherCells {
  bytes: number;
  tokens: number;
  microUsd: number;
}

interface Read {
  at: number;
  day: string;
  /** Per cell: bytes, tokens, micro-USD. */
  cells: Array<[number, number, number]>;
}

/** How long a read of a tenant's counters is used before it is read again. */
const FRESH_MS = 1_000;

export class TenantTotals {
  private readonly reads = new Map<string, Promise<Read>>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /** What `tenant` holds outside cell `cell` today (UTC `day`), as read at most a second ago. */
  async others(tenant: string, cell: number, day: string, now = Date.now()): Promise<OtherCells> {
    let read = this.reads.get(tenant);
    // A read that failed is read again below (its own failure was the commit's that made it).
    const last = read && (await read.catch(() => undefined));
    if (!last || last.day !== day || now - last.at > FRESH_MS) {
      read = this.read(tenant, day, now);
      this.reads.set(tenant, read);
      // A read that failed is not kept: the next commit reads again (this one fails with it).
      read.catch(() => this.reads.get(tenant) === read && this.reads.delete(tenant));
    }
    const { cells } = await read!;
    const others: OtherCells = { bytes: 0, tokens: 0, microUsd: 0 };
    cells.forEach(([bytes, tokens, microUsd], index) => {
      if (index === cell) return;
      others.bytes += bytes;
      others.tokens += tokens;
      others.microUsd += microUsd;
    });
    return others;
  }

  private async read(tenant: string, day: string, now: number): Promise<Read> {
    const pipeline = cellPipeline(this.redis);
    for (const cell of this.keys.cells) {
      pipeline.get(cell.tenantBytes(tenant));
      pipeline.hmget(cell.tenantSpend(tenant, day), 'tokens', 'microUsd');
    }
    const replies = await execPipeline(pipeline);
    const cells = this.keys.cells.map((_, index): [number, number, number] => {
      const [tokens, microUsd] = replies[2 * index + 1] as Array<string | null>;
      return [Number(replies[2 * index] ?? 0), Number(tokens ?? 0), Number(microUsd ?? 0)];
    });
    return { at: now, day, cells };
  }
}
