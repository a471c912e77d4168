/**
 * The body of one delivery attempt: `{type, timestamp, data}`, `data` the task as `GET /v1/tasks/:id`
 * shows it, bounded. A model writes the result (and the question, a held call's arguments, the plan), so
 * it may be megabytes: the result comes already cut to its head and tail (read so in Redis: getCut),
 * each other text keeps its head and tail past WEBHOOK_TEXT_LIMIT characters (as an event does),
 * `resultBytes` says how large the whole result is and `truncated` that something was cut. A body that
 * still passes WEBHOOK_BODY_LIMIT bytes leaves out the plan and subtasks and keeps at most
 * WEBHOOK_LEAN_TEXT_LIMIT characters of every other text. The receiver that needs the whole asks the API.
 *
 * The bytes returned are the ones signed and the ones sent.
 */
import {
  WEBHOOK_BODY_LIMIT,
  WEBHOOK_LEAN_TEXT_LIMIT,
  WEBHOOK_TEXT_LIMIT,
  type TaskView,
  type WebhookEvent,
  type WebhookPayload,
  type WebhookTaskData,
} from '@agentq/contract';

/** What a body is made of: the event, when it happened, the task read with its result cut (getCut). */
export interface WebhookBodyInput {
  type: WebhookEvent;
  timestamp: string;
  task: TaskView;
  resultBytes: number | null;
  resultCut: boolean;
}

/** @example webhookBody({ type: 'task.completed', timestamp, task, resultBytes: 5, resultCut: false }) // <Buffer 7b ...> */
export function webhookBody(options: WebhookBodyInput): Buffer {
  const body = bodyOf(options, WEBHOOK_TEXT_LIMIT, false);
  return body.length <= WEBHOOK_BODY_LIMIT ? body : bodyOf(options, WEBHOOK_LEAN_TEXT_LIMIT, true);
}

function bodyOf(options: WebhookBodyInput, limit: number, lean: boolean): Buffer {
  const { task } = options;
  const cut = { any: lean || options.resultCut };
  const { plan: _plan, children: _children, ...kept } = task;
  const texts = bounded(lean ? kept : task, limit, cut) as TaskView;
  const data: WebhookTaskData<TaskView> = {
    ...texts,
    // The result keeps its WEBHOOK_TEXT_LIMIT characters, lean or not.
    result: task.result === null ? null : (bounded(task.result, WEBHOOK_TEXT_LIMIT, cut) as string),
    resultBytes: options.resultBytes,
    truncated: cut.any,
  };
  const payload: WebhookPayload<WebhookTaskData<TaskView>> = { type: options.type, timestamp: options.timestamp, data };
  return Buffer.from(JSON.stringify(payload));
}

/** `value` with each string past `limit` characters cut to its head and tail (`cut.any` set when one was). */
function bounded(value: unknown, limit: number, cut: { any: boolean }): unknown {
  if (typeof value === 'string') {
    if (value.length <= limit) return value;
    cut.any = true;
    const head = value.slice(0, (limit * 3) / 4);
    const tail = value.slice(value.length - limit / 4);
    return `${head}\n…[${value.length - head.length - tail.length} characters left out of this delivery; ${value.length} in all: GET /v1/tasks/:id has the whole]…\n${tail}`;
  }
  if (Array.isArray(value)) return value.map((item) => bounded(item, limit, cut));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, bounded(item, limit, cut)]));
  return value;
}
