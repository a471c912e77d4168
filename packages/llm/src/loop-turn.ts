/**
 * Turns on the event loop for work that comes in bursts. A worker running thousands of loops gets
 * hundreds of model answers in one poll of its sockets; run all at once, their steps hold the event
 * loop for hundreds of milliseconds, and with it every lock renewal, cancel and timer. `loopTurn()`
 * resolves at once or in the check phase, within a budget of CPU time per loop iteration; what is over the
 * budget waits for the next iteration, after the timers and I/O that came in between.
 */

/** CPU time the turns of one loop iteration may take, in milliseconds. */
const BUDGET_MS = 4;

let phaseStart = 0;
/** A marker is queued to run first in the next check phase: it starts that phase's budget. */
let markerQueued = false;
/**
 * The marker started this phase's budget (else the first turn of the phase starts it). A marker that
 * no turn followed leaves it set, with a start long past: the first turn after an idle spell starts a
 * budget of its own. (Made to wait an iteration instead, it waited for whatever I/O came in that
 * iteration: half a millisecond of an idle worker's first job, measured.)
 */
let startedByMarker = false;

function marker(): void {
  markerQueued = false;
  startedByMarker = true;
  phaseStart = performance.now();
}

function turn(resolve: () => void): void {
  if (!markerQueued) {
    const now = performance.now();
    if (!startedByMarker || now - phaseStart > BUDGET_MS) phaseStart = now;
    startedByMarker = false;
    // Queued before any deferred turn, so it runs ahead of them.
    setImmediate(marker);
    markerQueued = true;
  }
  // The previous turns' work ran between the immediates (microtasks run after each one).
  if (performance.now() - phaseStart > BUDGET_MS) setImmediate(turn, resolve);
  else resolve();
}

/**
 * Resolves at once for the first turn asked for since the last check phase (it starts a budget, and
 * the turns after it wait for the check phase); else waits for this loop iteration's check phase, or a
 * later one when this one's budget is spent. (Sent to the check phase too, an idle worker's job waited
 * for whatever else that iteration polled: 0.4 ms of its start, and as much again of its model call.)
 */
export function loopTurn(): Promise<void> {
  return new Promise((resolve) => (markerQueued ? setImmediate(turn, resolve) : turn(resolve)));
}
