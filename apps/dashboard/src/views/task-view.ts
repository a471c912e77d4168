/** One task: what it is, its plan as a graph, its subtasks, and the timeline of every step, live. */
import { followEvents, request, type Task } from '../api.js';
import { h, replaceChildren } from '../dom.js';
import { shortId, taskDuration, tokens } from '../format.js';
import { planGraph } from './plan-graph.js';
import { statusBadge } from './status-badge.js';
import { Timeline } from './timeline.js';

const ENDED = new Set(['completed', 'failed', 'skipped', 'cancelled']);

export function taskView(container: HTMLElement, taskId: string, signal: AbortSignal): void {
  const summary = h('section', { class: 'task-summary card' }, 'Loading…');
  const graph = h('section', { class: 'graph card', hidden: true });
  const timeline = new Timeline(taskId);
  replaceChildren(container, h('a', { href: '#/', class: 'back' }, '← All tasks'), summary, graph, h('section', { class: 'card' }, h('h2', {}, 'Timeline'), timeline.element));

  let refreshing: Promise<void> | undefined;
  const refresh = () => (refreshing ??= load().finally(() => (refreshing = undefined)));

  async function load(): Promise<void> {
    try {
      const task = await request<Task>(`/v1/tasks/${encodeURIComponent(taskId)}`, { signal });
      renderSummary(summary, task, refresh);
      const drawn = planGraph(task);
      graph.hidden = !drawn;
      if (drawn) replaceChildren(graph, h('h2', {}, planTitle(task.progress)), h('div', { class: 'graph-scroll' }, drawn));
    } catch (error) {
      if (!signal.aborted) replaceChildren(summary, h('p', { class: 'error' }, `Could not load task ${taskId}: ${(error as Error).message}`));
    }
  }

  void refresh();
  void followEvents(taskId, (event) => {
    timeline.add(event);
    void refresh();
  }, signal);
  // Durations tick while the task runs.
  const timer = window.setInterval(() => void refresh(), 2_000);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

function renderSummary(element: HTMLElement, task: Task, refresh: () => Promise<void>): void {
  const actions = h('div', { class: 'actions' });
  const message = h('span', { class: 'form-message', role: 'status' });
  const act = (label: string, path: string, options: { id: string; body?: unknown; after?: (answer: { id?: string }) => void }) =>
    h('button', { id: options.id, onclick: async () => {
      try {
        const answer = await request<{ id?: string }>(path, { method: 'POST', body: options.body ?? {} });
        message.textContent = '';
        options.after?.(answer);
        void refresh();
      } catch (error) {
        message.textContent = (error as Error).message;
      }
    } }, label);
  if (!ENDED.has(task.status)) actions.append(act('Cancel', `/v1/tasks/${encodeURIComponent(task.id)}/cancel`, { id: 'cancel-task' }));
  if ((task.status === 'failed' || task.status === 'cancelled') && !task.parentId) {
    actions.append(act('Retry', `/v1/tasks/${encodeURIComponent(task.id)}/retry`, { id: 'retry-task', after: (answer) => answer.id && (location.hash = `#/tasks/${encodeURIComponent(answer.id)}`) }));
  }
  actions.append(message);

  let answerForm: HTMLElement | string = '';
  if (task.status === 'waiting') {
    const input = h('input', { id: 'answer-text', placeholder: 'Your answer' });
    answerForm = h('form', { class: 'answer', onsubmit: async (event: Event) => {
      event.preventDefault();
      try {
        await request(`/v1/tasks/${encodeURIComponent(task.id)}/input`, { method: 'POST', body: { text: input.value } });
        void refresh();
      } catch (error) {
        message.textContent = (error as Error).message;
      }
    } }, h('strong', {}, 'The agent asks: '), h('span', { class: 'question' }, task.question ?? ''), input, h('button', { type: 'submit', class: 'primary' }, 'Answer'));
  }

  replaceChildren(
    element,
    h('div', { class: 'title-row' }, h('h1', { class: 'mono' }, shortId(task.id)), statusBadge(task.status), h('span', { class: 'spacer' }), actions),
    h('pre', { class: 'prompt' }, task.prompt),
    h(
      'dl',
      { class: 'facts' },
      ...fact('Agent', task.agent),
      ...fact('Steps', String(task.steps)),
      ...fact('Tokens', `${tokens(task.usage)} (${task.usage.promptTokens} in / ${task.usage.completionTokens} out)`),
      ...(task.totalUsage ? fact('With subtasks', `${tokens(task.totalUsage)} tokens`) : []),
      ...fact('Duration', taskDuration(task) || '—'),
      ...fact('Priority', String(task.priority)),
      ...(task.parentId ? fact('Part of', h('a', { href: `#/tasks/${encodeURIComponent(task.parentId)}` }, shortId(task.parentId))) : []),
    ),
    answerForm,
    task.result ? h('div', { class: 'result' }, h('h2', {}, task.status === 'failed' ? 'Partial results' : 'Result'), h('pre', { id: 'task-result' }, task.result)) : '',
    task.error ? h('div', { class: 'error-box' }, h('strong', {}, `${task.error.code}: `), task.error.message) : '',
    task.children?.length
      ? h('div', { class: 'children' }, h('h2', {}, 'Subtasks'), h('ul', {}, ...task.children.map((child) => h('li', {}, h('a', { href: `#/tasks/${encodeURIComponent(child.id)}` }, `Step ${child.planId} · ${child.agent}`), ' ', statusBadge(child.status)))))
      : '',
  );
}

function fact(label: string, value: string | Node): Node[] {
  return [h('dt', {}, label), h('dd', {}, value)];
}

/** "Plan · 3/4 done", and how many ended otherwise (failed, skipped, cancelled). */
function planTitle(progress: { done: number; ended: number; total: number } | undefined): string {
  const { done = 0, ended = 0, total = 0 } = progress ?? {};
  return `Plan · ${done}/${total} done${ended > done ? ` · ${ended - done} ended without completing` : ''}`;
}
