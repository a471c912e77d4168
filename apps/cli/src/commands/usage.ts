/** `agentq usage [--tenant T]`: a tenant's usage against each of its limits (GET /v1/usage). */
import type { UsageLimit, UsageView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { paint } from '../terminal.js';

const count = (value: number) => value.toLocaleString('en-US');
const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`);

export async function usageCommand(client: ApiClient, flags: { tenant?: string; json?: boolean }): Promise<number> {
  const usage = await client.call<UsageView>('GET', `/v1/usage${flags.tenant !== undefined ? `?tenant=${encodeURIComponent(flags.tenant)}` : ''}`);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(usage)}\n`);
    return 0;
  }
  const { tasks, limits, today } = usage;
  const reached = (limit: UsageLimit) => (usage.reached.includes(limit) ? `  ${paint.red('reached')}` : '');
  const daily = limits.daily;
  const spent = today
    ? [daily?.tokens != null ? `${count(today.tokens)} tokens of ${count(daily.tokens)}` : `${count(today.tokens)} tokens`, daily?.usd != null ? `$${today.usd.toFixed(4)} of $${daily.usd}` : `$${today.usd.toFixed(4)}`].join(', ')
    : paint.dim('not counted (no daily limit)');
  const rows: Array<[string, string]> = [
    ['unfinished tasks', `${count(tasks.unfinished)} of ${count(limits.unfinished)}${reached('unfinished')}`],
    ['stored tasks', `${count(tasks.stored)} of ${count(limits.stored)}${reached('stored')}`],
    ['written to Redis', `${size(usage.writtenBytes)}${limits.writtenBytes !== null ? ` of ${size(limits.writtenBytes)}` : paint.dim(' (no limit)')}${reached('writtenBytes')}`],
    ['spent today', `${spent}${today ? paint.dim(` (resets ${today.resetsAt})`) : ''}${reached('daily')}`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  process.stdout.write(`${paint.bold(`tenant ${usage.tenant}`)}\n${rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n')}\n`);
  if (usage.reached.length) process.stdout.write(`${paint.yellow('new tasks are refused while a limit is reached')}\n`);
  return 0;
}
