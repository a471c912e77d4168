/**
 * The Prometheus metrics of one process (prom-client), in a registry of its own: the API serves them
 * at `/metrics`, a worker on AGENTQ_METRICS_PORT. Counters count what this process did (Prometheus
 * sums them over processes); gauges that describe the whole system (queue depths, workers online)
 * are read from Redis when scraped, by the API only. Names follow Prometheus's conventions.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds: a model call or a step takes from milliseconds (a local model) to minutes. */
const LONG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Seconds: a tool runs from a millisecond (a file read) to its timeout. */
const TOOL_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60];

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics() {
  const registry = new Registry();
  // process_* and nodejs_* (CPU, memory, GC, event-loop lag), as every Node exporter has them.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    tasksSubmitted: new Counter({
      name: 'agentq_tasks_submitted_total',
      help: 'Tasks submitted through the API, by agent kind.',
      labelNames: ['agent'],
      registers,
    }),
    tasksEnded: new Counter({
      name: 'agentq_tasks_ended_total',
      help: 'Tasks that ended, by agent kind, final status and reason (the error code of a failure).',
      labelNames: ['agent', 'status', 'reason'],
      registers,
    }),
    staleWrites: new Counter({
      name: 'agentq_stale_writes_total',
      help: 'Writes of a run refused because another run holds its task now: a worker that lost its job (stalled, or cut off from Redis) and came back.',
      registers,
    }),
    tasksRequeued: new Counter({
      name: 'agentq_tasks_requeued_total',
      help: 'Running tasks put back in the queue, by agent kind and why (retry, rate_limited, model_unreachable: waiting for its endpoint, handed_back).',
      labelNames: ['agent', 'reason'],
      registers,
    }),
    stepDuration: new Histogram({
      name: 'agentq_step_duration_seconds',
      help: 'Agent steps (a model call and the tools it asked for), by agent kind.',
      labelNames: ['agent'],
      buckets: LONG_BUCKETS,
      registers,
    }),
    modelCallDuration: new Histogram({
      name: 'agentq_model_call_duration_seconds',
      help: 'Model calls, retries included, by model.',
      labelNames: ['model'],
      buckets: LONG_BUCKETS,
      registers,
    }),
    toolCallDuration: new Histogram({
      name: 'agentq_tool_call_duration_seconds',
      help: 'Tool calls, by tool and whether it succeeded.',
      labelNames: ['tool', 'ok'],
      buckets: TOOL_BUCKETS,
      registers,
    }),
    cost: new Counter({
      name: 'agentq_cost_usd_total',
      help: 'What model calls cost, in USD (models.<model>.price, or a built-in price), by model.',
      labelNames: ['model'],
      registers,
    }),
    tokens: new Counter({
      name: 'agentq_tokens_total',
      help: 'Tokens the model reported, by model and kind (prompt, completion).',
      labelNames: ['model', 'kind'],
      registers,
    }),
    activeJobs: new Gauge({
      name: 'agentq_worker_active_jobs',
      help: 'Jobs this worker process is running now, by pool.',
      labelNames: ['pool'],
      registers,
    }),
    queueJobs: new Gauge({
      name: 'agentq_queue_jobs',
      help: 'Jobs in each pool by state (waiting, prioritized, active, delayed, failed), read from Redis when scraped.',
      labelNames: ['pool', 'state'],
      registers,
    }),
    workersOnline: new Gauge({
      name: 'agentq_workers_online',
      help: 'Worker processes whose heartbeat is fresh, by pool, read from Redis when scraped.',
      labelNames: ['pool'],
      registers,
    }),
    tenantTasks: new Gauge({
      name: 'agentq_tenant_tasks',
      help: "Each configured tenant's submitted tasks not ended (unfinished) and kept (stored), read from Redis when scraped.",
      labelNames: ['tenant', 'state'],
      registers,
    }),
    tenantWrittenBytes: new Gauge({
      name: 'agentq_tenant_written_bytes',
      help: "What each configured tenant's stored tasks wrote to Redis, in bytes (limits.mb counts it), read from Redis when scraped.",
      labelNames: ['tenant'],
      registers,
    }),
    tenantSpentToday: new Gauge({
      name: 'agentq_tenant_spent_today',
      help: 'What each tenant with a daily limit spent this UTC day, in tokens or USD, read from Redis when scraped.',
      labelNames: ['tenant', 'unit'],
      registers,
    }),
    tenantLimitUsed: new Gauge({
      name: 'agentq_tenant_limit_used_ratio',
      help: "How much of each of a configured tenant's limits it uses (1: reached; its submits are refused), read from Redis when scraped.",
      labelNames: ['tenant', 'limit'],
      registers,
    }),
    webhookDeliveries: new Counter({
      name: 'agentq_webhook_deliveries_total',
      help: 'Webhook delivery attempts this worker made, by outcome (delivered, retrying: failed and due again, failed: the last one failed).',
      labelNames: ['outcome'],
      registers,
    }),
    webhookOldestPending: new Gauge({
      name: 'agentq_webhook_oldest_pending_seconds',
      help: 'How long the oldest webhook delivery not delivered nor given up has waited, read from Redis when scraped (0: none waits).',
      registers,
    }),
    sseClients: new Gauge({
      name: 'agentq_sse_clients',
      help: 'Clients following events over SSE on this API process.',
      registers,
    }),
    httpRequests: new Histogram({
      name: 'agentq_http_request_duration_seconds',
      help: 'API requests, by method, route and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    }),
  };
}
