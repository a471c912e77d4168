/** The task list: newest first, filters by status, search over prompts, paging, live updates. */
import { request, type Task } from '../api.js';
import { h, replaceChildren } from '../dom.js';
import { ago, clip, shortId, taskDuration, tokens } from '../format.js';
import { statusBadge } from './status-badge.js';
import { submitForm } from './submit-form.js';

const STATUSES = ['', 'queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'];
const PAGE = 50;
const REFRESH_MS = 2_000;

export function tasksView(container: HTMLElement, signal: AbortSignal): void {
  let status = '';
  let query = '';
  let shown = PAGE;
  let nextCursor: string | null = null;

  const rows = h('tbody', { id: 'task-rows' });
  const more = h('button', { class: 'ghost', onclick: () => ((shown += PAGE), void refresh()) }, 'Load more');
  const empty = h('p', { class: 'empty' });
  const chips = h(
    'div',
    { class: 'chips', role: 'tablist' },
    ...STATUSES.map((value) =>
      h('button', { class: `chip${value === status ? ' active' : ''}`, 'data-status': value || 'all', onclick: (event: Event) => {
        status = value;
        shown = PAGE;
        for (const chip of chips.children) chip.classList.toggle('active', chip === event.currentTarget);
        void refresh();
      } }, value || 'all'),
    ),
  );
  let searchTimer: number | undefined;
  const search = h('input', { type: 'search', id: 'task-search', placeholder: 'Search prompts', oninput: (event: Event) => {
    window.clearTimeout(searchTimer);
    searchTimer = window.setTimeout(() => {
      query = (event.target as HTMLInputElement).value.trim();
      shown = PAGE;
      void refresh();
    }, 250);
  } });

  replaceChildren(
    container,
    submitForm(() => void refresh()),
    h('div', { class: 'toolbar' }, chips, h('span', { class: 'spacer' }), search),
    h(
      'table',
      { class: 'tasks card' },
      h('thead', {}, h('tr', {}, ...['Task', 'Prompt', 'Agent', 'Status', 'Steps', 'Tokens', 'Duration', 'Created'].map((title) => h('th', {}, title)))),
      rows,
    ),
    empty,
    more,
  );

  async function refresh(): Promise<void> {
    const params = new URLSearchParams({ limit: String(Math.min(shown, 500)) });
    if (status) params.set('status', status);
    if (query) params.set('q', query);
    try {
      const page = await request<{ tasks: Task[]; nextCursor: string | null }>(`/v1/tasks?${params}`, { signal });
      nextCursor = page.nextCursor;
      replaceChildren(rows, ...page.tasks.map(taskRow));
      empty.textContent = page.tasks.length ? '' : query || status ? 'No task matches.' : 'No tasks yet: submit a batch above.';
      more.hidden = !nextCursor;
    } catch (error) {
      if (!signal.aborted) empty.textContent = `Could not load the tasks: ${(error as Error).message}`;
    }
  }

  void refresh();
  const timer = window.setInterval(() => void refresh(), REFRESH_MS);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

function taskRow(task: Task): HTMLTableRowElement {
  const open = () => (location.hash = `#/tasks/${encodeURIComponent(task.id)}`);
  return h(
    'tr',
    { class: 'task-row', 'data-id': task.id, onclick: open },
    h('td', { class: 'mono' }, h('a', { href: `#/tasks/${encodeURIComponent(task.id)}` }, shortId(task.id))),
    h('td', { class: 'prompt', title: task.prompt }, clip(task.prompt, 90)),
    h('td', {}, task.agent),
    h('td', {}, statusBadge(task.status)),
    h('td', { class: 'num steps' }, task.steps),
    h('td', { class: 'num' }, tokens(task.usage)),
    h('td', { class: 'num' }, taskDuration(task)),
    h('td', { class: 'muted', title: task.createdAt }, ago(task.createdAt)),
  );
}
