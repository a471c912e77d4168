/** What every job of a worker process gets: the stores, the pool's model, the cancel signals, the config. */
import type { Config } from '@agentq/config';
import type { LanguageModel } from '@agentq/llm';
import type { AgentQueues, ModelOutages, ScheduleTimers } from '@agentq/scheduling';
import type { TaskStore } from '@agentq/store';
import type { Transitions } from '@agentq/tasks';
import type { Logger, TaskTelemetry, Tracing } from '@agentq/telemetry';
import type { McpServers, ProcessIsolation } from '@agentq/tools';
import type { CancelListener } from './cancel-listener.js';
import type { ModelCatalog } from './model-catalog.js';

export interface JobContext {
  store: TaskStore;
  /** The only way a job changes a task's status. */
  transitions: Transitions;
  queues: AgentQueues;
  /** The model of the job's pool. */
  model: LanguageModel;
  /** Every model by name (a task may name its own): made once, priced, within the shared limits. */
  models: ModelCatalog;
  cancels: CancelListener;
  workerId: string;
  config: Config;
  /** How the pool's process tools run. */
  isolation: ProcessIsolation;
  /** The MCP servers this worker's agents take tools from, started when first needed. */
  mcp: McpServers;
  /** Redis's addresses when they are not private: the model's network access refuses them too. */
  serviceAddresses: readonly string[];
  logger: Logger;
  /** Logs and metrics of the tasks this process runs (fed by the store's commits, told of each run's start). */
  telemetry: TaskTelemetry;
  /** Traces (on with OTEL_EXPORTER_OTLP_ENDPOINT). */
  tracing: Tracing;
  /** Timers kept in Redis (an approval's time limit). */
  timers: ScheduleTimers;
  /** Whether a task's tenant is still in the configuration file (its tasks fail when it is not). */
  tenantPresent(tenant: string): boolean;
  /** Model endpoints that could not be reached, per tenant and model, shared by every worker. */
  outages: ModelOutages;
  /** Wakes jobs that waited for an endpoint that answers again (as `outages` lists them). */
  wake(members: readonly string[]): Promise<void>;
}
