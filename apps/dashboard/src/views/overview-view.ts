/**
 * The landing page: tasks by status, jobs finished and the success rate over the last hour, tokens and
 * model time per model, the slowest and the most expensive of the newest ended tasks, why tasks failed,
 * the pools (rate now, workers, failures, model time per call, how their tools run), and the key's
 * tenant against its limits (GET /v1/usage; an admin's: every tenant's, a line each, GET /v1/tenants).
 * A lit-html template, refreshed every 5 s in place.
 */
import { html, render, type TemplateResult } from 'lit-html';
import type { OverviewView, PoolView, TaskBrief, UsageLimit, UsageView } from '@agentq/contract';
import { request, type Me } from '../api.js';
import { h, replaceChildren } from '../dom.js';
import { bytes, clip, duration, shortId, usd } from '../format.js';
import { isolationBadge } from './pools-view.js';
import { timeChart } from './time-chart.js';

const REFRESH_MS = 5_000;
const SHOWN_STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const;

export function overviewView(container: HTMLElement, signal: AbortSignal): void {
  const root = h('div', { class: 'overview', id: 'overview' }, 'Loading…');
  replaceChildren(container, root);
  let first = true;
  let admin: boolean | undefined;
  const load = async () => {
    try {
      admin ??= (await request<Me>('/v1/me', { signal })).admin;
      const [overview, pools, usages] = await Promise.all([
        request<OverviewView>('/v1/overview', { signal }),
        request<{ pools: PoolView[] }>('/v1/pools', { signal }),
        // An admin sees every tenant's; a tenant its own.
        admin
          ? request<{ tenants: UsageView[] }>('/v1/tenants', { signal }).then((answer) => answer.tenants)
          : request<UsageView>('/v1/usage', { signal }).then((usage) => [usage]),
      ]);
      if (signal.aborted) return;
      if (first) root.replaceChildren();
      first = false;
      render(template(overview, pools.pools, usages), root);
    } catch (error) {
      if (!signal.aborted && first)
        replaceChildren(root, h('p', { class: 'error' }, `Could not load the overview: ${(error as Error).message}`));
    }
  };
  void load();
  const timer = window.setInterval(() => void load(), REFRESH_MS);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

function template(overview: OverviewView, pools: readonly PoolView[], usages: readonly UsageView[]): TemplateResult {
  const { counts, perMinute, sample } = overview;
  const finished = perMinute.completed.map((done, index) => done + perMinute.failed[index]!);
  const successRate = perMinute.completed.map((done, index) =>
    finished[index] ? Math.round((1000 * done) / finished[index]!) / 10 : null,
  );
  const lastHour = { done: sum(perMinute.completed), failed: sum(perMinute.failed) };
  const agentOf = new Map(sample.agents.map((agent) => [agent.agent, agent]));
  return html`
    <section class="tiles">
      ${SHOWN_STATUSES.map(
        (status) =>
          html`<a class="tile card" href="#/tasks?status=${status}" data-status=${status}><span class="count">${counts[status] ?? 0}</span><span class="badge status-${status}">${status}</span></a>`,
      )}
    </section>
    <section class="charts">
      <div class="card">
        <h2>Jobs finished per minute · last hour: ${lastHour.done} completed, ${lastHour.failed} failed</h2>
        ${timeChart({
          kind: 'bars',
          start: perMinute.start,
          unit: 'jobs/min',
          label: 'Jobs finished per minute',
          series: [
            { name: 'completed', class: 'completed', values: perMinute.completed },
            { name: 'failed', class: 'failed', values: perMinute.failed },
          ],
        })}
      </div>
      <div class="card">
        <h2>Success rate · ${lastHour.done + lastHour.failed ? `${Math.round((100 * lastHour.done) / (lastHour.done + lastHour.failed))}% over the hour` : 'nothing finished this hour'}</h2>
        ${timeChart({ kind: 'line', start: perMinute.start, unit: '%', max: 100, label: 'Share of finished jobs that completed, per minute', series: [{ name: 'completed', class: 'completed', values: successRate }] })}
      </div>
    </section>
    <p class="muted">The tables below read the ${sample.size} newest ended tasks.</p>
    <section class="tables">
      <div class="card">
        <h2>Tokens and cost per model</h2>
        ${
          sample.models.length
            ? html`<table class="models">
              <thead><tr><th>Model</th><th class="num">Tasks</th><th class="num">Calls</th><th class="num">Tokens in</th><th class="num">Tokens out</th><th class="num">Cost</th><th class="num">Per call</th></tr></thead>
              <tbody>${sample.models.map((model) => html`<tr><td>${model.model}</td><td class="num">${model.tasks}</td><td class="num">${model.calls}</td><td class="num">${model.promptTokens}</td><td class="num">${model.completionTokens}</td><td class="num cost">${usd(model.costUsd)}</td><td class="num">${model.modelMsPerCall === null ? '—' : duration(model.modelMsPerCall)}</td></tr>`)}</tbody>
            </table>`
            : html`<p class="muted">No ended task yet.</p>`
        }
      </div>
      <div class="card">
        <h2>Why tasks failed</h2>
        ${
          sample.failures.length
            ? html`<table class="failures">
              <thead><tr><th>Reason</th><th class="num">Tasks</th><th>For example</th></tr></thead>
              <tbody>${sample.failures.map((failure) => html`<tr><td>${failure.code}</td><td class="num">${failure.count}</td><td><a href="#/tasks/${encodeURIComponent(failure.example.id)}" title=${failure.example.message}>${clip(failure.example.message, 80)}</a></td></tr>`)}</tbody>
            </table>`
            : html`<p class="muted">No failures.</p>`
        }
      </div>
      <div class="card">${briefTable('Slowest', 'slowest', sample.slowest, (task) => duration(task.durationMs) || '—')}</div>
      <div class="card">${briefTable('Most tokens', 'costliest', sample.costliest, (task) => `${task.tokens} tokens`)}</div>
    </section>
    <section class="card">
      <h2>Pools</h2>
      <table class="pools-table">
        <thead><tr><th>Pool</th><th class="num">Jobs/min now</th><th class="num">Waiting</th><th class="num">Running</th><th class="num">Failed</th><th class="num">Workers</th><th class="num">Model per call</th><th>Tools</th></tr></thead>
        <tbody>
          ${pools.map((pool) => {
            const agent = agentOf.get(pool.name);
            return html`<tr data-pool=${pool.name}>
              <td><a href="#/pools">${pool.name}</a></td>
              <td class="num rate">${pool.jobsPerMinute}</td>
              <td class="num">${pool.counts.waiting}</td>
              <td class="num">${pool.counts.active}</td>
              <td class="num">${pool.counts.failed}</td>
              <td class="num">${pool.workersOnline}</td>
              <td class="num">${agent?.modelMsPerCall == null ? '—' : duration(agent.modelMsPerCall)}</td>
              <td>${pool.isolation.map(isolationBadge)}</td>
            </tr>`;
          })}
        </tbody>
      </table>
    </section>
    ${usages.length === 1 ? usageCard(usages[0]!) : tenantsTable(usages)}
  `;
}

/** Several tenants (an admin's view): a line each, each figure against its limit, a limit reached in red. */
function tenantsTable(usages: readonly UsageView[]): TemplateResult {
  const plain = (value: number) => value.toLocaleString('en-US');
  const cell = (usage: UsageView, limit: UsageLimit, text: string) =>
    html`<td class=${usage.reached.includes(limit) ? 'num reached' : 'num'} data-limit=${limit}>${text}</td>`;
  return html`<section class="card usage" id="tenants">
    <h2>Limits · every tenant</h2>
    <table class="tenants-table">
      <thead><tr><th>Tenant</th><th class="num">Tasks not ended</th><th class="num">Tasks stored</th><th class="num">Written to Redis</th><th class="num">Today</th></tr></thead>
      <tbody>
        ${usages.map(
          (usage) => html`<tr data-tenant=${usage.tenant}>
            <td>${usage.tenant}</td>
            ${cell(usage, 'unfinished', `${plain(usage.tasks.unfinished)} of ${plain(usage.limits.unfinished)}`)}
            ${cell(usage, 'stored', `${plain(usage.tasks.stored)} of ${plain(usage.limits.stored)}`)}
            ${cell(usage, 'writtenBytes', usage.limits.writtenBytes === null ? bytes(usage.writtenBytes) : `${bytes(usage.writtenBytes)} of ${bytes(usage.limits.writtenBytes)}`)}
            ${cell(usage, 'daily', usage.today ? `${plain(usage.today.tokens)} tokens, ${usd(usage.today.usd)}` : '—')}
          </tr>`,
        )}
      </tbody>
    </table>
    <p class="muted">A figure in red is at its limit: that tenant's new tasks are refused. Today's spending is counted for tenants with a daily limit.</p>
  </section>`;
}

/** One of a tenant's limits: what it used of it (a limit of null: none). */
interface UsageRow {
  limit: UsageLimit;
  label: string;
  used: number;
  of: number | null;
  shown: (value: number) => string;
}

/** The key's tenant against each of its limits; a limit reached is said, as a submit would find it. */
function usageCard(usage: UsageView): TemplateResult {
  const plain = (value: number) => value.toLocaleString('en-US');
  const rows: UsageRow[] = [
    {
      limit: 'unfinished',
      label: 'Tasks not ended',
      used: usage.tasks.unfinished,
      of: usage.limits.unfinished,
      shown: plain,
    },
    { limit: 'stored', label: 'Tasks stored', used: usage.tasks.stored, of: usage.limits.stored, shown: plain },
    {
      limit: 'writtenBytes',
      label: 'Written to Redis',
      used: usage.writtenBytes,
      of: usage.limits.writtenBytes,
      shown: bytes,
    },
  ];
  const { today, limits } = usage;
  if (today && limits.daily) {
    if (limits.daily.tokens !== null)
      rows.push({ limit: 'daily', label: 'Tokens today', used: today.tokens, of: limits.daily.tokens, shown: plain });
    if (limits.daily.usd !== null)
      rows.push({ limit: 'daily', label: 'Spent today', used: today.usd, of: limits.daily.usd, shown: usd });
  }
  return html`<section class="card usage" data-tenant=${usage.tenant}>
    <h2>Limits · tenant ${usage.tenant}</h2>
    <table class="usage-table">
      <tbody>
        ${rows.map((row) => {
          const reached = usage.reached.includes(row.limit);
          return html`<tr data-limit=${row.limit} class=${reached ? 'reached' : ''}>
            <td>${row.label}</td>
            <td class="num used">${row.shown(row.used)}</td>
            <td class="num">${row.of === null ? 'no limit' : `of ${row.shown(row.of)}`}</td>
            <td class="meter">${row.of === null ? '' : html`<meter min="0" max=${row.of} low=${0.7 * row.of} high=${0.9 * row.of} optimum="0" value=${Math.min(row.used, row.of)} title=${`${row.label}: ${row.shown(row.used)} of ${row.shown(row.of)}`}></meter>`}</td>
            <td>${reached ? html`<span class="badge status-failed">reached</span>` : ''}</td>
          </tr>`;
        })}
      </tbody>
    </table>
    ${
      usage.reached.length
        ? html`<p class="refused">New tasks are refused while a limit is reached${today && usage.reached.includes('daily') ? ` (the day's spending starts again at ${today.resetsAt})` : ''}.</p>`
        : today
          ? ''
          : html`<p class="muted">No daily limit: this tenant's spending is not counted.</p>`
    }
  </section>`;
}

function briefTable(
  title: string,
  id: string,
  tasks: readonly TaskBrief[],
  figure: (task: TaskBrief) => string,
): TemplateResult {
  return html`<h2>${title}</h2>
    ${
      tasks.length
        ? html`<table class=${id}>
          <tbody>${tasks.map((task) => html`<tr><td class="mono"><a href="#/tasks/${encodeURIComponent(task.id)}">${shortId(task.id)}</a></td><td>${clip(task.prompt, 60)}</td><td><span class="badge status-${task.status}">${task.status}</span></td><td class="num">${figure(task)}</td></tr>`)}</tbody>
        </table>`
        : html`<p class="muted">No ended task yet.</p>`
    }`;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
