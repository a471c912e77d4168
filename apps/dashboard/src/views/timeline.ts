/**
 * A task's steps as they happen: the model's messages, reasoning folded away, each tool call with its
 * arguments and output (long output folded, with a way to expand), durations and tokens per step.
 */
import type { TaskEvent } from '../api.js';
import { h } from '../dom.js';
import { duration, shortId, usd } from '../format.js';
import { markdown } from '../markdown.js';

const FOLD_LINES = 12;
const FOLD_CHARS = 1_200;

export class Timeline {
  readonly element = h('ol', { class: 'timeline', id: 'timeline' });
  private readonly toolCalls = new Map<string, HTMLElement>();
  /** Each step's tokens and cost, from its model calls' answers, for its `step.completed` line. */
  private readonly stepTokens = new Map<number, number>();
  private readonly stepCost = new Map<number, number>();

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
    if (item) this.element.append(item);
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
        const { retry, reason, answer, rateLimited, notBefore, forkOf, fromStep } = event.data;
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
        return entry(
          'lifecycle',
          retry
            ? `Queued again (retry ${retry}): ${reason ?? ''}`
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
          content ? h('div', { class: 'message' }, markdown(content)) : '',
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
          h('pre', { class: 'arguments' }, prettyJson(event.data.arguments)),
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
      case 'compaction':
        return entry('compaction', `Context summarised: ${event.data.tokensBefore} → ${event.data.tokensAfter} tokens`);
      case 'plan.created':
        return entry(
          'plan',
          `Plan${event.data.version > 1 ? ` (re-plan ${event.data.version})` : ''}: ${event.data.plan.length} subtasks`,
        );
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
      case 'task.completed':
        return entry(
          'end completed',
          'Completed',
          event.data.result ? fold(event.data.result, 'result', markdown) : '',
        );
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

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
