/**
 * `agentq submit FILE.jsonl|-`: one task per line (a JSON task, or a plain prompt), prints the ids,
 * and with `--watch` a progress bar of the batch until it ends. Exits 1 when any task did not complete.
 */
import { readFile } from 'node:fs/promises';
import { BatchLineError, isTerminalStatus, parseBatchLines, TERMINAL_STATUSES } from '@agentq/contract';
import { ClientError, type ApiClient } from '../api-client.js';
import { paint, statusLine } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export interface SubmitFlags {
  agent?: string;
  priority?: string;
  /** The model of every task whose line names none. */
  model?: string;
  /** The batch the tasks are submitted in (to list, watch and act on together). */
  batch?: string;
  watch?: boolean;
  json?: boolean;
}

const POLL_MS = 500;

export async function submitCommand(
  client: ApiClient,
  source: string | undefined,
  flags: SubmitFlags,
): Promise<number> {
  if (!source)
    throw new UsageError(
      'usage: agentq submit FILE.jsonl|- [--agent coder] [--priority 5] [--model M] [--batch B] [--watch] [--json]',
    );
  const text =
    source === '-'
      ? await readStdin()
      : await readFile(source, 'utf8').catch((error: NodeJS.ErrnoException) => {
          throw new UsageError(
            error.code === 'ENOENT'
              ? `No file ${source}: give a JSONL file of tasks, or - for standard input.`
              : `Cannot read ${source}: ${error.message}`,
          );
        });
  const name = source === '-' ? 'standard input' : source;
  let lines: Array<{ line: number; task: Record<string, unknown> }>;
  try {
    lines = parseBatchLines(text, {
      ...(flags.agent ? { agent: flags.agent } : {}),
      ...(flags.priority ? { priority: Number(flags.priority) } : {}),
    });
  } catch (error) {
    throw error instanceof BatchLineError ? new UsageError(`${name}: ${error.message}`) : error;
  }
  if (lines.length === 0) throw new UsageError(`${name} holds no task.`);
  const tasks = lines.map((entry) =>
    flags.model && entry.task.model === undefined ? { ...entry.task, model: flags.model } : entry.task,
  );
  const { tasks: created } = await client
    .call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', {
      ...(flags.batch !== undefined ? { batch: flags.batch } : {}),
      tasks,
    })
    .catch((error: unknown) => {
      throw error instanceof ClientError ? withLines(error, name, lines) : error;
    });
  const ids = created.map((task) => task.id);
  if (!flags.watch) {
    process.stdout.write(flags.json ? `${JSON.stringify({ tasks: created })}\n` : `${ids.join('\n')}\n`);
    return 0;
  }
  if (!flags.json) process.stdout.write(paint.dim(`submitted ${ids.length} task${ids.length === 1 ? '' : 's'}\n`));
  const statuses = await watchBatch(client, ids, !flags.json);
  const counts = countBy(statuses);
  if (flags.json)
    process.stdout.write(`${JSON.stringify({ tasks: ids.map((id) => ({ id, status: statuses.get(id) })), counts })}\n`);
  const unsuccessful = ids.filter((id) => statuses.get(id) !== 'completed');
  if (!flags.json && unsuccessful.length) {
    process.stdout.write(
      `${paint.red(`${unsuccessful.length} did not complete`)}: ${unsuccessful
        .slice(0, 10)
        .map((id) => `${id} (${statuses.get(id)})`)
        .join(', ')}${unsuccessful.length > 10 ? ', …' : ''}\n`,
    );
  }
  return unsuccessful.length ? 1 : 0;
}

/**
 * The API names a refused task by its index (`tasks.3.prompt`): said as the line of the file it came
 * from, e.g. `tasks.jsonl line 7: prompt: must be a non-empty string`.
 */
function withLines(error: ClientError, name: string, lines: ReadonlyArray<{ line: number }>): ClientError {
  const details = Array.isArray(error.details) ? (error.details as Array<{ path?: string; message?: string }>) : [];
  const located = details.flatMap((detail) => {
    const match = /^tasks\.(\d+)\.?(.*)$/.exec(detail.path ?? '');
    const entry = match ? lines[Number(match[1])] : undefined;
    return entry ? [`${name} line ${entry.line}: ${match![2] || 'task'}: ${detail.message ?? ''}`] : [];
  });
  if (!located.length) return error;
  return new ClientError(
    `The API refused the batch:\n  ${located.slice(0, 10).join('\n  ')}${located.length > 10 ? `\n  (and ${located.length - 10} more)` : ''}`,
    error.status,
    error.details,
    error.code === 'unreachable' ? undefined : error.code,
  );
}

/** Polls the batch's statuses and draws the progress bar until every task ended. */
async function watchBatch(client: ApiClient, ids: string[], draw: boolean): Promise<Map<string, string>> {
  const statuses = new Map<string, string>();
  const line = statusLine();
  const started = Date.now();
  for (;;) {
    const open = ids.filter((id) => !isTerminalStatus(statuses.get(id)));
    for (let index = 0; index < open.length; index += 10_000) {
      const { tasks } = await client.call<{ tasks: Array<{ id: string; status: string | null }> }>(
        'POST',
        '/v1/tasks/statuses',
        { ids: open.slice(index, index + 10_000) },
      );
      for (const task of tasks) statuses.set(task.id, task.status ?? 'missing');
    }
    const counts = countBy(statuses);
    if (draw) line.update(progress(counts, ids.length, Date.now() - started));
    if (ids.every((id) => isTerminalStatus(statuses.get(id)))) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  line.done();
  return statuses;
}

function progress(counts: Record<string, number>, total: number, elapsedMs: number): string {
  const done = [...TERMINAL_STATUSES].reduce((sum, status) => sum + (counts[status] ?? 0), 0);
  const width = 28;
  const filled = Math.round((done / total) * width);
  const rate = done / Math.max(elapsedMs / 1000, 0.001);
  const eta = done && done < total ? ` · ETA ${Math.ceil((total - done) / rate)}s` : '';
  // Ended without completing: failed, skipped or cancelled.
  const failed = done - (counts.completed ?? 0);
  return [
    `[${paint.green('#'.repeat(filled))}${'-'.repeat(width - filled)}] ${done}/${total} done`,
    failed ? paint.red(`${failed} failed`) : '0 failed',
    `${(counts.running ?? 0) + (counts.waiting ?? 0)} running`,
    `${rate.toFixed(1)} tasks/s${eta}`,
  ].join(' · ');
}

function countBy(statuses: Map<string, string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses.values()) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
