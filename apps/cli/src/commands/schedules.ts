/** `agentq schedules`: the key's tenant's schedules, a line each: timing, next run, last run (GET /v1/schedules). */
import type { ScheduleView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { table } from '../terminal.js';

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
  process.stdout.write(table(['id', 'when', 'next', 'last run', 'prompt'], rows));
  return 0;
}
