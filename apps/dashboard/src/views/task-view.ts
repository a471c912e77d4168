/**
 * One task: what it is, its plan as a graph, its subtasks, and the timeline of every step, live.
 *
 * The summary is a lit-html template patched in place: what a user types in the answer box, where the
 * focus is and what is selected survive every update. Updates come from the task's event stream (and,
 * while it runs, a slow refresh for its subtasks' progress and its duration); an ended task is fetched
 * once more and then left alone. lit-html puts every value in a text node or an attribute: model text is
 * never parsed as HTML; the result is shown as Markdown built from text nodes (markdown.ts).
 */
import { isTerminalStatus } from '@agentq/contract';
import { html, nothing, render, type TemplateResult } from 'lit-html';
import { followEvents, isLiveDelta, request, type Delivery, type Task } from '../api.js';
import { h, replaceChildren } from '../dom.js';
import { shortId, taskDuration, tokens, usd } from '../format.js';
import { markdown } from '../markdown.js';
import { planGraph } from './plan-graph.js';
import { Timeline } from './timeline.js';
import { waitingTemplate } from './waiting-for.js';

/** While a task runs: its record again this often (its subtasks' progress), and its duration each second. */
const REFRESH_MS = 5_000;
/** A pending delivery is looked at this long after its attempt is due: time for the attempt to answer. */
const ATTEMPT_MS = 500;

export function taskView(container: HTMLElement, taskId: string, signal: AbortSignal): void {
  const summary = h('section', { class: 'task-summary card' }, 'Loading…');
  const graph = h('section', { class: 'graph card', hidden: true });
  const timeline = new Timeline(taskId, async (body) => {
    try {
      const fork = await request<{ id: string }>(`/v1/tasks/${encodeURIComponent(taskId)}/fork`, {
        method: 'POST',
        body,
      });
      location.hash = `#/tasks/${encodeURIComponent(fork.id)}`;
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  });
  // The model's answer as it forms (llm.delta, live only): shown until its step's llm.response comes.
  const forming = h('pre', { class: 'forming', hidden: true });
  replaceChildren(
    container,
    h('a', { href: '#/tasks', class: 'back' }, '← All tasks'),
    summary,
    graph,
    h('section', { class: 'card' }, h('h2', {}, 'Timeline'), timeline.element, forming),
  );

  const state: SummaryState = { task: undefined, message: '', result: undefined, deliveries: [], files: undefined };
  const draw = () => {
    if (!signal.aborted && state.task) render(summaryTemplate(state, actions), summary);
  };
  let graphKey = '';
  let refreshing: Promise<void> | undefined;
  let again = false;
  let timers: number[] = [];
  let attemptTimer: number | undefined;
  let ended = false;
  // One load at a time; one asked for while another runs (after a resend, say) runs after it, since the
  // one in flight may have read the task before the change: unless that one found nothing more to ask
  // for (stop), which an action undoes first (poll).
  const refresh = (): Promise<void> => {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    return (refreshing = load().finally(() => {
      refreshing = undefined;
      const next = again && timers.length > 0;
      again = false;
      if (next) void refresh();
    }));
  };
  // Polled while something may change: an ended task's page goes on only while a delivery is pending
  // (a resend starts it again).
  const poll = () => {
    if (timers.length || signal.aborted) return;
    timers = [window.setInterval(draw, 1_000), window.setInterval(() => void refresh(), REFRESH_MS)];
    delete summary.dataset.live;
  };
  const stop = () => {
    timers.forEach((timer) => window.clearInterval(timer));
    timers = [];
    window.clearTimeout(attemptTimer);
    // Said on the page, for whoever watches it (and the tests): nothing more is fetched.
    summary.dataset.live = 'off';
  };
  poll();
  signal.addEventListener('abort', stop);

  async function load(): Promise<void> {
    try {
      const task = await request<Task>(`/v1/tasks/${encodeURIComponent(taskId)}`, { signal });
      if (!state.task) summary.replaceChildren();
      state.task = task;
      // A planned task's files are its subtasks' (each folder its own).
      if (!task.plan)
        // A list that cannot be read (the task's folder swept) shows as no files; the task itself is shown.
        state.files = await request<{ files: TaskFile[]; truncated: boolean }>(
          `/v1/tasks/${encodeURIComponent(taskId)}/files`,
          { signal },
        ).catch(() => undefined);
      if (task.webhook)
        state.deliveries = (
          await request<{ deliveries: Delivery[] }>(`/v1/tasks/${encodeURIComponent(taskId)}/deliveries`, { signal })
        ).deliveries;
      draw();
      // The graph is drawn again only when the plan or a subtask's status changed.
      const key = JSON.stringify([task.plan?.length, task.children?.map((child) => child.status)]);
      if (key !== graphKey) {
        graphKey = key;
        const drawn = planGraph(task);
        graph.hidden = !drawn;
        if (drawn)
          replaceChildren(graph, h('h2', {}, planTitle(task.progress)), h('div', { class: 'graph-scroll' }, drawn));
      }
      const pending = state.deliveries.filter((delivery) => delivery.state === 'pending');
      if (isTerminalStatus(task.status) && ended && !pending.length) stop();
      else lookAfterAttempt(pending);
    } catch (error) {
      if (signal.aborted) return;
      if (!state.task)
        replaceChildren(
          summary,
          h('p', { class: 'error' }, `Could not load task ${taskId}: ${(error as Error).message}`),
        );
      else console.error(`Could not show task ${taskId}:`, error);
    }
  }

  // A pending delivery's next attempt is seen soon after it is due, not at the next slow refresh: a resend
  // shows its answer within about a second. An attempt still unanswered is looked at less and less often.
  function lookAfterAttempt(pending: Delivery[]): void {
    window.clearTimeout(attemptTimer);
    const due = Math.min(...pending.map((delivery) => Date.parse(delivery.nextAttemptAt ?? '') || Infinity));
    if (due === Infinity || !timers.length) return;
    const wait = Math.abs(due - Date.now()) + ATTEMPT_MS;
    if (wait < REFRESH_MS) attemptTimer = window.setTimeout(() => void refresh(), wait);
  }

  const actions: Actions = {
    post: async (path, body, after) => {
      try {
        const answer = await request<{ id?: string }>(path, { method: 'POST', body: body ?? {} });
        state.message = '';
        after?.(answer);
        poll();
        void refresh();
      } catch (error) {
        state.message = (error as Error).message;
        draw();
      }
    },
    remove: async (id) => {
      if (!window.confirm(`Delete task ${shortId(id)} for good, with its events, subtasks and files?`)) return;
      try {
        await request(`/v1/tasks/${encodeURIComponent(id)}`, { method: 'DELETE' });
        location.hash = '#/tasks';
      } catch (error) {
        state.message = (error as Error).message;
        draw();
      }
    },
  };

  void refresh();
  void followEvents(
    taskId,
    (event) => {
      if (isLiveDelta(event)) {
        if (event.data.restart) forming.textContent = '';
        const calls = event.data.toolCalls?.length ? `\n→ ${event.data.toolCalls.join(', ')}` : '';
        forming.textContent = `${forming.textContent ?? ''}${event.data.text ?? ''}${calls}`;
        forming.dataset.step = String(event.step ?? '');
        forming.hidden = !forming.textContent;
        return;
      }
      if (event.type === 'llm.response' || event.type === 'task.cancelled' || event.type === 'task.failed') {
        forming.textContent = '';
        forming.hidden = true;
      }
      timeline.add(event);
      void refresh();
    },
    signal,
  ).then(async () => {
    // The stream closes after the task's last event: one more look (after any in flight), then nothing more.
    ended = true;
    await refreshing;
    await refresh();
  });
}

interface SummaryState {
  task: Task | undefined;
  message: string;
  /** The result as Markdown, built once per text: the same node stays, and a selection in it too. */
  result: { text: string; node: HTMLElement } | undefined;
  /** Its webhook's deliveries (none without a webhook). */
  deliveries: Delivery[];
  /** What its folder holds (undefined: not read, or not readable by this API). */
  files: { files: TaskFile[]; truncated: boolean } | undefined;
}

/** A file of a task's folder, as `GET /v1/tasks/:id/files` lists it. */
interface TaskFile {
  path: string;
  size: number;
  modifiedAt: string;
}

interface Actions {
  post(path: string, body?: unknown, after?: (answer: { id?: string }) => void): Promise<void>;
  /** Deletes the task for good (once the user confirmed), then shows the task list. */
  remove(taskId: string): Promise<void>;
}

function summaryTemplate(state: SummaryState, actions: Actions): TemplateResult {
  const task = state.task!;
  const id = encodeURIComponent(task.id);
  if (task.result && state.result?.text !== task.result)
    state.result = { text: task.result, node: markdown(task.result) };
  return html`
    <div class="title-row">
      <h1 class="mono">${shortId(task.id)}</h1>
      <span class="badge status-${task.status}" data-status=${task.status}>${task.status}</span>
      <span class="spacer"></span>
      <div class="actions">
        ${!isTerminalStatus(task.status) ? html`<button id="cancel-task" @click=${() => actions.post(`/v1/tasks/${id}/cancel`)}>Cancel</button>` : nothing}
        ${
          (task.status === 'failed' || task.status === 'cancelled') && !task.parentId
            ? html`<button id="retry-task" @click=${() => actions.post(`/v1/tasks/${id}/retry`, {}, (answer) => answer.id && (location.hash = `#/tasks/${encodeURIComponent(answer.id)}`))}>Retry</button>`
            : nothing
        }
        ${isTerminalStatus(task.status) && !task.parentId ? html`<button id="delete-task" class="danger" @click=${() => actions.remove(task.id)}>Delete</button>` : nothing}
        <span class="form-message" role="status">${state.message}</span>
      </div>
    </div>
    <pre class="prompt">${task.prompt}</pre>
    <dl class="facts">
      <dt>Agent</dt><dd>${task.agent}</dd>
      <dt>Steps</dt><dd>${task.steps}</dd>
      <dt>Tokens</dt><dd>${tokens(task.usage)} (${task.usage.promptTokens} in / ${task.usage.completionTokens} out)</dd>
      <dt>Cost</dt><dd class="cost">${usd(task.costUsd)}</dd>
      ${task.totalUsage ? html`<dt>With subtasks</dt><dd>${tokens(task.totalUsage)} tokens · ${usd(task.totalCostUsd ?? 0)}</dd>` : nothing}
      ${task.budget ? html`<dt>Budget</dt><dd class="budget" data-spent=${task.budget.spent ? 'yes' : 'no'}>${budgetText(task.budget)}</dd>` : nothing}
      <dt>Duration</dt><dd class="duration">${taskDuration(task) || '—'}</dd>
      <dt>Priority</dt><dd>${task.priority}</dd>
      ${task.concurrency ? html`<dt>Concurrency key</dt><dd class="concurrency-key"><code>${task.concurrency.key}</code> (limit ${task.concurrency.limit})</dd>` : nothing}
      ${task.model ? html`<dt>Model</dt><dd class="model">${task.model}</dd>` : nothing}
      ${task.forkOf ? html`<dt>Forked from</dt><dd class="fork-of"><a href="#/tasks/${encodeURIComponent(task.forkOf.id)}">${shortId(task.forkOf.id)}</a>, step ${task.forkOf.step}</dd>` : nothing}
      ${task.parentId ? html`<dt>Part of</dt><dd class="parent"><a href="#/tasks/${encodeURIComponent(task.parentId)}">${shortId(task.parentId)}</a></dd>` : nothing}
      ${task.depth > 1 ? html`<dt>Root</dt><dd class="root"><a href="#/tasks/${encodeURIComponent(task.rootId)}">${shortId(task.rootId)}</a> (${task.depth} levels up)</dd>` : nothing}
    </dl>
    ${
      task.waitingFor
        ? waitingTemplate(task.waitingFor, {
            task,
            answer: (text, answered) => actions.post(`/v1/tasks/${id}/input`, { text }, answered),
            decide: (decision) => actions.post(`/v1/tasks/${id}/approvals`, decision),
          })
        : nothing
    }
    ${state.result ? html`<div class="result"><h2>${task.status === 'failed' ? 'Partial results' : 'Result'}</h2><div id="task-result">${state.result.node}</div></div>` : nothing}
    ${task.error ? html`<div class="error-box"><strong>${task.error.code}: </strong>${task.error.message}</div>` : nothing}
    ${state.files?.files.length ? filesTemplate(task.id, state.files) : nothing}
    ${task.webhook ? webhookTemplate(task.webhook, state.deliveries, (delivery) => actions.post(`/v1/tasks/${id}/deliveries/${encodeURIComponent(delivery)}/resend`)) : nothing}
    ${task.children?.length ? childrenTemplate(task) : nothing}
  `;
}

/**
 * The tasks it started (a `delegate` call's children) or its plan's subtasks: each with its agent, its
 * status and a link to it (its page links back: "Part of").
 */
function childrenTemplate(task: Task): TemplateResult {
  const planned = task.children!.some((child) => child.planId);
  return html`<div class="children">
    <h2>${planned ? 'Subtasks' : 'Tasks it started'}</h2>
    <ul>
      ${task.children!.map(
        (child) =>
          html`<li data-child=${child.id}><a href="#/tasks/${encodeURIComponent(child.id)}">${child.planId ? `Step ${child.planId}` : shortId(child.id)} · ${child.agent}</a> <span class="badge status-${child.status}" data-status=${child.status}>${child.status}</span></li>`,
      )}
    </ul>
  </div>`;
}

/** The task's files, each a download (the browser saves it: the API sends it as an attachment), and all of them. */
function filesTemplate(taskId: string, listed: { files: TaskFile[]; truncated: boolean }): TemplateResult {
  const base = `/v1/tasks/${encodeURIComponent(taskId)}`;
  const href = (file: TaskFile) => `${base}/files/${file.path.split('/').map(encodeURIComponent).join('/')}`;
  return html`<div class="files">
    <h2>Files <a class="download-all" href="${base}/files.tar.gz" download>download all (.tar.gz)</a></h2>
    <ul>
      ${listed.files.map(
        (file) =>
          html`<li><a class="mono" href=${href(file)} download>${file.path}</a> <span class="muted">${bytesText(file.size)}</span></li>`,
      )}
    </ul>
    ${listed.truncated ? html`<p class="muted">More files than shown: download them all.</p>` : nothing}
  </div>`;
}

function bytesText(bytes: number): string {
  return bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** Where the task's events go, and each delivery: its state, every attempt's answer, a resend. */
function webhookTemplate(
  webhook: NonNullable<Task['webhook']>,
  deliveries: readonly Delivery[],
  resend: (deliveryId: string) => void,
): TemplateResult {
  const attemptText = (attempt: Delivery['attempts'][number]) =>
    `${attempt.statusCode ?? 'no answer'}${attempt.error && attempt.statusCode === null ? ` (${attempt.error})` : ''}`;
  return html`<div class="webhook">
    <h2>Webhook</h2>
    <p><span class="mono">${webhook.url}</span> · ${webhook.events.join(', ')}</p>
    ${
      deliveries.length
        ? html`<table class="deliveries">
            <thead><tr><th>Event</th><th>State</th><th>Attempts</th><th>Next</th><th></th></tr></thead>
            <tbody>
              ${deliveries.map(
                (delivery) => html`<tr data-delivery=${delivery.id}>
                  <td>${delivery.event}</td>
                  <td><span class="badge delivery-${delivery.state}">${delivery.state}</span></td>
                  <td class="attempts">${delivery.attempts.map(attemptText).join(' · ') || '—'}</td>
                  <td>${delivery.nextAttemptAt ? new Date(delivery.nextAttemptAt).toLocaleTimeString() : '—'}</td>
                  <td><button class="resend" @click=${() => resend(delivery.id)}>Resend</button></td>
                </tr>`,
              )}
            </tbody>
          </table>`
        : html`<p class="muted">Nothing sent yet.</p>`
    }
  </div>`;
}

/** "Plan · 3/4 done", and how many ended otherwise (failed, skipped, cancelled). */
function planTitle(progress: { done: number; ended: number; total: number } | undefined): string {
  const { done = 0, ended = 0, total = 0 } = progress ?? {};
  return `Plan · ${done}/${total} done${ended > done ? ` · ${ended - done} ended without completing` : ''}`;
}

/** "$0.0120 of $0.05 · 3,300 of 10,000 tokens", and "spent" once a limit is reached. */
function budgetText(budget: NonNullable<Task['budget']>): string {
  const parts = [
    ...(budget.usd !== null ? [`${usd(budget.spentUsd)} of ${usd(budget.usd)}`] : []),
    ...(budget.tokens !== null
      ? [`${budget.spentTokens.toLocaleString('en')} of ${budget.tokens.toLocaleString('en')} tokens`]
      : []),
  ];
  return `${parts.join(' · ')}${budget.spent ? ' · spent' : ''}`;
}
