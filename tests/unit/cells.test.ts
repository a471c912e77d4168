/** Cells (keys.ts): where a task's keys are, how the cells spread over a cluster's slots, and how a worker shares its slots among them. */
import { describe, expect, it } from 'vitest';
import { cellsPerMaster, spreadingCellCount } from '../../packages/store/src/cluster-cells.js';
import { cellNumber, createKeys, keySlot, newTaskId } from '../../packages/store/src/keys.js';
import { CellSlots } from '../../apps/worker/src/cell-slots.js';

describe('cells', () => {
  it('keeps one cell under the install’s own prefix, as before cells', () => {
    const keys = createKeys('agentq');
    expect(keys.cells).toHaveLength(1);
    expect(keys.cells[0]!.cellPrefix).toBe('agentq');
    expect(keys.task('0b1d2c3e-0000-4000-8000-000000000000')).toBe('agentq:task:0b1d2c3e-0000-4000-8000-000000000000');
    expect(keys.cells[0]!.bullPrefix).toBe('agentq:bull');
  });

  it('puts each of 16 cells in its own sixteenth of the slots, so any even split of the slots spreads them', () => {
    const keys = createKeys('{agentq}', 16);
    keys.cells.forEach((cell, index) => {
      const slot = keySlot(cell.tenantTasks('acme'));
      expect(slot).toBeGreaterThanOrEqual(Math.floor((index * 16384) / 16));
      expect(slot).toBeLessThan(Math.floor(((index + 1) * 16384) / 16));
      // Every key of the cell in one slot: a script's keys, a BullMQ queue's, a task's.
      expect(keySlot(`${cell.bullPrefix}:casual:wait`)).toBe(slot);
      expect(keySlot(cell.expiry)).toBe(slot);
    });
    // The home keys are under the install's tag, in no cell's.
    expect(keySlot(keys.workers)).toBe(keySlot('{agentq}'));
  });

  it('computes slots as Redis does (CRC16 of the hash tag)', () => {
    // Values from Redis Cluster's specification and CLUSTER KEYSLOT.
    expect(keySlot('123456789')).toBe(12739);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}'));
    expect(keySlot('foo')).toBe(12182);
  });

  it('keeps a plan in its root’s cell, and spreads roots evenly', () => {
    const keys = createKeys('{agentq}', 4);
    const counts = [0, 0, 0, 0];
    for (let draw = 0; draw < 4000; draw++) {
      const id = newTaskId(keys);
      const cell = keys.cellOf(id).cell;
      counts[cell]!++;
      expect(keys.cellOf(`${id}.v1.s2`).cell).toBe(cell);
      expect(keys.task(`${id}.v1.s2`).startsWith(keys.cells[cell]!.cellPrefix)).toBe(true);
    }
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(cellNumber('ffffffff-0000-4000-8000-000000000000', 1)).toBe(0);
  });

  it('draws a task id in a key’s cell', () => {
    const keys = createKeys('agentq', 8);
    const cell = keys.cellOfKey('acme:some-key');
    for (let draw = 0; draw < 50; draw++) expect(keys.cellOf(newTaskId(keys, cell))).toBe(cell);
    expect(() => createKeys('agentq', 0)).toThrow(/1 to 1024/);
  });

  it('shares a pool’s slots among its cells’ workers, never more at once than the pool’s concurrency', async () => {
    // Each cell's worker may take as many as the pool's concurrency: the slots bound what runs.
    const slots = new CellSlots(2, 4);
    let running = 0;
    let most = 0;
    const releases: Array<() => void> = [];
    const job = slots.wrap(async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => releases.push(resolve));
      running--;
    });
    const jobs = [job(), job(), job(), job()];
    await new Promise((resolve) => setImmediate(resolve));
    expect(running).toBe(2);
    while (releases.length) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(jobs);
    expect(most).toBe(2);
    // One cell: the worker's own concurrency is the bound, and nothing is wrapped.
    const plain = async () => 'ran';
    expect(new CellSlots(4, 1).wrap(plain)).toBe(plain);
  });

  it('chooses, for a new install on a cluster, the fewest cells that give every master as many', () => {
    /** Masters holding the slots in these proportions, in order, as CLUSTER SLOTS gives them. */
    const cluster = (...shares: number[]) => {
      const total = shares.reduce((sum, share) => sum + share, 0);
      let from = 0;
      return new Map(
        shares.map((share, index) => {
          const to = index === shares.length - 1 ? 16383 : from + Math.round((share / total) * 16384) - 1;
          const range: [number, number] = [from, to];
          from = to + 1;
          return [`master-${index}`, [range]];
        }),
      );
    };
    // Even ranges (redis-cli --cluster create): a cell a master.
    expect(spreadingCellCount('{agentq}', cluster(1, 1, 1))).toBe(3);
    expect(cellsPerMaster('{agentq}', 3, cluster(1, 1, 1))).toEqual([1, 1, 1]);
    expect(spreadingCellCount('{agentq}', cluster(1, 1, 1, 1, 1))).toBe(5);
    // Halves then quarters: twice as many cells on the first, yet none idle (no multiple evens them out).
    const uneven = cluster(2, 1, 1);
    const chosen = spreadingCellCount('{agentq}', uneven);
    expect(chosen % 3).toBe(0);
    expect(cellsPerMaster('{agentq}', chosen, uneven)).not.toContain(0);
    // One master: one cell, under the install's own tag; one cell on three masters leaves two idle.
    expect(spreadingCellCount('{agentq}', cluster(1))).toBe(1);
    expect(cellsPerMaster('{agentq}', 1, cluster(1, 1, 1)).filter((held) => held === 0)).toHaveLength(2);
  });
});
