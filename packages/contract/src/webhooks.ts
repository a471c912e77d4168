/** Webhooks: what a task's client is told when it ends (or waits), and how each delivery went. */
/** The events a webhook may ask for; without `events`, the three endings. */
export const WEBHOOK_EVENTS = ['task.completed', 'task.failed', 'task.cancelled', 'task.waiting'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEvent[] = ['task.completed', 'task.failed', 'task.cancelled'];

/** The status each event is sent for. */
export const WEBHOOK_EVENT_STATUS: Record<WebhookEvent, 'completed' | 'failed' | 'cancelled' | 'waiting'> = {
  'task.completed': 'completed',
  'task.failed': 'failed',
  'task.cancelled': 'cancelled',
  'task.waiting': 'waiting',
};

/** Where a task's events are sent, as its view shows it (the signing secret is never shown). */
export interface WebhookView {
  url: string;
  events: WebhookEvent[];
}

/** One attempt to deliver: the receiver's HTTP status, or why there was none. */
export interface DeliveryAttemptView {
  at: string;
  /** The receiver's status code; null when no answer came (timeout, refused, DNS). */
  statusCode: number | null;
  /** Why it did not count as delivered, when it did not. */
  error: string | null;
  durationMs: number;
}

/**
 * One message to a task's webhook, as `GET /v1/tasks/:id/deliveries` lists it. Its `id` is the
 * `webhook-id` header of every attempt (a receiver drops a repeat by it).
 */
export interface DeliveryView {
  id: string;
  event: WebhookEvent;
  url: string;
  /** `pending`: an attempt is due at `nextAttemptAt`; `delivered`: a 2xx came; `failed`: every attempt failed. */
  state: 'pending' | 'delivered' | 'failed';
  createdAt: string;
  nextAttemptAt: string | null;
  attempts: DeliveryAttemptView[];
}

/**
 * The most a delivery keeps of any text (a prompt, a question, a call's arguments) in characters, and of
 * the result in bytes (UTF-8): its head (three quarters) and tail beyond.
 */
export const WEBHOOK_TEXT_LIMIT = 32 * 1024;

/**
 * The most bytes a delivery's body takes before it is made lean: past it, the plan and subtasks are left
 * out and every text but the result is cut to WEBHOOK_LEAN_TEXT_LIMIT characters.
 */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** What a lean delivery keeps of each text but the result. */
export const WEBHOOK_LEAN_TEXT_LIMIT = 1024;

/**
 * A delivery's `data`: the task as `GET /v1/tasks/:id` shows it when the attempt is made, each text cut to
 * its head and tail past WEBHOOK_TEXT_LIMIT characters; `GET` has the whole.
 */
export type WebhookTaskData<Task = unknown> = Task & {
  /** The whole result's size in bytes, UTF-8 (null without a result). */
  resultBytes: number | null;
  /** Some text was cut, or the plan and subtasks left out: `GET /v1/tasks/:id` has the whole task. */
  truncated: boolean;
};

/** The body of every delivery (Standard Webhooks' shape): the event, when it happened, the task. */
export interface WebhookPayload<Task = unknown> {
  type: WebhookEvent;
  timestamp: string;
  data: Task;
}

/** `GET /v1/webhooks/secret`: the key a tenant's deliveries are signed with, for its receiver. */
export interface WebhookSecretView {
  tenant: string;
  /** A Standard Webhooks secret (`whsec_` and base64): the tenant's own, no other tenant's deliveries verify with it. */
  secret: string;
}
