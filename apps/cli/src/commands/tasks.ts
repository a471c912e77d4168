/**
 * Reading tasks from a terminal: `agentq list` (newest first, filtered by status or batch), `agentq get
 * ID` (the task as the API shows it) and `agentq result ID` (its answer alone, for a pipe; exit 1 when
 * it did not complete). What a model wrote is made terminal-safe before it is printed.
 */
import type { TaskStatus, TaskSummaryView, TaskView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { oneLine, paint, table, terminalSafeDeep } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export async function listCommand(
  client: ApiClient,
  flags: { status?: string; batch?: string; limit?: string; json?: boolean },
): Promise<number> {
  const limit = flags.limit === undefined ? 20 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw new UsageError('usage: agentq list [--status S] [--batch B] [--limit 1..500]');
  const page = await client.agentq
    .list({
      ...(flags.status ? { status: flags.status as TaskStatus } : {}),
      ...(flags.batch !== undefined ? { batch: flags.batch } : {}),
      limit,
    })
    .catch((error: unknown) => Promise.reject(client.said(error)));
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(page)}\n`);
    return 0;
  }
  const tasks = terminalSafeDeep(page.tasks) as TaskSummaryView[];
  if (!tasks.length) {
    process.stdout.write('no tasks\n');
    return 0;
  }
  const rows = tasks.map((task) => [
    task.id,
    task.status,
    task.agent,
    task.createdAt.replace('T', ' ').slice(0, 19),
    oneLine(task.prompt, 50),
  ]);
  process.stdout.write(table(['id', 'status', 'agent', 'created', 'prompt'], rows));
  if (page.nextCursor) process.stdout.write(paint.dim(`(more: --limit ${Math.min(500, limit * 2)})\n`));
  return 0;
}

export async function getCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { json?: boolean },
): Promise<number> {
  if (!taskId) throw new UsageError('usage: agentq get ID [--json]');
  const task = terminalSafeDeep(await client.call<TaskView>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`));
  process.stdout.write(`${JSON.stringify(task, null, flags.json ? undefined : 2)}\n`);
  return 0;
}

export async function resultCommand(client: ApiClient, taskId: string | undefined): Promise<number> {
  if (!taskId) throw new UsageError('usage: agentq result ID');
  const task = terminalSafeDeep(await client.call<TaskView>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`));
  if (task.result !== null) process.stdout.write(`${task.result}\n`);
  if (task.status === 'completed') return 0;
  process.stderr.write(
    task.error
      ? `${task.id} ${task.status}: ${task.error.code}: ${task.error.message}\n`
      : `${task.id} is ${task.status}: no result yet (agentq watch ${task.id} follows it)\n`,
  );
  return 1;
}
