/** `agentq schedules`: the key's tenant's schedules, a line each: timing, next run, last run (GET /v1/schedules). */
import type { ScheduleView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { paint } from '../terminal.js';

export async function schedulesCommand(client: ApiClient, flags: { json?: boolean }): Promise<number> {
  const { schedules } = await client.call<{ schedules: ScheduleView[] }>('GET', '/v1/schedules');
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ schedules })}\n`);
    return 0;
  }
  if (!schedules.length) {
    process.stdout.write('no schedules (POST /v1/schedules makes one; see docs/running-tasks.md#schedules)\n');
    return 0;
  }
  const rows = schedules.map((schedule) => {
    const last = schedule.lastRuns[0];
    return [
      schedule.id,
      schedule.cron ? `cron ${schedule.cron} ${schedule.timezone ?? 'UTC'}` : `every ${schedule.every} ms`,
      schedule.paused ? 'paused' : (schedule.nextRunAt ?? '-'),
      last ? `${last.at} ${last.taskId ?? `skipped: ${last.skipped}`}` : '-',
      String(schedule.task.prompt ?? '').slice(0, 40),
    ];
  });
  const header = ['id', 'when', 'next', 'last run', 'prompt'];
  const widths = header.map((name, column) => Math.max(name.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${paint.bold(line(header))}\n${rows.map(line).join('\n')}\n`);
  return 0;
}
