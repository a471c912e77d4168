import { describe, expect, it } from 'vitest';
import { loopTurn } from './loop-turn.js';

/** Holds the CPU, as a step's work does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('loop turns', () => {
  it('spreads a burst of work over several loop iterations, in order, so timers run in between', async () => {
    const order: number[] = [];
    let timerFiredAfter = -1;
    setTimeout(() => (timerFiredAfter = order.length), 0);
    // 60 steps of 1 ms each, all ready at once: run together they would hold the loop for 60 ms.
    await Promise.all(
      Array.from({ length: 60 }, async (_, index) => {
        await loopTurn();
        order.push(index);
        busy(1);
      }),
    );
    expect(order).toEqual(Array.from({ length: 60 }, (_, index) => index));
    // The timer ran while the burst was still going, not after all of it.
    expect(timerFiredAfter).toBeGreaterThan(0);
    expect(timerFiredAfter).toBeLessThan(30);
  });

  it('lets the first turn after an idle spell run in the check phase it was asked in', async () => {
    await loopTurn();
    // Idle: the marker that turn queued runs, and no turn follows it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    let otherImmediateRan = false;
    const turned = loopTurn().then(() => !otherImmediateRan);
    setImmediate(() => (otherImmediateRan = true));
    // Resolved before an immediate queued after it: not kept for the next iteration.
    expect(await turned).toBe(true);
  });

  it('lets the first turn since the last check phase go at once, and the turns after it wait for that phase', async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const order: string[] = [];
    // Queued before the turns: it runs in the check phase, ahead of any turn sent there.
    setImmediate(() => order.push('immediate'));
    await Promise.all([loopTurn().then(() => order.push('first')), loopTurn().then(() => order.push('second'))]);
    expect(order).toEqual(['first', 'immediate', 'second']);
  });
});
