/**
 * `agentq usage [--tenant T]`: a tenant's usage against each of its limits (GET /v1/usage); `--all` (an
 * admin key) every tenant's, a line each (GET /v1/tenants).
 */
import type { UsageLimit, UsageView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { paint, table } from '../terminal.js';
import { UsageError } from '../usage-error.js';

const count = (value: number) => value.toLocaleString('en-US');
const size = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;

export async function usageCommand(
  client: ApiClient,
  flags: { tenant?: string; all?: boolean; json?: boolean },
): Promise<number> {
  if (flags.all && flags.tenant !== undefined)
    throw new UsageError('usage: agentq usage [--tenant T], or agentq usage --all');
  if (flags.all) {
    const { tenants } = await client.call<{ tenants: UsageView[] }>('GET', '/v1/tenants');
    process.stdout.write(flags.json ? `${JSON.stringify({ tenants })}\n` : tenantTable(tenants));
    return 0;
  }
  const usage = await client.call<UsageView>(
    'GET',
    `/v1/usage${flags.tenant !== undefined ? `?tenant=${encodeURIComponent(flags.tenant)}` : ''}`,
  );
  process.stdout.write(flags.json ? `${JSON.stringify(usage)}\n` : card(usage));
  return 0;
}

/** One tenant, a line per limit. */
function card(usage: UsageView): string {
  const rows: Array<[string, string]> = [
    [
      'unfinished tasks',
      withReached(usage, 'unfinished', `${count(usage.tasks.unfinished)} of ${count(usage.limits.unfinished)}`),
    ],
    ['stored tasks', withReached(usage, 'stored', `${count(usage.tasks.stored)} of ${count(usage.limits.stored)}`)],
    ['written to Redis', withReached(usage, 'writtenBytes', written(usage))],
    [
      'spent today',
      withReached(
        usage,
        'daily',
        `${spent(usage)}${usage.today ? paint.dim(` (resets ${usage.today.resetsAt})`) : ''}`,
      ),
    ],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const refused = usage.reached.length ? `${paint.yellow('new tasks are refused while a limit is reached')}\n` : '';
  return `${paint.bold(`tenant ${usage.tenant}`)}\n${rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n')}\n${refused}`;
}

/** Every tenant, a line each. */
function tenantTable(tenants: readonly UsageView[]): string {
  const header = ['tenant', 'unfinished', 'stored', 'written', 'today', 'reached'];
  const rows = tenants.map((usage) => [
    usage.tenant,
    `${count(usage.tasks.unfinished)}/${count(usage.limits.unfinished)}`,
    `${count(usage.tasks.stored)}/${count(usage.limits.stored)}`,
    written(usage),
    usage.today ? `${count(usage.today.tokens)} tokens, $${usage.today.usd.toFixed(4)}` : '-',
    usage.reached.join(', ') || '-',
  ]);
  return table(header, rows);
}

function written(usage: UsageView): string {
  return `${size(usage.writtenBytes)}${usage.limits.writtenBytes !== null ? ` of ${size(usage.limits.writtenBytes)}` : paint.dim(' (no limit)')}`;
}

function spent({ today, limits }: UsageView): string {
  if (!today) return paint.dim('not counted (no daily limit)');
  const daily = limits.daily;
  return [
    daily?.tokens != null ? `${count(today.tokens)} tokens of ${count(daily.tokens)}` : `${count(today.tokens)} tokens`,
    daily?.usd != null ? `$${today.usd.toFixed(4)} of $${daily.usd}` : `$${today.usd.toFixed(4)}`,
  ].join(', ');
}

function withReached(usage: UsageView, limit: UsageLimit, text: string): string {
  return usage.reached.includes(limit) ? `${text}  ${paint.red('reached')}` : text;
}
