/**
 * `agentq schedules [--tenant T]`: the key's tenant's schedules (an admin key: every tenant's, or T's),
 * a line each: timing, next run (or why agentq paused it), last run, prompt (each on one line, as `agentq
 * list` shows a prompt). Every page of GET /v1/schedules.
 */
import type { SchedulePageView, ScheduleView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { oneLine, table, terminalSafeDeep } from '../terminal.js';

export async function schedulesCommand(client: ApiClient, flags: { tenant?: string; json?: boolean }): Promise<number> {
  const schedules: ScheduleView[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({
      limit: '500',
      ...(flags.tenant !== undefined ? { tenant: flags.tenant } : {}),
      ...(cursor ? { cursor } : {}),
    });
    const page: SchedulePageView = await client.call<SchedulePageView>('GET', `/v1/schedules?${query}`);
    schedules.push(...page.schedules);
    cursor = page.nextCursor;
  } while (cursor);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ schedules })}\n`);
    return 0;
  }
  if (!schedules.length) {
    process.stdout.write('no schedules (POST /v1/schedules makes one; see docs/running-tasks.md#schedules)\n');
    return 0;
  }
  // A prompt or a skip's reason is any tenant's text (an admin lists every tenant's): shown inert.
  const rows = terminalSafeDeep(schedules).map((schedule) => {
    const last = schedule.lastRuns[0];
    return [
      schedule.id,
      schedule.tenant,
      schedule.cron ? `cron ${schedule.cron} ${schedule.timezone ?? 'UTC'}` : `every ${schedule.every} ms`,
      schedule.paused
        ? `paused${schedule.pausedReason ? `: ${oneLine(schedule.pausedReason, 60)}` : ''}`
        : (schedule.nextRunAt ?? '-'),
      last ? `${last.at} ${last.taskId ?? `skipped: ${oneLine(last.skipped ?? '', 60)}`}` : '-',
      oneLine(String(schedule.task.prompt ?? ''), 40),
    ];
  });
  process.stdout.write(table(['id', 'tenant', 'when', 'next', 'last run', 'prompt'], rows));
  return 0;
}
