/**
 * A task's run as a trace: each step a fold of its own (the model's call and answer, reasoning folded
 * away, each tool call with its arguments laid out and its output, long output folded), headed by what
 * it did, how long it took, its tokens and cost. The newest step is open, earlier ones fold away unless
 * opened; what is not a step (queued, started, a plan, the end) stays between them. The answer shows
 * once: the final step's message says it is the result above.
 */
import type { TaskEvent } from '../api.js';
import { h } from '../dom.js';
import { duration, readableArguments, shortId, usd } from '../format.js';
import { markdown } from '../markdown.js';

const FOLD_LINES = 12;
const FOLD_CHARS = 1_200;

/** The events that belong in their step's fold. */
const STEP_EVENTS: ReadonlySet<string> = new Set([
  'llm.request',
  'llm.response',
  'reasoning',
  'tool.call',
  'tool.result',
  'step.completed',
  'compaction',
]);

/** A step's fold, and what its heading says. */
interface StepGroup {
  details: HTMLDetailsElement;
  heading: HTMLElement;
  list: HTMLElement;
  /** The user opened or closed it: it is left as they want it. */
  pinned: boolean;
  tools: string[];
  modelMs: number;
  done: boolean;
}

export class Timeline {
  readonly element = h('ol', { class: 'timeline', id: 'timeline' });
  private readonly toolCalls = new Map<string, HTMLElement>();
  /** Each step's tokens and cost, from its model calls' answers, for its `step.completed` line. */
  private readonly stepTokens = new Map<number, number>();
  private readonly stepCost = new Map<number, number>();
  private readonly steps = new Map<number, StepGroup>();
  /** The last answer without tool calls: the task's result, once it completes with it. */
  private lastAnswer: { content: string; element: HTMLElement } | undefined;

  /** `fork`: makes a fork from a step (`POST /v1/tasks/:id/fork`), answering an error to show, if any. */
  constructor(
    private readonly taskId: string,
    private readonly fork?: (body: {
      fromStep: number;
      prompt?: string;
      model?: string;
    }) => Promise<string | undefined>,
  ) {}

  add(event: TaskEvent): void {
    const item = this.render(event);
    if (!item) return;
    const own = event.taskId === this.taskId;
    if (own && event.step && STEP_EVENTS.has(event.type)) {
      const group = this.stepGroup(event.step);
      group.list.append(item);
      this.describe(event, group);
    } else this.element.append(item);
  }

  /** A step's fold, made when its first event comes: it opens, and the earlier ones fold away. */
  private stepGroup(step: number): StepGroup {
    const found = this.steps.get(step);
    if (found) return found;
    const heading = h('span', { class: 'step-facts' });
    const list = h('ol', { class: 'step-events' });
    const summary = h('summary', {}, h('strong', {}, `Step ${step}`), heading);
    const details = h('details', { class: 'step', 'data-step': step, open: true }, summary, list) as HTMLDetailsElement;
    const group: StepGroup = { details, heading, list, pinned: false, tools: [], modelMs: 0, done: false };
    summary.addEventListener('click', () => (group.pinned = true));
    for (const earlier of this.steps.values()) if (!earlier.pinned) earlier.details.open = false;
    this.steps.set(step, group);
    this.element.append(h('li', { class: 'step-group' }, details));
    return group;
  }

  /** What a step's heading says: the tools it called, its model time, tokens and cost, and whether it is done. */
  private describe(event: TaskEvent, group: StepGroup): void {
    if (event.type === 'llm.response') {
      group.modelMs += event.data.durationMs;
      group.tools.push(...event.data.toolCalls.map((call) => call.name));
    }
    if (event.type === 'step.completed') group.done = true;
    const step = event.step!;
    const used = this.stepTokens.get(step);
    const cost = this.stepCost.get(step);
    group.heading.textContent = [
      group.tools.length ? group.tools.join(', ') : 'answer',
      `model ${duration(group.modelMs)}`,
      used ? `${used} tokens` : '',
      cost ? usd(cost) : '',
      group.done ? '' : 'under way',
    ]
      .filter(Boolean)
      .map((fact) => ` · ${fact}`)
      .join('');
  }

  /** A model's message; one without tool calls may turn out to be the task's answer (shown once, above). */
  private message(content: string, mayBeAnswer: boolean): HTMLElement {
    const element = h('div', { class: 'message' }, markdown(content));
    if (mayBeAnswer) this.lastAnswer = { content, element };
    return element;
  }

  /** "Fork from here": a small form (a new prompt, another model) that makes a new task from this step. */
  private forkControl(step: number): HTMLElement {
    const prompt = h('textarea', {
      name: 'prompt',
      rows: 2,
      placeholder: 'New instruction (optional): from step 1 it replaces the prompt, later it is the next message',
    });
    const model = h('input', { name: 'model', placeholder: 'Model (optional)', autocomplete: 'off' });
    const message = h('span', { class: 'form-message', role: 'status' });
    const form = h(
      'form',
      {
        class: 'fork-form',
        hidden: true,
        onsubmit: async (submitted: Event) => {
          submitted.preventDefault();
          message.textContent =
            (await this.fork!({
              fromStep: step,
              ...(prompt.value.trim() ? { prompt: prompt.value.trim() } : {}),
              ...(model.value.trim() ? { model: model.value.trim() } : {}),
            })) ?? '';
        },
      },
      prompt,
      model,
      h('button', { type: 'submit', class: 'primary' }, `Fork from step ${step}`),
      message,
    );
    const open = h(
      'button',
      { type: 'button', class: 'ghost fork', 'data-step': step, onclick: () => (form.hidden = !form.hidden) },
      'Fork from here',
    );
    return h('div', { class: 'fork-control' }, open, form);
  }

  private render(event: TaskEvent): HTMLElement | undefined {
    const time = h('time', { datetime: event.ts, title: event.ts }, new Date(event.ts).toLocaleTimeString());
    const entry = (kind: string, ...children: Array<Node | string>) =>
      h('li', { class: `event ${kind}`, 'data-type': event.type, 'data-seq': event.seq }, time, ...children);
    if (event.taskId !== this.taskId) {
      // A subtask's end, in its root's stream.
      const data =
        event.type === 'task.completed' || event.type === 'task.failed' || event.type === 'task.cancelled'
          ? event.data
          : {};
      const label = `Step ${data.planId ?? ''} (${event.agent ?? ''}) ${data.status ?? event.type.replace('task.', '')}`;
      return entry(
        'subtask-end',
        h('a', { href: `#/tasks/${encodeURIComponent(event.taskId)}` }, label),
        data.result ? fold(data.result, 'result') : '',
      );
    }
    switch (event.type) {
      case 'task.queued': {
        const { retry, reason, answer, rateLimited, modelUnreachable, notBefore, forkOf, fromStep } = event.data;
        if (forkOf)
          return entry(
            'lifecycle',
            'Queued, forked from ',
            h('a', { href: `#/tasks/${encodeURIComponent(forkOf)}` }, shortId(forkOf)),
            ` at step ${fromStep ?? '?'}: the steps before it are kept`,
          );
        if (rateLimited)
          return entry(
            'lifecycle rate-limited',
            `Waiting for rate limit${notBefore ? `, expected to start at ${new Date(notBefore).toLocaleTimeString()}` : ''}: ${reason ?? ''}`,
          );
        if (modelUnreachable)
          return entry(
            'lifecycle rate-limited',
            `Waiting for the model endpoint${notBefore ? `, looks again by ${new Date(notBefore).toLocaleTimeString()} at the latest` : ''} (no attempt spent): ${reason ?? ''}`,
          );
        return entry(
          'lifecycle',
          retry
            ? `Queued again (retry ${retry}${notBefore ? ` at ${new Date(notBefore).toLocaleTimeString()}` : ''}): ${reason ?? ''}`
            : answer
              ? `Answered: ${answer}`
              : reason
                ? `Queued again: ${reason}`
                : 'Queued',
        );
      }
      case 'task.started':
        return entry('lifecycle', `Started on ${event.worker ?? '?'}${event.data.resumed ? ' (resumed)' : ''}`);
      case 'llm.request':
        return entry(
          'llm-request',
          `Step ${event.step ?? ''}: model call (${event.data.model}, ${event.data.messages} messages)`,
        );
      case 'llm.response': {
        const { usage, toolCalls, durationMs, content, costUsd } = event.data;
        if (usage && event.step)
          this.stepTokens.set(
            event.step,
            (this.stepTokens.get(event.step) ?? 0) + usage.promptTokens + usage.completionTokens,
          );
        if (costUsd && event.step) this.stepCost.set(event.step, (this.stepCost.get(event.step) ?? 0) + costUsd);
        return entry(
          'llm-response',
          h(
            'div',
            { class: 'meta' },
            `Model answered in ${duration(durationMs)}`,
            usage ? ` · ${usage.promptTokens} in / ${usage.completionTokens} out tokens` : '',
            costUsd ? ` · ${usd(costUsd)}` : '',
            toolCalls.length ? ` · asks for ${toolCalls.map((call) => call.name).join(', ')}` : '',
          ),
          content ? this.message(content, toolCalls.length === 0) : '',
          // An agent's step can be forked (a planner's steps are its subtasks).
          this.fork && event.step && event.agent !== 'planner' ? this.forkControl(event.step) : '',
        );
      }
      case 'reasoning':
        return entry('reasoning', h('details', {}, h('summary', {}, 'Reasoning'), h('pre', {}, event.data.text)));
      case 'tool.call': {
        const result = h('div', { class: 'tool-result pending' }, 'running…');
        this.toolCalls.set(event.data.id, result);
        return entry(
          'tool-call',
          h('div', { class: 'tool-name' }, event.data.label ?? event.data.name),
          h('pre', { class: 'arguments' }, readableArguments(event.data.arguments)),
          result,
        );
      }
      case 'tool.result': {
        const { ok, skipped, durationMs, output: text, id, name } = event.data;
        const output = h(
          'div',
          { class: `tool-result ${ok ? 'ok' : 'failed'}` },
          h(
            'div',
            { class: 'meta' },
            skipped ? 'not run' : `${ok ? 'succeeded' : 'failed'} in ${duration(durationMs)}`,
          ),
          fold(text, 'output'),
        );
        const waiting = this.toolCalls.get(id);
        if (waiting) {
          waiting.replaceWith(output);
          return undefined;
        }
        return entry('tool-call', h('div', { class: 'tool-name' }, name), output);
      }
      case 'step.completed': {
        const used = event.step ? this.stepTokens.get(event.step) : undefined;
        const cost = event.step ? this.stepCost.get(event.step) : undefined;
        const errors = event.data.planErrors;
        return entry(
          'step-end',
          `Step ${event.step ?? ''} done${used ? ` · ${used} tokens` : ''}${cost ? ` · ${usd(cost)}` : ''}`,
          errors ? h('pre', { class: 'plan-errors' }, `Plan not accepted:\n${errors.join('\n')}`) : '',
        );
      }
      case 'mcp.unavailable':
        return entry(
          'lifecycle unavailable',
          `MCP server ${event.data.server} unavailable: the run goes on without its tools`,
          fold(event.data.reason, 'reason'),
        );
      case 'compaction':
        return entry('compaction', `Context summarised: ${event.data.tokensBefore} → ${event.data.tokensAfter} tokens`);
      case 'plan.created': {
        const { version, plan, given } = event.data;
        const subtasks = `${plan.length} subtask${plan.length === 1 ? '' : 's'}`;
        return entry(
          'plan',
          version > 1
            ? `Re-plan: plan ${version} replaces plan ${version - 1}, with ${subtasks}`
            : `Plan${given ? ' (given on submit)' : ''}: ${subtasks}`,
        );
      }
      case 'subtask.queued': {
        const { subtaskId, planId, agent } = event.data;
        return entry(
          'subtask',
          h(
            'a',
            { href: `#/tasks/${encodeURIComponent(subtaskId)}` },
            `Step ${planId} queued in ${agent} (${shortId(subtaskId)})`,
          ),
        );
      }
      case 'task.waiting':
        return event.data.approvals
          ? entry(
              'waiting',
              `Waiting for approval: ${event.data.approvals.map((call) => `${call.name} (${call.rule})`).join(', ')}`,
            )
          : entry('waiting', `Waiting for the user: ${event.data.question ?? ''}`);
      case 'approval.decided': {
        const { name, approve, reason, expired } = event.data;
        const verdict = expired ? 'Rejected: nobody decided in time' : approve ? 'Approved' : 'Rejected';
        return entry('decision', `${verdict}: ${name}${reason ? ` (${reason})` : ''}`);
      }
      case 'task.completed': {
        const { result } = event.data;
        // The answer shows once: as the result above, and here only where the model said it.
        if (result !== undefined && this.lastAnswer?.content === result) {
          this.lastAnswer.element.replaceChildren(
            h('p', { class: 'muted answer-note' }, 'The answer: shown above as the result.'),
          );
          return entry('end completed', 'Completed');
        }
        return entry('end completed', 'Completed', result ? fold(result, 'result', markdown) : '');
      }
      case 'task.failed':
        return entry('end failed', `Failed: ${event.data.error?.message ?? event.data.reason ?? ''}`);
      case 'task.cancelled':
        return entry('end cancelled', `Cancelled${event.data.reason ? `: ${event.data.reason}` : ''}`);
    }
  }
}

/** Long text folded: the first lines, and the rest behind a toggle. `show`: how (default: as it is, in a <pre>). */
function fold(
  text: string,
  label: string,
  show: (text: string) => HTMLElement = (plain) => h('pre', {}, plain),
): HTMLElement {
  const lines = text.split('\n');
  const shown = show(text || '(empty)');
  shown.classList.add(label);
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return shown;
  return h(
    'details',
    { class: `fold ${label}` },
    h('summary', {}, `${label}: ${lines.length} lines, ${text.length} characters (expand)`),
    shown,
  );
}
