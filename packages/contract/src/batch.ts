/**
 * A batch of tasks as people write it (the dashboard's form, `agentq submit`): one task per line,
 * either a JSON task (`{"prompt": "...", "agent": "coder"}`) or a plain prompt; blank lines and lines
 * that start with `#` are skipped. Defaults fill what a line leaves out.
 */

export class BatchLineError extends Error {
  override readonly name = 'BatchLineError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

export function parseBatch(text: string, defaults: { agent?: string; priority?: number } = {}): Array<Record<string, unknown>> {
  const filled = { ...(defaults.agent ? { agent: defaults.agent } : {}), ...(defaults.priority ? { priority: defaults.priority } : {}) };
  const tasks: Array<Record<string, unknown>> = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    if (!line.startsWith('{')) {
      tasks.push({ prompt: line, ...filled });
      return;
    }
    try {
      tasks.push({ ...filled, ...(JSON.parse(line) as Record<string, unknown>) });
    } catch (error) {
      throw new BatchLineError(index + 1, `Line ${index + 1} starts with "{" but is not valid JSON (${(error as Error).message}).`);
    }
  });
  return tasks;
}
