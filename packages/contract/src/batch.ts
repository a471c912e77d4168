/**
 * A batch of tasks as people write it (the dashboard's form, `agentq submit`): one task per line,
 * either a JSON task (`{"prompt": "...", "agent": "coder"}`) or a plain prompt; blank lines and lines
 * that start with `#` are skipped. Defaults fill what a line leaves out (a default agent, but for a
 * task that gives its own plan).
 */
import { AgentqError } from './agentq-error.js';

export class BatchLineError extends AgentqError {
  readonly code = 'invalid_batch_line';
  readonly retryable = false;
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

export function parseBatch(
  text: string,
  defaults: { agent?: string; priority?: number } = {},
): Array<Record<string, unknown>> {
  return parseBatchLines(text, defaults).map((entry) => entry.task);
}

/** As `parseBatch`, with each task's line number (from 1), to say where a task the API refused was written. */
export function parseBatchLines(
  text: string,
  defaults: { agent?: string; priority?: number } = {},
): Array<{ line: number; task: Record<string, unknown> }> {
  const filled = {
    ...(defaults.agent ? { agent: defaults.agent } : {}),
    ...(defaults.priority ? { priority: defaults.priority } : {}),
  };
  const tasks: Array<{ line: number; task: Record<string, unknown> }> = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    if (!line.startsWith('{')) {
      tasks.push({ line: index + 1, task: { prompt: line, ...filled } });
      return;
    }
    try {
      const task = JSON.parse(line) as Record<string, unknown>;
      // A task with a plan of its own is planned: a default agent would send it to one pool instead.
      const { agent, ...rest } = filled;
      tasks.push({
        line: index + 1,
        task: { ...(task['plan'] === undefined && agent ? { agent } : {}), ...rest, ...task },
      });
    } catch (error) {
      throw new BatchLineError(
        index + 1,
        `Line ${index + 1} starts with "{" but is not valid JSON (${(error as Error).message}).`,
      );
    }
  });
  return tasks;
}
