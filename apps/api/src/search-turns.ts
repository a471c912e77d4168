/**
 * Searches (a task list with `q`) take turns per tenant, in this API process: each reads up to 4 MiB of
 * prompts in Redis (prompt-search.ts), and Redis serves every tenant one command at a time, so one
 * tenant's searches at once would be everyone's wait. A tenant runs SEARCHES_RUNNING at a time; up to
 * SEARCHES_WAITING more wait their turn (a page of a search takes tens of milliseconds); past those, a
 * search is refused (429 with Retry-After), saying what to do. One whose client left while it waited is
 * not run. Given `lease`, a search with its turn also holds one of SEARCHES_RUNNING leases of its tenant
 * over every API process (search-leases.ts), or is refused: a tenant cannot multiply its turns by
 * spreading its searches over several API processes.
 */
import { ApiError } from './api-error.js';

/** Searches of one tenant that run at once. */
export const SEARCHES_RUNNING = 2;
/** Searches of one tenant that wait for a turn; more are refused. */
export const SEARCHES_WAITING = 8;

/** A lease on one of a tenant's turns over every process: its `release`, or `undefined` when none is free. */
export type TakeLease = (tenant: string) => Promise<{ release(): Promise<void> } | undefined>;

export class SearchTurns {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  /** `lease`: the turns over every API process (default: this process's alone). */
  constructor(private readonly options: { lease?: TakeLease } = {}) {}

  /**
   * Runs `search` when `tenant` has a turn free; refuses it (ApiError `limit_reached`) when too many wait.
   * A search whose `gone` aborted while it waited (its client left) is not run: `undefined`.
   * Example: `await turns.run(principal.tenant, () => store.list({ q, limit }))`.
   */
  async run<T>(tenant: string, search: () => Promise<T>, gone?: AbortSignal): Promise<T | undefined> {
    await this.turn(tenant);
    try {
      if (gone?.aborted) return undefined;
      const lease = this.options.lease ? await this.options.lease(tenant) : { release: async () => undefined };
      if (!lease)
        throw new ApiError(
          'limit_reached',
          `Tenant ${tenant} already runs ${SEARCHES_RUNNING} task searches on the API's processes: send one search at a time, following nextCursor, and try again in a second.`,
          { tenant, running: SEARCHES_RUNNING },
          1,
        );
      try {
        return await search();
      } finally {
        // A lease not let go (Redis away) ends by itself (SEARCH_LEASE_MS); the search's answer stands.
        await lease.release().catch(() => undefined);
      }
    } finally {
      this.release(tenant);
    }
  }

  private async turn(tenant: string): Promise<void> {
    const running = this.running.get(tenant) ?? 0;
    if (running < SEARCHES_RUNNING) {
      this.running.set(tenant, running + 1);
      return;
    }
    const queue = this.waiting.get(tenant) ?? [];
    if (queue.length >= SEARCHES_WAITING)
      throw new ApiError(
        'limit_reached',
        `Tenant ${tenant} already runs ${running} task searches on this API process and ${queue.length} more wait: ` +
          'send one search at a time, following nextCursor, and try again in a second.',
        { tenant, running, waiting: queue.length },
        1,
      );
    this.waiting.set(tenant, queue);
    // The turn passes from the search that ends (release): the running count stays as it is.
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  private release(tenant: string): void {
    const queue = this.waiting.get(tenant);
    const next = queue?.shift();
    if (queue && !queue.length) this.waiting.delete(tenant);
    if (next) return next();
    const left = (this.running.get(tenant) ?? 1) - 1;
    if (left > 0) this.running.set(tenant, left);
    else this.running.delete(tenant);
  }
}
