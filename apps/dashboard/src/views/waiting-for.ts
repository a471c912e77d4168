/**
 * What a task waits for (`waitingFor`), shown one way per kind, in one map that the compiler keeps
 * complete: a kind added to the contract and not here does not build. Everything a model wrote (a
 * question, a call's arguments, a child's id) is a value in a lit-html template: text, never markup.
 */
import { html, nothing, type TemplateResult } from 'lit-html';
import type { Task, WaitingFor } from '../api.js';
import { readableArguments, shortId } from '../format.js';

/** What a kind's view needs of the page: the task, and the actions a user takes on it. */
export interface WaitingContext {
  task: Task;
  /** Answers the task's question (`POST /v1/tasks/:id/input`); `answered` once it was taken. */
  answer(text: string, answered: () => void): Promise<void>;
  /** Decides one call that waits for approval. */
  decide(decision: { callId: string; approve: boolean; reason?: string }): Promise<void>;
}

type WaitingViews = {
  [Kind in WaitingFor['kind']]: (
    waiting: Extract<WaitingFor, { kind: Kind }>,
    context: WaitingContext,
  ) => TemplateResult;
};

const WAITING_VIEWS = {
  answer: (_waiting, context) => {
    const submit = (event: Event) => {
      event.preventDefault();
      const input = (event.target as HTMLFormElement).querySelector('input')!;
      void context.answer(input.value, () => (input.value = ''));
    };
    return html`<form class="answer" @submit=${submit}>
      <strong>The agent asks: </strong><span class="question">${context.task.question ?? ''}</span>
      <input id="answer-text" placeholder="Your answer" autocomplete="off" />
      <button type="submit" class="primary">Answer</button>
    </form>`;
  },
  approval: (waiting, context) => approvalsTemplate(waiting, context.decide),
  concurrency: (waiting) =>
    html`<p class="waits-for-key">Waits for its concurrency key <code>${waiting.key}</code>: ${waiting.limit} task${waiting.limit === 1 ? '' : 's'} with it run at once; it starts when one ends, in submit order.</p>`,
  children: (waiting, context) => {
    const child = new Map((context.task.children ?? []).map((one) => [one.id, one]));
    return html`<div class="waits-for-children">
      <strong>Waits for the tasks it started:</strong> ${runningText(waiting)}
      <ul>
        ${waiting.running.map(
          (id) =>
            html`<li data-running=${id}><a class="mono" href="#/tasks/${encodeURIComponent(id)}">${shortId(id)}</a>
              ${child.get(id)?.agent ?? ''}
              <span class="badge status-${child.get(id)?.status ?? 'pending'}">${child.get(id)?.status ?? 'pending'}</span></li>`,
        )}
      </ul>
    </div>`;
  },
} satisfies WaitingViews;

/** "1 of 2 still runs; …": how many of the children it waits for have not ended. */
function runningText(waiting: Extract<WaitingFor, { kind: 'children' }>): string {
  const running = waiting.running.length;
  return `${running} of ${waiting.children.length} still run${running === 1 ? 's' : ''}; it goes on once every one has ended.`;
}

/** The view of what `waiting` says the task waits for. */
export function waitingTemplate(waiting: WaitingFor, context: WaitingContext): TemplateResult {
  // The kind picks its own view: each takes its own kind's shape (the map's type says so).
  const view = WAITING_VIEWS[waiting.kind] as (waiting: WaitingFor, context: WaitingContext) => TemplateResult;
  return view(waiting, context);
}

/**
 * Calls that wait for a person: each with its tool, its arguments as the model wrote them (text, never
 * markup), the rule that holds it, and Approve and Reject (with a reason its model reads).
 */
function approvalsTemplate(
  waiting: Extract<WaitingFor, { kind: 'approval' }>,
  decide: WaitingContext['decide'],
): TemplateResult {
  const decideFrom = (callId: string, approve: boolean) => (event: Event) => {
    const reason = (event.target as HTMLElement).closest('li')!.querySelector('input')!.value.trim();
    void decide({ callId, approve, ...(reason ? { reason } : {}) });
  };
  return html`<div class="approvals">
    <h2>Waiting for approval</h2>
    ${waiting.expiresAt ? html`<p class="muted">Calls not decided by ${new Date(waiting.expiresAt).toLocaleString()} are rejected.</p>` : nothing}
    <ul>
      ${waiting.calls.map(
        (call) => html`<li class="approval" data-call=${call.id}>
          <div><strong class="mono">${call.name}</strong> <span class="muted">${call.rule}</span></div>
          <pre class="arguments">${readableArguments(call.arguments)}</pre>
          ${
            call.decision
              ? html`<span class="decision">${call.decision.approve ? 'Approved' : 'Rejected'}${call.decision.reason ? `: ${call.decision.reason}` : ''}</span>`
              : html`<input class="reason" placeholder="Reason (optional; the model reads a rejection's)" autocomplete="off" />
                  <button class="primary approve" @click=${decideFrom(call.id, true)}>Approve</button>
                  <button class="danger reject" @click=${decideFrom(call.id, false)}>Reject</button>`
          }
        </li>`,
      )}
    </ul>
  </div>`;
}
