/**
 * An ended task's events packed by the run that ended it, in its end commit. A run's claim reads its
 * task's event lines when its list holds every one (none were compacted yet); each of the run's commits
 * adds the lines it wrote, as the commit script writes them; the end commit sends them all deflated,
 * with the seq they end at, and the script stores them as the packed string in place of the list only
 * if no other event was written since. Otherwise, or when the run's events grew past what a process
 * should hold, the task is compacted later, as before (compact-events.ts). What it saves each ended
 * task: its compaction's 6 to 7 Redis commands and a share of a batch's round trips.
 */
import { deflateRawSync } from 'node:zlib';

/** A run's events held past this many bytes are let go: its task is compacted later instead. */
const MAX_HELD_BYTES = 512 * 1024;
/**
 * Every run's events held at once past this (runs that never reached their end commit: Redis away,
 * a process error): the oldest runs are let go. A run's copy is a few KB; 2,000 loops hold some MB.
 */
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;

interface HeldRun {
  taskId: string;
  rootId: string;
  lines: string[];
  /** The last event's number: the seq the lines end at. */
  seq: number;
  bytes: number;
}

/** An event line as the commit script makes it (scripts/includes/add-events.lua), from its body. */
export function eventLine(owner: string, rootId: string, seq: number, body: string): string {
  return `{"id":"${owner}:${seq}","seq":${seq},"rootId":${JSON.stringify(rootId)},${body}`;
}

export class RunEvents {
  private readonly runs = new Map<string, HeldRun>();
  private totalBytes = 0;

  /** A claim read every event of its task: from now on the run's own are added. */
  start(runToken: string, run: { taskId: string; rootId: string; lines: string[]; seq: number }): void {
    this.drop(runToken);
    const bytes = run.lines.reduce((sum, line) => sum + line.length, 0);
    if (bytes > MAX_HELD_BYTES) return;
    this.runs.set(runToken, { ...run, lines: [...run.lines], bytes });
    this.grew(bytes);
  }

  /**
   * A commit of the run wrote `bodies` as the last events, ending at `seq`: held, unless another
   * writer's events came between (the numbers do not follow on), which lets the run go, as does
   * holding more than a run may.
   */
  added(runToken: string, bodies: readonly string[], seq: number): void {
    const run = this.runs.get(runToken);
    if (!run) return;
    if (seq !== run.seq + bodies.length) return this.drop(runToken);
    const lines = this.lines(run, bodies);
    const bytes = lines.reduce((sum, line) => sum + line.length, 0);
    run.lines.push(...lines);
    run.seq = seq;
    run.bytes += bytes;
    if (run.bytes > MAX_HELD_BYTES) return this.drop(runToken);
    this.grew(bytes);
  }

  /**
   * What the run's end commit, which writes `bodies`, sends: every line of its task deflated, and the
   * seq before its own; undefined when the run is not held. The run is let go.
   */
  pack(runToken: string, bodies: readonly string[]): { seq: number; blob: Buffer } | undefined {
    const run = this.runs.get(runToken);
    this.drop(runToken);
    if (!run) return undefined;
    return { seq: run.seq, blob: deflateRawSync([...run.lines, ...this.lines(run, bodies)].join('\n')) };
  }

  drop(runToken: string): void {
    const run = this.runs.get(runToken);
    if (!run) return;
    this.runs.delete(runToken);
    this.totalBytes -= run.bytes;
  }

  /** Every run's events held now, in bytes (about: a line's length). */
  get heldBytes(): number {
    return this.totalBytes;
  }

  /** Counts `bytes` more held, and lets the oldest runs go past the bound of all of them. */
  private grew(bytes: number): void {
    this.totalBytes += bytes;
    for (const oldest of this.runs.keys()) {
      if (this.totalBytes <= MAX_TOTAL_BYTES) break;
      this.drop(oldest);
    }
  }

  /** How many runs are held (for tests). */
  get size(): number {
    return this.runs.size;
  }

  private lines(run: HeldRun, bodies: readonly string[]): string[] {
    return bodies.map((body, index) => eventLine(run.taskId, run.rootId, run.seq + 1 + index, body));
  }
}
