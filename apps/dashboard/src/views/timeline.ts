/**
 * A task's steps as they happen: the model's messages, reasoning folded away, each tool call with its
 * arguments and output (long output folded, with a way to expand), durations and tokens per step.
 */
import type { TaskEvent } from '../api.js';
import { h } from '../dom.js';
import { duration, shortId } from '../format.js';

const FOLD_LINES = 12;
const FOLD_CHARS = 1_200;

export class Timeline {
  readonly element = h('ol', { class: 'timeline', id: 'timeline' });
  private readonly toolCalls = new Map<string, HTMLElement>();
  private readonly stepTokens = new Map<number, number>();

  constructor(private readonly taskId: string) {}

  add(event: TaskEvent): void {
    const item = this.render(event);
    if (item) this.element.append(item);
  }

  private render(event: TaskEvent): HTMLElement | undefined {
    const data = event.data;
    const time = h('time', { datetime: event.ts, title: event.ts }, new Date(event.ts).toLocaleTimeString());
    const entry = (kind: string, ...children: Array<Node | string>) => h('li', { class: `event ${kind}`, 'data-type': event.type, 'data-seq': event.seq }, time, ...children);
    if (event.taskId !== this.taskId) {
      // A subtask's end, in its root's stream.
      const label = `Step ${String(data.planId ?? '')} (${event.agent ?? ''}) ${String(data.status ?? event.type.replace('task.', ''))}`;
      return entry('subtask-end', h('a', { href: `#/tasks/${encodeURIComponent(event.taskId)}` }, label), data.result ? fold(String(data.result), 'result') : '');
    }
    switch (event.type) {
      case 'task.queued':
        return entry('lifecycle', data.retry ? `Queued again (retry ${String(data.retry)}): ${String(data.reason ?? '')}` : data.answer ? `Answered: ${String(data.answer)}` : 'Queued');
      case 'task.started':
        return entry('lifecycle', `Started on ${event.worker ?? '?'}${data.resumed ? ' (resumed)' : ''}`);
      case 'llm.request':
        return entry('llm-request', `Step ${event.step ?? ''}: model call (${String(data.model ?? '')}, ${String(data.messages ?? '')} messages)`);
      case 'llm.response': {
        const usage = data.usage as { promptTokens: number; completionTokens: number } | null;
        if (usage && event.step) this.stepTokens.set(event.step, (this.stepTokens.get(event.step) ?? 0) + usage.promptTokens + usage.completionTokens);
        const calls = (data.toolCalls as Array<{ name: string }> | undefined) ?? [];
        return entry(
          'llm-response',
          h('div', { class: 'meta' }, `Model answered in ${duration(Number(data.durationMs))}`, usage ? ` · ${usage.promptTokens} in / ${usage.completionTokens} out tokens` : '', calls.length ? ` · asks for ${calls.map((call) => call.name).join(', ')}` : ''),
          data.content ? h('pre', { class: 'message' }, String(data.content)) : '',
        );
      }
      case 'reasoning':
        return entry('reasoning', h('details', {}, h('summary', {}, 'Reasoning'), h('pre', {}, String(data.text ?? ''))));
      case 'tool.call': {
        const result = h('div', { class: 'tool-result pending' }, 'running…');
        this.toolCalls.set(String(data.id), result);
        return entry('tool-call', h('div', { class: 'tool-name' }, `${String(data.label ?? data.name)}`), h('pre', { class: 'arguments' }, prettyJson(String(data.arguments ?? ''))), result);
      }
      case 'tool.result': {
        const output = h('div', { class: `tool-result ${data.ok ? 'ok' : 'failed'}` }, h('div', { class: 'meta' }, data.skipped ? 'not run' : `${data.ok ? 'succeeded' : 'failed'} in ${duration(Number(data.durationMs))}`), fold(String(data.output ?? ''), 'output'));
        const waiting = this.toolCalls.get(String(data.id));
        if (waiting) {
          waiting.replaceWith(output);
          return undefined;
        }
        return entry('tool-call', h('div', { class: 'tool-name' }, String(data.name)), output);
      }
      case 'step.completed': {
        const used = event.step ? this.stepTokens.get(event.step) : undefined;
        const errors = data.planErrors as string[] | undefined;
        return entry('step-end', `Step ${event.step ?? ''} done${used ? ` · ${used} tokens` : ''}`, errors ? h('pre', { class: 'plan-errors' }, `Plan not accepted:\n${errors.join('\n')}`) : '');
      }
      case 'compaction':
        return entry('compaction', `Context summarised: ${String(data.tokensBefore)} → ${String(data.tokensAfter)} tokens`);
      case 'plan.created':
        return entry('plan', `Plan${Number(data.version) > 1 ? ` (re-plan ${String(data.version)})` : ''}: ${(data.plan as unknown[]).length} subtasks`);
      case 'subtask.queued':
        return entry('subtask', h('a', { href: `#/tasks/${encodeURIComponent(String(data.subtaskId))}` }, `Step ${String(data.planId)} queued in ${String(data.agent)} (${shortId(String(data.subtaskId))})`));
      case 'task.waiting':
        return entry('waiting', `Waiting for the user: ${String(data.question ?? '')}`);
      case 'task.completed':
        return entry('end completed', 'Completed', data.result ? fold(String(data.result), 'result') : '');
      case 'task.failed':
        return entry('end failed', `Failed: ${String((data.error as { message?: string } | undefined)?.message ?? data.reason ?? '')}`);
      case 'task.cancelled':
        return entry('end cancelled', `Cancelled${data.reason ? `: ${String(data.reason)}` : ''}`);
      default:
        return entry('other', event.type);
    }
  }
}

/** Long text folded: the first lines, and the rest behind a toggle. */
function fold(text: string, label: string): HTMLElement {
  const lines = text.split('\n');
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return h('pre', { class: label }, text || '(empty)');
  return h('details', { class: `fold ${label}` }, h('summary', {}, `${label}: ${lines.length} lines, ${text.length} characters (expand)`), h('pre', {}, text));
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
