/**
 * The task list: newest first, filters by status and batch (`#/tasks?batch=<id>`), search over prompts,
 * paging, live updates, why a task failed, and bulk actions on what the filter shows; a batch that ran
 * on several models is also shown side by side by model.
 */
import { html, nothing, render, type TemplateResult } from 'lit-html';
import { repeat } from 'lit-html/directives/repeat.js';
import { TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';
import { request, type TaskSummary } from '../api.js';
import { h, replaceChildren } from '../dom.js';
import { ago, clip, shortId, taskDuration, tokens, usd } from '../format.js';
import { modelComparison } from './model-comparison.js';
import { submitForm } from './submit-form.js';

const STATUSES = ['', 'queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'];
const PAGE = 50;
const BULK_DONE = { cancel: 'Cancelled', retry: 'Retried', delete: 'Deleted' };
const REFRESH_MS = 2_000;

export function tasksView(container: HTMLElement, signal: AbortSignal): void {
  let query = '';
  const linked = new URLSearchParams(location.hash.split('?')[1] ?? '');
  // A link may name a status (the overview's tiles) or a batch.
  let status = STATUSES.includes(linked.get('status') ?? '') ? linked.get('status')! : '';
  let batch = linked.get('batch') ?? '';
  let shown = PAGE;
  let nextCursor: string | null = null;

  const rows = h('tbody', { id: 'task-rows' });
  const more = h('button', { class: 'ghost', onclick: () => ((shown += PAGE), void refresh()) }, 'Load more');
  const empty = h('p', { class: 'empty' });
  const chips = h(
    'div',
    { class: 'chips', role: 'tablist' },
    ...STATUSES.map((value) =>
      h(
        'button',
        {
          class: `chip${value === status ? ' active' : ''}`,
          'data-status': value || 'all',
          onclick: (event: Event) => {
            status = value;
            shown = PAGE;
            for (const chip of chips.children) chip.classList.toggle('active', chip === event.currentTarget);
            void refresh();
          },
        },
        value || 'all',
      ),
    ),
  );
  let searchTimer: number | undefined;
  const search = h('input', {
    type: 'search',
    id: 'task-search',
    placeholder: 'Search prompts',
    oninput: (event: Event) => {
      window.clearTimeout(searchTimer);
      searchTimer = window.setTimeout(() => {
        query = (event.target as HTMLInputElement).value.trim();
        shown = PAGE;
        void refresh();
      }, 250);
    },
  });

  const batchInput = h('input', {
    type: 'search',
    id: 'batch-filter',
    placeholder: 'Batch id',
    value: batch,
    onchange: (event: Event) => showBatch((event.target as HTMLInputElement).value.trim()),
  });
  const showBatch = (value: string) => {
    batch = value;
    batchInput.value = value;
    shown = PAGE;
    history.replaceState(null, '', value ? `#/tasks?batch=${encodeURIComponent(value)}` : '#/tasks');
    void refresh();
  };
  const bulkMessage = h('span', { class: 'form-message', role: 'status', id: 'bulk-message' });
  const bulk = (action: 'cancel' | 'retry' | 'delete', label: string, id: string) =>
    h(
      'button',
      {
        id,
        class: 'ghost',
        onclick: async () => {
          // Each action's own statuses: retry the failed (or the cancelled ones shown), delete the ended ones shown.
          const only =
            action === 'retry'
              ? status === 'cancelled'
                ? 'cancelled'
                : 'failed'
              : action === 'delete'
                ? TERMINAL_STATUSES.has(status as TaskStatus)
                  ? status
                  : ''
                : status;
          const filter = { ...(batch ? { batch } : {}), ...(only ? { status: only } : {}) };
          if (
            !window.confirm(
              `${label}: every task ${batch ? `of batch ${batch}` : ''}${only ? ` that is ${only}` : ''}${action === 'delete' ? ', for good' : ''}?`,
            )
          )
            return;
          try {
            const done = await request<{ matched: number; changed: number; more: boolean }>('/v1/tasks/bulk', {
              method: 'POST',
              body: { action, ...filter },
            });
            const left =
              action === 'delete' && done.matched > done.changed
                ? ` (${done.matched - done.changed} left: a subtask of theirs has not ended)`
                : '';
            bulkMessage.textContent = `${BULK_DONE[action]} ${done.changed} task${done.changed === 1 ? '' : 's'}${left}${done.more ? ' (more match: do it again)' : ''}.`;
            void refresh();
          } catch (error) {
            bulkMessage.textContent = (error as Error).message;
          }
        },
      },
      label,
    );
  const comparison = h('div', { class: 'comparison-scroll' });
  const totals = h('div', { class: 'batch-totals', id: 'batch-totals' });
  const bulkBar = h(
    'div',
    { class: 'bulk', hidden: true },
    bulk('cancel', 'Cancel unfinished', 'bulk-cancel'),
    bulk('retry', 'Retry failed', 'bulk-retry'),
    bulk('delete', 'Delete ended', 'bulk-delete'),
    bulkMessage,
  );

  replaceChildren(
    container,
    submitForm((_ids, submitted) => showBatch(submitted)),
    h('div', { class: 'toolbar' }, chips, h('span', { class: 'spacer' }), batchInput, search),
    bulkBar,
    totals,
    comparison,
    h(
      'table',
      { class: 'tasks card' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...[
            'Task',
            'Prompt',
            'Agent',
            'Status',
            'Batch',
            'Model',
            'Steps',
            'Tokens',
            'Cost',
            'Duration',
            'Created',
          ].map((title) => h('th', {}, title)),
        ),
      ),
      rows,
    ),
    empty,
    more,
  );

  async function refresh(): Promise<void> {
    // Summaries: the list shows no result, and one may be megabytes, read again at every refresh.
    const params = new URLSearchParams({ fields: 'summary' });
    if (status) params.set('status', status);
    if (query) params.set('q', query);
    if (batch) params.set('batch', batch);
    // Bulk actions apply to a filter: a batch, or a status (never to everything).
    bulkBar.hidden = !batch && !status;
    try {
      // The rows shown, a page at a time: a page may end early (the API caps it in bytes, and a search in
      // prompt bytes read: a page of it may hold no match yet, with more to come).
      const page: { tasks: TaskSummary[]; nextCursor: string | null } = { tasks: [], nextCursor: null };
      do {
        params.set('limit', String(Math.min(shown - page.tasks.length, 500)));
        if (page.nextCursor) params.set('cursor', page.nextCursor);
        const next = await request<{ tasks: TaskSummary[]; nextCursor: string | null }>(`/v1/tasks?${params}`, {
          signal,
        });
        page.tasks.push(...next.tasks);
        page.nextCursor = next.nextCursor;
      } while (page.nextCursor && page.tasks.length < shown);
      nextCursor = page.nextCursor;
      // Patched in place (rows keyed by task): a selection in the list survives its updates.
      render(html`${repeat(page.tasks, (task) => task.id, taskRow)}`, rows);
      render(batch ? modelComparison(page.tasks) : nothing, comparison);
      render(batch ? batchTotals(page.tasks, nextCursor !== null) : nothing, totals);
      empty.textContent = page.tasks.length
        ? ''
        : query || status || batch
          ? 'No task matches.'
          : 'No tasks yet: submit a batch above.';
      more.hidden = !nextCursor;
    } catch (error) {
      if (!signal.aborted) empty.textContent = `Could not load the tasks: ${(error as Error).message}`;
    }
  }

  void refresh();
  // A timed refresh skips its turn while one runs: a search of many large prompts takes several pages
  // (each bounded by the API), and refreshes piling up would wait on each other.
  let refreshing = false;
  const timer = window.setInterval(() => {
    if (refreshing) return;
    refreshing = true;
    void refresh().finally(() => (refreshing = false));
  }, REFRESH_MS);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

/** A batch as one: how many of its tasks ended, by status, with its tokens and cost (of the tasks loaded). */
function batchTotals(tasks: readonly TaskSummary[], more: boolean): TemplateResult {
  const byStatus = new Map<string, number>();
  for (const task of tasks) byStatus.set(task.status, (byStatus.get(task.status) ?? 0) + 1);
  const ended = tasks.filter((task) => TERMINAL_STATUSES.has(task.status)).length;
  const used = tasks.reduce((sum, task) => sum + task.usage.promptTokens + task.usage.completionTokens, 0);
  const cost = tasks.reduce((sum, task) => sum + task.costUsd, 0);
  const percent = tasks.length ? Math.round((ended / tasks.length) * 100) : 0;
  return html`<div class="card totals">
    <strong>${tasks.length}${more ? '+' : ''} task${tasks.length === 1 ? '' : 's'}</strong>
    <progress class="progress" max=${tasks.length} .value=${ended} title="${ended} of ${tasks.length} ended"></progress>
    <span class="ended">${ended} ended (${percent}%)</span>
    ${[...byStatus].map(([status, count]) => html`<span class="badge status-${status}" data-status=${status}>${count} ${status}</span>`)}
    <span class="muted">${used.toLocaleString()} tokens · ${usd(cost)}</span>
    ${more ? html`<span class="muted">(of the tasks loaded: load more for all)</span>` : nothing}
  </div>`;
}

function taskRow(task: TaskSummary): TemplateResult {
  const href = `#/tasks/${encodeURIComponent(task.id)}`;
  // A click on the row opens the task, unless it ends a text selection.
  const open = () => {
    if (!window.getSelection()?.toString()) location.hash = href;
  };
  return html`<tr class="task-row" data-id=${task.id} @click=${open}>
    <td class="mono"><a href=${href}>${shortId(task.id)}</a></td>
    <td class="prompt" title=${task.truncated ? `${task.prompt}…` : task.prompt}>${clip(task.prompt, 90)}</td>
    <td>${task.agent}</td>
    <td class="status"><span class="badge status-${task.status}" data-status=${task.status}>${task.status}</span>${
      task.error
        ? html`<div class="reason" title=${task.error.message}>${task.error.code}: ${clip(task.error.message, 70)}</div>`
        : ''
    }</td>
    <td class="batch">${task.batch ? html`<a href="#/tasks?batch=${encodeURIComponent(task.batch)}" @click=${(event: Event) => event.stopPropagation()}>${clip(task.batch, 24)}</a>` : ''}</td>
    <td class="model muted">${task.model ?? ''}</td>
    <td class="num steps">${task.steps}</td>
    <td class="num">${tokens(task.usage)}</td>
    <td class="num cost">${task.costUsd ? usd(task.costUsd) : ''}</td>
    <td class="num">${taskDuration(task)}</td>
    <td class="muted" title=${task.createdAt}>${ago(task.createdAt)}</td>
  </tr>`;
}
