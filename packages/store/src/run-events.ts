/**
 * An ended task's events packed by the run that ended it, in its end commit. A run's claim learns
 * whether the task is small; a first run also gets its task's first event (a copy in its record), and
 * so holds every event. From then on, each of the run's commits adds the lines it wrote, as the commit
 * script writes them; the end commit sends the lines held deflated, with the seq they start after and
 * the seq they end at. A first run's are the packed string, written whole; another's follow the list's
 * lines from before it (taken with one LPOP) in the packed string. Only if no other event was written
 * since; otherwise, or when the run's events grew past what a process should hold, the task is
 * compacted later, as before (compact-events.ts). What it saves each ended task: its compaction's 6 to
 * 7 Redis commands and a share of a batch's round trips.
 */
import { deflateOpen } from './task-events.js';

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
  /** The lines it holds, from seq `from` + 1 on (0: every one). */
  lines: string[];
  from: number;
  /** The last event's number: the seq the lines end at. */
  seq: number;
  bytes: number;
}

/** An event line as the commit script makes it (scripts/includes/add-events.lua), from its body. */
export function eventLine(owner: string, rootId: string, seq: number, body: string): string {
  return `${eventLineHead(owner)}${seq}","seq":${seq}${eventLineRoot(rootId)}${body}`;
}

/** A line's text before its seq: what the commit script puts first (commit.lua, add-events.lua). */
export function eventLineHead(owner: string): string {
  return `{"id":"${owner}:`;
}

/** A line's text between its seq and its body. */
export function eventLineRoot(rootId: string): string {
  return `,"rootId":${JSON.stringify(rootId)},`;
}

export class RunEvents {
  private readonly runs = new Map<string, HeldRun>();
  private totalBytes = 0;

  /**
   * A claim found its task small, its last event at `seq`: from now on the run's own lines are added
   * to `lines`, the task's last ones it knows (all of them, from seq 1, for a first run).
   */
  start(runToken: string, run: { taskId: string; rootId: string; seq: number; lines: string[] }): void {
    this.drop(runToken);
    const bytes = run.lines.reduce((sum, line) => sum + line.length, 0);
    this.runs.set(runToken, { ...run, lines: [...run.lines], from: run.seq - run.lines.length, bytes });
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
    // (before it counts: a run let go gives back what it counted)
    if (run.bytes + bytes > MAX_HELD_BYTES) return this.drop(runToken);
    run.lines.push(...lines);
    run.seq = seq;
    run.bytes += bytes;
    this.grew(bytes);
  }

  /**
   * What the run's end commit, which writes `bodies`, sends: the lines held deflated, the seq they
   * follow (0: they are every one), and the seq before the end's own; undefined when the run is not
   * held. The run is let go.
   */
  pack(runToken: string, bodies: readonly string[]): { from: number; seq: number; blob: Buffer } | undefined {
    const run = this.runs.get(runToken);
    this.drop(runToken);
    if (!run) return undefined;
    return {
      from: run.from,
      seq: run.seq,
      blob: deflateOpen(`${[...run.lines, ...this.lines(run, bodies)].join('\n')}\n`),
    };
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
