/** `agentq status`, `agentq cancel ID`, `agentq retry ID`, `agentq fork ID`, `agentq delete ID` (cancel, retry and delete also `--batch B`). */
import { isTerminalStatus } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { paint } from '../terminal.js';
import { UsageError } from '../usage-error.js';

interface PoolRow {
  name: string;
  counts: { waiting: number; active: number; delayed: number; failed: number };
  jobsPerMinute: number;
  workersOnline: number;
  concurrency: number;
}

export async function statusCommand(client: ApiClient, flags: { json?: boolean }): Promise<number> {
  const answer = await client.call<{ pools: PoolRow[]; workers: number }>('GET', '/v1/pools');
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(answer)}\n`);
    return 0;
  }
  const header = ['pool', 'waiting', 'active', 'delayed', 'failed', 'jobs/min', 'workers', 'concurrency'];
  const rows = answer.pools.map((pool) =>
    [
      pool.name,
      pool.counts.waiting,
      pool.counts.active,
      pool.counts.delayed,
      pool.counts.failed,
      pool.jobsPerMinute,
      pool.workersOnline,
      pool.concurrency,
    ].map(String),
  );
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const format = (row: string[]) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  process.stdout.write(
    `${paint.bold(format(header))}\n${rows.map(format).join('\n')}\n${paint.dim(`${answer.workers} worker process${answer.workers === 1 ? '' : 'es'} online`)}\n`,
  );
  return 0;
}

export async function cancelCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { batch?: string; json?: boolean },
): Promise<number> {
  if (flags.batch !== undefined && !taskId) return bulkOnBatch(client, 'cancel', flags.batch, flags);
  if (!taskId || flags.batch !== undefined) throw new UsageError('usage: agentq cancel ID, or agentq cancel --batch B');
  // A task that already ended has nothing to cancel: said, and exit 1.
  const task = await client.call<{ id: string; status: string }>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
  if (isTerminalStatus(task.status)) {
    process.stdout.write(
      flags.json
        ? `${JSON.stringify({ id: task.id, status: task.status, cancelled: false })}\n`
        : `${task.id} already ended (${task.status}): nothing to cancel\n`,
    );
    return 1;
  }
  const answer = await client.call<{ id: string; status: string }>(
    'POST',
    `/v1/tasks/${encodeURIComponent(taskId)}/cancel`,
    {},
  );
  process.stdout.write(
    flags.json ? `${JSON.stringify(answer)}\n` : `cancel requested: ${answer.id} is ${answer.status}\n`,
  );
  return 0;
}

export async function retryCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { batch?: string; json?: boolean },
): Promise<number> {
  if (flags.batch !== undefined && !taskId) return bulkOnBatch(client, 'retry', flags.batch, flags);
  if (!taskId || flags.batch !== undefined) throw new UsageError('usage: agentq retry ID, or agentq retry --batch B');
  const answer = await client.call<{ id: string; retryOf: string }>(
    'POST',
    `/v1/tasks/${encodeURIComponent(taskId)}/retry`,
    {},
  );
  process.stdout.write(flags.json ? `${JSON.stringify(answer)}\n` : `${answer.id}\n`);
  return 0;
}

export async function forkCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { 'from-step'?: string; prompt?: string; model?: string; agent?: string; json?: boolean },
): Promise<number> {
  const fromStep = Number(flags['from-step']);
  if (!taskId || !Number.isInteger(fromStep) || fromStep < 1)
    throw new UsageError('usage: agentq fork ID --from-step N [--prompt TEXT] [--model M] [--agent A]');
  const body = {
    fromStep,
    ...(flags.prompt ? { prompt: flags.prompt } : {}),
    ...(flags.model ? { model: flags.model } : {}),
    ...(flags.agent ? { agent: flags.agent } : {}),
  };
  const answer = await client.call<{ id: string; forkOf: { id: string; step: number } }>(
    'POST',
    `/v1/tasks/${encodeURIComponent(taskId)}/fork`,
    body,
  );
  process.stdout.write(flags.json ? `${JSON.stringify(answer)}\n` : `${answer.id}\n`);
  return 0;
}

export async function deleteCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { batch?: string; json?: boolean },
): Promise<number> {
  if (flags.batch !== undefined && !taskId) return deleteBatch(client, flags.batch, flags);
  if (!taskId || flags.batch !== undefined) throw new UsageError('usage: agentq delete ID, or agentq delete --batch B');
  await client.call('DELETE', `/v1/tasks/${encodeURIComponent(taskId)}`);
  process.stdout.write(flags.json ? `${JSON.stringify({ id: taskId, deleted: true })}\n` : `deleted ${taskId}\n`);
  return 0;
}

interface BulkAnswer {
  action: string;
  matched: number;
  changed: number;
  more: boolean;
}

/** Cancels what has not ended of a batch, or retries what failed of it, as new tasks; one request (10,000 at most). */
async function bulkOnBatch(
  client: ApiClient,
  action: 'cancel' | 'retry',
  batch: string,
  flags: { json?: boolean },
): Promise<number> {
  const answer = await client.call<BulkAnswer>('POST', '/v1/tasks/bulk', { action, batch });
  const tasks = `${answer.changed} task${answer.changed === 1 ? '' : 's'} of batch ${batch}`;
  const more = answer.more ? ' (more than 10,000 match: run it again)' : '';
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(answer)}\n`
      : `${action === 'cancel' ? `cancel requested: ${tasks}` : `retried ${tasks} as new tasks`}${more}\n`,
  );
  return 0;
}

/** Every ended task of a batch, 10,000 a request; exit 1 when some are left (a subtask of theirs still runs). */
async function deleteBatch(client: ApiClient, batch: string, flags: { json?: boolean }): Promise<number> {
  let deleted = 0;
  let left = 0;
  for (;;) {
    const answer = await client.call<BulkAnswer>('POST', '/v1/tasks/bulk', { action: 'delete', batch });
    deleted += answer.changed;
    left = answer.matched - answer.changed;
    // Those left match again: asking once more would find them again and nothing else.
    if (!answer.more || answer.changed === 0) break;
  }
  if (flags.json) process.stdout.write(`${JSON.stringify({ batch, deleted, left })}\n`);
  else
    process.stdout.write(
      `deleted ${deleted} task${deleted === 1 ? '' : 's'} of batch ${batch}${left ? `; ${left} left: a subtask of theirs has not ended (cancel them first)` : ''}\n`,
    );
  return left ? 1 : 0;
}
