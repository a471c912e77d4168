/**
 * The environment and the configuration file, read once at start-up into a typed object. Nothing else
 * in agentq reads `process.env`: apps call `loadConfig()` and pass what each part needs as options.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  DEFAULT_RETRY_POLICY,
  PLANNER_POOL,
  RETRY_LIMITS,
  TOOL_PROTOCOLS,
  type ApprovalRule,
  type RetryPolicy,
  type ToolProtocolName,
  type WebhookEvent,
} from '@agentq/contract';
import { ConfigError } from './config-error.js';
import { findConfigFile, loadConfigFile, type LoadedFile } from './load-file.js';
import { privatePaths, serverDirProblem } from './mcp-server-folders.js';
import { replacedVariables } from './replaced-variables.js';
import { signingSecretOf } from './signing-keys.js';
import { durationMs, webhookSecret } from './webhook-settings.js';
import {
  DEFAULT_OUTAGE,
  TENANT_LIMIT_DEFAULTS,
  type AgentSettings,
  type McpServerSettings,
  type TenantSettings,
} from './file-schema.js';

export { ConfigError } from './config-error.js';
export { durationMs, tenantSigningSecret, webhookKeyBytes, webhookSecret } from './webhook-settings.js';
export { fileSchema, mcpServerSchema } from './file-schema.js';
export type { AgentqFile, AgentSettings, McpServerSettings, SecretValue, TenantSettings } from './file-schema.js';
export { FILE_NAMES, findConfigFile, loadConfigFile, type LoadedFile } from './load-file.js';
export { DEFAULT_CONFIG_FILE, PROMPTS_DIR, SHIPPED_DIR } from './shipped-files.js';
export { holds, resolvedPath } from './mcp-server-folders.js';

const toolProtocol = z.enum(TOOL_PROTOCOLS);
const toolNetwork = z.enum(['none', 'egress']);
const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { message: 'true or false' })
    .transform((value) => value === 'true' || value === '1')
    .default(fallback);

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** A tenant's name: it is part of Redis keys, so a plain word. */
export const TENANT_NAME = /^[\w.-]{1,64}$/;

/** A list of `host:port,host:port,...`, each checked. */
function hostPorts(what: string) {
  return z.string().transform((value, context) => {
    const entries = value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean)
      .map((entry) => {
        const at = entry.lastIndexOf(':');
        const port = Number(entry.slice(at + 1));
        if (at < 1 || !Number.isInteger(port) || port < 1 || port > 65535)
          context.addIssue({ code: 'custom', message: `"${entry}" is not host:port` });
        return { host: entry.slice(0, at), port };
      });
    if (!entries.length) context.addIssue({ code: 'custom', message: `names no ${what}: host:port,host:port` });
    return entries;
  });
}

const configSchema = z.object({
  /** HTTP port of the API. */
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Where Redis answers; BullMQ queues, task records, memory and events all live there. */
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /**
   * Redis Sentinels, `host:port,host:port,...`: agentq asks them where the primary of REDIS_MASTER_NAME is,
   * and follows it when they promote a replica. REDIS_URL then gives only the credentials and the database.
   */
  REDIS_SENTINELS: hostPorts('sentinel').optional(),
  /**
   * A Redis Cluster, `host:port,...` of some of its nodes (the rest are found from them): every key
   * agentq writes then carries its prefix as a hash tag (`{agentq}:...`), so its scripts and BullMQ's
   * find their keys on one node. REDIS_URL then gives only the credentials and TLS (`rediss://`).
   */
  REDIS_CLUSTER_NODES: hostPorts('node').optional(),
  /**
   * How many cells an install's tasks are spread over (docs/DESIGN.md, "Cells"): each cell its own hash
   * tag, so a Redis Cluster's masters share the work (at least its masters; 1: one master carries it all).
   * Fixed when the install first starts: a process with another count is refused. Unset: 1 on one Redis;
   * on a Redis Cluster, the count the install recorded, or for a new install one a master (cellCount).
   */
  AGENTQ_CELLS: z.coerce.number().int().min(1).max(1024).optional(),
  /** The primary's name the Sentinels monitor. */
  REDIS_MASTER_NAME: z.string().min(1).default('mymaster'),
  /**
   * Replicas that must hold each commit of a task before its run goes on (Redis `WAIT`): a failover then
   * loses no step a run built on. 0: not waited for (replication is asynchronous).
   */
  AGENTQ_COMMIT_REPLICAS: z.coerce.number().int().min(0).default(0),
  /** How long a commit waits for those replicas before its run is tried again. */
  AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS: positiveInt(1_000),
  /** Prefix of every Redis key agentq writes, so several installs (or tests) can share one Redis. */
  AGENTQ_REDIS_PREFIX: z
    .string()
    .regex(/^[\w.-]+$/, 'letters, digits, "_", "." or "-" only')
    .default('agentq'),
  /** Any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp server, OpenAI, DeepSeek ...). */
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  AGENTQ_MODEL: z.string().min(1).optional(),
  /** Task work directories live under `<data dir>/work/<taskId>`; a private Redis keeps its files here. */
  AGENTQ_DATA_DIR: z.string().min(1).default('./.agentq'),
  /** How a model asks for tools: `native` OpenAI tool calls, or `fences` (code blocks) for small local models. */
  AGENTQ_TOOL_PROTOCOL: toolProtocol.default('native'),
  /** A SearxNG instance for the web pool's `web_search` tool, e.g. http://127.0.0.1:8888. */
  AGENTQ_SEARCH_URL: z.string().url().optional(),
  /**
   * How process tools (bash, python, node) are isolated. `auto`: jailed with bubblewrap when this
   * machine allows it, else those tools are refused with a message saying how to fix it. `bwrap`: the
   * jail or the worker does not start. `none`: no jail (an explicit opt-out, warned about).
   */
  AGENTQ_SANDBOX: z.enum(['auto', 'bwrap', 'none']).default('auto'),
  /** Network of jailed tools: `none` (only the jail's own loopback) or `egress` (internet, never this host or private ranges). */
  AGENTQ_TOOL_NETWORK: toolNetwork.default('none'),
  /** Processes (and threads) one jailed tool run may have at once. */
  AGENTQ_TOOL_PROCESSES: positiveInt(128),
  /** Memory of a jailed tool run, all its processes together (its cgroup; without one, the data segment of each), in MiB. */
  AGENTQ_TOOL_MEMORY_MB: positiveInt(1024),
  /** Largest file a jailed tool may write, and the size of its private /tmp, in MiB. */
  AGENTQ_TOOL_FILE_MB: positiveInt(512),
  /** What one task's work directory may hold on disk, in MiB (0: no quota): its tools are stopped or refused past it. */
  AGENTQ_TASK_DISK_MB: z.coerce.number().int().min(0).default(4096),
  /** Let `http_fetch` reach loopback and private-network addresses (e.g. an intranet). Default false. */
  AGENTQ_FETCH_PRIVATE: flag(false),
  /**
   * The key webhooks are signed with (Standard Webhooks: `whsec_` and base64 of 24 to 64 random bytes,
   * e.g. `echo whsec_$(openssl rand -base64 32)`); a tenant's own `webhook.secret` wins for its tasks.
   */
  AGENTQ_WEBHOOK_SECRET: webhookSecret.optional(),
  /** The delays between a webhook's attempts: it is tried once more after each (`5s,5m,30m,2h,5h,10h,10h`: a day and more). */
  AGENTQ_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .transform((value, context) => {
      const delays = value.split(',').map((entry) => durationMs(entry.trim()));
      const bad = value.split(',').filter((_, index) => delays[index] === undefined);
      if (bad.length || !delays.length)
        context.addIssue({
          code: 'custom',
          message: `${bad.map((entry) => `"${entry.trim()}"`).join(', ')} is not a delay: each is a number with ms, s, m, h or d (5s,5m,30m)`,
        });
      return delays as number[];
    })
    .default([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]),
  /** How long one webhook attempt may take before it counts as failed (`15s`; at most `5m`). */
  AGENTQ_WEBHOOK_TIMEOUT: z
    .string()
    .transform((value, context) => {
      const ms = durationMs(value.trim());
      if (ms === undefined || ms < 1 || ms > 300_000)
        context.addIssue({ code: 'custom', message: 'is not a delay up to 5m: a number with ms, s or m (15s)' });
      return ms ?? 0;
    })
    .default(15_000),
  /** Let webhooks go to loopback and private-network addresses (a receiver on the same network). Default false. */
  AGENTQ_WEBHOOK_ALLOW_PRIVATE: flag(false),
  /** Subtasks one plan may have. */
  AGENTQ_MAX_SUBTASKS: positiveInt(20),
  /** Times the planner may answer with an invalid plan before the task fails. */
  AGENTQ_PLAN_ATTEMPTS: positiveInt(3),
  /** Times the planner may re-plan around failed subtasks. */
  AGENTQ_REPLANS: z.coerce.number().int().min(0).default(1),
  /** Hours a finished task's data (record, memory, events, shared memory, work directory) is kept. */
  AGENTQ_RETENTION_HOURS: z.coerce.number().positive().default(168),
  /** Jobs one worker process runs at once, per pool. */
  AGENTQ_CONCURRENCY: positiveInt(4),
  /** LLM calls one task may make before it fails with reason `max_steps`. */
  AGENTQ_MAX_STEPS: positiveInt(20),
  /** Tool calls one model answer may run; the rest are answered "not run", telling the model to call them again. */
  AGENTQ_MAX_TOOL_CALLS: positiveInt(32),
  /** Tokens (prompt + completion) one task may use before it fails with reason `budget`. Default: no limit. */
  AGENTQ_TOKEN_BUDGET: z.coerce.number().int().positive().optional(),
  /** Wall-clock time one task may take from its first start, in milliseconds. Default: no limit. */
  AGENTQ_TIME_BUDGET_MS: z.coerce.number().int().positive().optional(),
  /** Past this many tokens of context, older steps are summarised by the model. */
  AGENTQ_CONTEXT_TOKENS: positiveInt(32_000),
  /** Wall-clock limit of one tool run, in milliseconds. */
  AGENTQ_TOOL_TIMEOUT_MS: positiveInt(60_000),
  /** Characters of tool output kept for the model (head and tail). */
  AGENTQ_TOOL_OUTPUT_LIMIT: positiveInt(20_000),
  /**
   * The most read of one answer of an MCP server, in MiB: an HTTP body of a remote server (a tool's
   * result, its tool list, an SSE stream) or a line of a stdio one. Past it nothing more is read, and
   * the call fails telling the model to ask for less (a stdio server is started again).
   */
  AGENTQ_MCP_ANSWER_MB: positiveInt(4),
  /** Timeout of one LLM request, in milliseconds. */
  AGENTQ_LLM_TIMEOUT_MS: positiveInt(120_000),
  /** Retries of one LLM request on 408/409/429/5xx, timeouts, connection errors and broken 2xx bodies (Retry-After honoured). */
  AGENTQ_LLM_MAX_RETRIES: z.coerce.number().int().min(0).default(3),
  /**
   * The whole of one model call, every retry included, in milliseconds: the longest a hung endpoint
   * holds a task before it fails (it is not tried again). Default 5 minutes.
   */
  AGENTQ_LLM_DEADLINE_MS: positiveInt(300_000),
  /**
   * How long a worker's hold on a job lasts without renewal. When a worker dies, its jobs are picked
   * up by another worker after about this long, and resume at their last completed step.
   */
  AGENTQ_JOB_LOCK_MS: positiveInt(30_000),
  /** On SIGTERM, how long a worker lets its running tasks go on before it hands them back to the queue. */
  AGENTQ_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Address the API listens on. Anything but loopback needs API keys (or AGENTQ_ALLOW_NO_AUTH). */
  AGENTQ_HOST: z.string().min(1).default('127.0.0.1'),
  /** Serve a non-loopback AGENTQ_HOST without API keys (anyone who reaches the port can run code). */
  AGENTQ_ALLOW_NO_AUTH: flag(false),
  /** Where the `agentq` CLI finds the API. */
  AGENTQ_URL: z.string().url().default('http://127.0.0.1:8080'),
  /** The key the `agentq` CLI sends. */
  AGENTQ_API_KEY: z.string().min(1).optional(),
  /** Least level of the log lines written: fatal, error, warn, info, debug, trace or silent. */
  AGENTQ_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json`: one JSON object per line; `pretty`: human-readable; `auto`: pretty on a terminal, else JSON. */
  AGENTQ_LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /** Put task prompts in the log lines (they may hold what users would not have in logs). Default false. */
  AGENTQ_LOG_PROMPTS: flag(false),
  /** A worker process serves Prometheus metrics at `http://<AGENTQ_METRICS_HOST>:<port>/metrics`. Default: off. */
  AGENTQ_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Address of a worker's metrics port; `0.0.0.0` for a Prometheus on another machine. */
  AGENTQ_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** An OpenTelemetry collector (OTLP over HTTP, e.g. http://127.0.0.1:4318): traces are sent there. Default: no tracing. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The service name of the spans. Default `agentq-api`, `agentq-worker`. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** `max_tokens` of every model request; a shared token limit reserves it for each call. Default: not sent (1,000 reserved). */
  AGENTQ_MAX_OUTPUT_TOKENS: z.coerce.number().int().positive().optional(),
  /**
   * How many jobs a pool's queue holds waiting; the rest wait in their tenants' lists and are admitted
   * fairly. About the pool's total concurrency: less leaves workers idle, more makes a newcomer wait longer.
   */
  AGENTQ_FAIR_BACKLOG: positiveInt(100),
  /**
   * New tasks (a submit, a retry, a fork) are refused (503) once Redis uses this share of its
   * `maxmemory`, in percent, when it has one: what is left lets the tasks already stored run and end
   * (a Redis past its maxmemory refuses their writes too). 100: refused only at maxmemory itself.
   */
  AGENTQ_REDIS_FULL_PERCENT: z.coerce.number().int().min(1).max(100).default(90),
  /** Largest JSON body the API accepts, e.g. `10mb`. */
  AGENTQ_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'a size such as 512kb or 10mb')
    .default('10mb'),
  /**
   * Connections one client address may hold open to the API at once; past it a new one is closed at
   * once. 0: no cap (behind a proxy that connects from one address, set it to what the proxy holds).
   */
  AGENTQ_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(512),
});

/**
 * The environment's settings, and the configuration file's (`file`); `envFile`: the .env the processes
 * read (absolute, whether it exists or not), unless told to read none.
 */
export type Config = z.infer<typeof configSchema> & { file: LoadedFile; envFile?: string };

export interface LoadConfigOptions {
  /** The variables to read. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A dotenv file read first; real variables win over it. Default: `.env` when it exists. */
  envFile?: string | false;
  /** The configuration file. Default: AGENTQ_CONFIG, else `agentq.config.yaml` here, else the built-in one. */
  configFile?: string;
}

/**
 * Parses the environment and the configuration file. Throws a `ConfigError` naming every bad variable
 * (and every variable the file replaced, with its new place) and every problem of the file.
 * @example const config = loadConfig(); // uses process.env and ./.env
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const envFile = options.envFile ?? '.env';
  const env = options.env ?? process.env;
  if (envFile && options.env === undefined && existsSync(envFile)) process.loadEnvFile(envFile);
  // An empty variable means "not set", as in a compose file's `OPENAI_API_KEY=`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      return `  ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const replaced = replacedVariables(present);
  if (replaced.length)
    throw new ConfigError(
      `These variables are no longer read; their settings live in the configuration file now (docs/configuration.md):\n${replaced.join('\n')}`,
    );
  if (parsed.data.REDIS_SENTINELS && parsed.data.REDIS_CLUSTER_NODES)
    throw new ConfigError(
      'Invalid configuration:\n  REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set: a Redis Cluster fails over by itself; set one of them.',
    );
  const file = loadConfigFile(options.configFile ?? findConfigFile({ env: present }), present);
  const config: Config = { ...parsed.data, file, ...(envFile ? { envFile: path.resolve(envFile) } : {}) };
  const folders = Object.entries(file.settings.mcpServers).flatMap(([name, server]) => {
    if (!('command' in server) || server.dir === undefined) return [];
    const problem = serverDirProblem(name, path.resolve(file.dir, server.dir), installPlaces(config));
    return problem ? [`  mcpServers.${name}.dir: ${problem}`] : [];
  });
  if (folders.length) throw new ConfigError(`${file.path} is not a valid configuration:\n${folders.join('\n')}`);
  return config;
}

/** What no MCP server, and no mount of a jail, may hold: the configuration's folder, the .env, the data folder. */
function installPlaces(config: Config) {
  return { configDir: config.file.dir, envFile: config.envFile, dataDir: path.resolve(config.AGENTQ_DATA_DIR) };
}

/**
 * Where the tasks' work folders are: `<AGENTQ_DATA_DIR>/work`, absolute. The one place its path is
 * made: the workers' tools run in a task's folder there, and the API's files routes read it.
 */
export function workRoot(config: Pick<Config, 'AGENTQ_DATA_DIR'>): string {
  return path.resolve(config.AGENTQ_DATA_DIR, 'work');
}

/** A task's work folder: `<AGENTQ_DATA_DIR>/work/<task id>`. */
export function taskWorkdir(config: Pick<Config, 'AGENTQ_DATA_DIR'>, taskId: string): string {
  return path.join(workRoot(config), taskId);
}

/** The same, resolved (links followed): for the jails, which bind none of them nor a folder holding one. */
export function installPrivatePaths(config: Config): string[] {
  return privatePaths(installPlaces(config));
}

/** True when an LLM endpoint is configured well enough to try: an endpoint (or OpenAI's key) and a model. */
export function llmConfigured(config: Config): boolean {
  return Boolean((config.OPENAI_BASE_URL || config.OPENAI_API_KEY) && config.AGENTQ_MODEL);
}

export const LLM_SETUP_HELP = `No LLM endpoint is configured. Set one OpenAI-compatible endpoint and a model, e.g.:
  Ollama:     OPENAI_BASE_URL=http://127.0.0.1:11434/v1 AGENTQ_MODEL=qwen2.5-coder:7b
  vLLM:       OPENAI_BASE_URL=http://127.0.0.1:8000/v1 AGENTQ_MODEL=<served model name>
  llama.cpp:  OPENAI_BASE_URL=http://127.0.0.1:8080/v1 AGENTQ_MODEL=local
  OpenAI:     OPENAI_API_KEY=sk-... AGENTQ_MODEL=gpt-4o-mini
  DeepSeek:   OPENAI_BASE_URL=https://api.deepseek.com/v1 OPENAI_API_KEY=... AGENTQ_MODEL=deepseek-chat
Put them in the environment or in ./.env. To try agentq without a model: npm run demo`;

/** Every pool: the planner's and one per agent of the configuration file. */
export function poolNames(config: Config): string[] {
  return [PLANNER_POOL, ...agentNames(config)];
}

/** What each pool is for: the planner's, and each agent's description. */
export function poolDescriptions(config: Config): Record<string, string> {
  return {
    [PLANNER_POOL]: 'breaks a task into subtasks for the agents, and writes the final answer from their results',
    ...Object.fromEntries(
      Object.entries(config.file.settings.agents).map(([name, agent]) => [name, agent.description]),
    ),
  };
}

/** The agents of the configuration file, by name. */
export function agentNames(config: Config): string[] {
  return Object.keys(config.file.settings.agents);
}

/** An agent's settings, or undefined for the planner and names that are not agents. */
export function agentSettings(config: Config, pool: string): AgentSettings | undefined {
  return Object.hasOwn(config.file.settings.agents, pool) ? config.file.settings.agents[pool] : undefined;
}

/** An agent's instructions (its system prompt), as text. */
export function agentInstructions(config: Config, agent: string): string {
  return config.file.instructions[agent] ?? '';
}

/** The MCP servers of the configuration file, by name. */
export function mcpServers(config: Config): Record<string, McpServerSettings> {
  return config.file.settings.mcpServers;
}

/** The network of a pool's jailed processes: the agent's own setting, else AGENTQ_TOOL_NETWORK. */
export function toolNetworkFor(config: Config, pool: string): 'none' | 'egress' {
  return agentSettings(config, pool)?.jail?.network ?? config.AGENTQ_TOOL_NETWORK;
}

/** The limits of a pool's jail: the agent's own settings, else the AGENTQ_TOOL_* ones. */
export function jailLimitsFor(
  config: Config,
  pool: string,
): { processes: number; memoryMb: number; fileMb: number; cpuSeconds: number } {
  const own = agentSettings(config, pool)?.jail;
  return {
    processes: own?.processes ?? config.AGENTQ_TOOL_PROCESSES,
    memoryMb: own?.memoryMb ?? config.AGENTQ_TOOL_MEMORY_MB,
    fileMb: own?.fileMb ?? config.AGENTQ_TOOL_FILE_MB,
    cpuSeconds: Math.ceil(config.AGENTQ_TOOL_TIMEOUT_MS / 1000),
  };
}

/** Whether a host name or address is this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

/** The tool protocol of a pool: the agent's own setting, else AGENTQ_TOOL_PROTOCOL. */
export function toolProtocolFor(config: Config, pool: string): ToolProtocolName {
  return agentSettings(config, pool)?.protocol ?? config.AGENTQ_TOOL_PROTOCOL;
}

/** Whether an agent's answers are streamed to its followers as they form (the planner's are not). */
export function streamsAnswers(config: Config, pool: string): boolean {
  return agentSettings(config, pool)?.stream ?? true;
}

/** The calls of an agent that wait for a person's approval, and how long they may wait; none for the planner. */
export function approvalsFor(config: Config, pool: string): { rules: ApprovalRule[]; timeoutMs?: number } | undefined {
  const approvals = agentSettings(config, pool)?.approvals;
  if (!approvals) return undefined;
  return {
    rules: approvals.rules,
    ...(approvals.timeoutMinutes ? { timeoutMs: Math.round(approvals.timeoutMinutes * 60_000) } : {}),
  };
}

/** The model a pool calls: the agent's (or the planner's) own, else AGENTQ_MODEL. */
export function modelFor(config: Config, pool: string): string | undefined {
  const own = pool === PLANNER_POOL ? config.file.settings.planner.model : agentSettings(config, pool)?.model;
  return own ?? config.AGENTQ_MODEL;
}

/** The models a pool's call falls back to, in turn, when its model fails for good. */
export function fallbackModelsFor(config: Config, pool: string): string[] {
  return pool === PLANNER_POOL
    ? config.file.settings.planner.fallbackModels
    : (agentSettings(config, pool)?.fallbackModels ?? []);
}

/**
 * How a pool's runs are tried again after an error (its agent's, or the planner's, `retry`), and the most
 * attempts a submit may ask for there.
 */
export function retryPolicyFor(config: Config, pool: string): RetryPolicy & { maxAttempts: number } {
  const own = pool === PLANNER_POOL ? config.file.settings.planner.retry : agentSettings(config, pool)?.retry;
  return own ?? { ...DEFAULT_RETRY_POLICY, maxAttempts: RETRY_LIMITS.maxAttempts };
}

/**
 * How a model's unreachable (or 429ing) endpoint is waited out (models.<model>.outage): how long a task
 * waits before it fails, and the longest wait between two tries, in milliseconds; and how many 429s in a
 * row a task waits out without spending an attempt.
 */
export function modelOutageFor(
  config: Config,
  model: string,
): { failAfterMs: number; maxBackoffMs: number; rateLimitedWaits: number } {
  const models = config.file.settings.models;
  const own = Object.hasOwn(models, model) ? models[model]?.outage : undefined;
  return {
    failAfterMs: Math.round((own?.failAfterMinutes ?? DEFAULT_OUTAGE.failAfterMinutes) * 60_000),
    maxBackoffMs: Math.round((own?.maxBackoffSeconds ?? DEFAULT_OUTAGE.maxBackoffSeconds) * 1000),
    rateLimitedWaits: own?.rateLimitedWaits ?? DEFAULT_OUTAGE.rateLimitedWaits,
  };
}

/** Jobs at once per process for a pool: its own setting, else AGENTQ_CONCURRENCY. */
export function concurrencyFor(config: Config, pool: string): number {
  const own =
    pool === PLANNER_POOL ? config.file.settings.planner.concurrency : agentSettings(config, pool)?.concurrency;
  return own ?? config.AGENTQ_CONCURRENCY;
}

/** A tenant's limits: its own, and for each one it leaves out, `*`'s. */
function tenantLimits(config: Config, tenant: string): TenantSettings['limits'] {
  const tenants = config.file.settings.tenants;
  return { ...tenants['*']?.limits, ...(Object.hasOwn(tenants, tenant) ? tenants[tenant]?.limits : {}) };
}

/** The API's keys: each one's SHA-256 (hex), its tenant, and whether it is an admin's. */
export function apiKeys(config: Config): Array<{ sha256: string; tenant: string; admin: boolean }> {
  return Object.entries(config.file.settings.tenants).flatMap(([tenant, settings]) =>
    settings.keys.map((key) => ({
      sha256:
        'sha256' in key
          ? key.sha256
          : createHash('sha256')
              .update(config.file.secretValues[key.env] ?? '')
              .digest('hex'),
      tenant,
      admin: settings.admin,
    })),
  );
}

/** The tenants the file names (not `*`): the ones the metrics show. */
export function namedTenants(config: Config): string[] {
  return Object.keys(config.file.settings.tenants).filter((tenant) => tenant !== '*');
}

/** What a tenant may hold: tasks not ended, tasks stored, bytes written (its own limits, else `*`'s, else the defaults). */
export function tenantRoom(config: Config, tenant: string): { unfinished: number; stored: number; bytes?: number } {
  const limits = tenantLimits(config, tenant);
  return {
    unfinished: limits.unfinished ?? TENANT_LIMIT_DEFAULTS.unfinished,
    stored: limits.stored ?? TENANT_LIMIT_DEFAULTS.stored,
    ...(limits.mb !== undefined ? { bytes: Math.round(limits.mb * 1024 * 1024) } : {}),
  };
}

/**
 * A tenant's webhook settings (its own entry's, else `*`'s): the default URL and events of its tasks,
 * and the secret its deliveries are signed with: its own entry's `webhook.secret` as it is; else one
 * derived for it from `*`'s secret or AGENTQ_WEBHOOK_SECRET (tenantSigningSecret), never a key
 * another tenant signs with too, however written (signing-keys.ts refuses it at load); undefined: none.
 */
export function tenantWebhook(
  config: Config,
  tenant: string,
): { url?: string; events?: WebhookEvent[]; secret?: string } {
  const tenants = config.file.settings.tenants;
  const webhook = (tenant === '*' ? undefined : tenants[tenant]?.webhook) ?? tenants['*']?.webhook;
  const secret = signingSecretOf({
    settings: config.file.settings,
    secretValues: config.file.secretValues,
    installSecret: config.AGENTQ_WEBHOOK_SECRET,
    tenant,
  });
  return {
    ...(webhook?.url ? { url: webhook.url } : {}),
    ...(webhook?.events ? { events: webhook.events } : {}),
    ...(secret ? { secret } : {}),
  };
}

/** Schedules a tenant may hold (limits.schedules), paused ones included. */
export function tenantScheduleLimit(config: Config, tenant: string): number {
  return tenantLimits(config, tenant).schedules ?? TENANT_LIMIT_DEFAULTS.schedules;
}

/** Event streams a tenant may hold open on one API process. */
export function tenantSseStreams(config: Config, tenant: string): number {
  return tenantLimits(config, tenant).sseStreams ?? TENANT_LIMIT_DEFAULTS.sseStreams;
}

/** How many of a tenant's tasks with one concurrency key run at once, at most. */
export function tenantConcurrencyLimit(config: Config, tenant: string): number {
  return tenantLimits(config, tenant).perConcurrencyKey ?? TENANT_LIMIT_DEFAULTS.perConcurrencyKey;
}

/** By tenant and `*`, as a commit counts them: what each may write to Redis in bytes (limits.mb). */
export function tenantMaxBytes(config: Config): Record<string, number> | undefined {
  const limits = Object.entries(config.file.settings.tenants).flatMap(([tenant, { limits }]) =>
    limits.mb === undefined ? [] : [[tenant, Math.round(limits.mb * 1024 * 1024)] as const],
  );
  return limits.length ? Object.fromEntries(limits) : undefined;
}

/**
 * By tenant and `*`, as the commit script counts them: tokens and micro-USD per UTC day. A named tenant's
 * entry holds `*`'s limits it leaves out (the script takes one entry whole).
 */
export function tenantSpendingLimits(
  config: Config,
): Record<string, { tokens?: number; microUsd?: number }> | undefined {
  const limits = Object.keys(config.file.settings.tenants).flatMap((tenant) => {
    const { tokensPerDay, usdPerDay } = tenantLimits(config, tenant);
    if (tokensPerDay === undefined && usdPerDay === undefined) return [];
    return [
      [
        tenant,
        {
          ...(tokensPerDay !== undefined ? { tokens: tokensPerDay } : {}),
          ...(usdPerDay !== undefined ? { microUsd: Math.round(usdPerDay * 1_000_000) } : {}),
        },
      ] as const,
    ];
  });
  return limits.length ? Object.fromEntries(limits) : undefined;
}

/** The models a task may name on submit: the file's `models`, AGENTQ_MODEL, and every pool's own and fallbacks. */
export function allowedModels(config: Config): Set<string> {
  const pools = poolNames(config).flatMap((pool) => [modelFor(config, pool), ...fallbackModelsFor(config, pool)]);
  return new Set(
    [...Object.keys(config.file.settings.models), ...pools].filter((name): name is string => name !== undefined),
  );
}

/** What model calls cost, by model (USD per million tokens), as the file's `models` set them. */
export function modelPrices(config: Config): Record<string, { input: number; cachedInput?: number; output: number }> {
  return Object.fromEntries(
    Object.entries(config.file.settings.models).flatMap(([name, model]) => (model.price ? [[name, model.price]] : [])),
  );
}

/** The provider's shared limits by model, as the rate limiter counts them (requests, tokens per window). */
export function modelLimits(config: Config): Record<string, { requests?: number; tokens?: number; windowMs: number }> {
  const limits: Record<string, { requests?: number; tokens?: number; windowMs: number }> = {};
  for (const [name, model] of Object.entries(config.file.settings.models)) {
    const limit = model.limits;
    if (!limit) continue;
    limits[name] =
      limit.rpm !== undefined || limit.tpm !== undefined
        ? {
            ...(limit.rpm !== undefined ? { requests: limit.rpm } : {}),
            ...(limit.tpm !== undefined ? { tokens: limit.tpm } : {}),
            windowMs: 60_000,
          }
        : {
            ...(limit.requests !== undefined ? { requests: limit.requests } : {}),
            ...(limit.tokens !== undefined ? { tokens: limit.tokens } : {}),
            windowMs: Math.round((limit.perSeconds ?? 60) * 1000),
          };
  }
  return limits;
}

/** How new work is admitted into the pools, fairly across tenants (AGENTQ_FAIR_BACKLOG, the tenants' weights). */
export function fairOptions(config: Config): { backlog: number; weights?: Record<string, number> } {
  const weights = Object.fromEntries(
    Object.entries(config.file.settings.tenants).flatMap(([tenant, { weight }]) =>
      weight === undefined ? [] : [[tenant, weight] as const],
    ),
  );
  return {
    backlog: config.AGENTQ_FAIR_BACKLOG,
    ...(Object.keys(weights).length ? { weights } : {}),
  };
}

/**
 * Where Redis is: REDIS_URL, the primary the Sentinels name, or a Redis Cluster's nodes (with
 * REDIS_URL's credentials, and its database for a Sentinel's primary).
 */
export function redisTarget(config: Config): {
  url: string;
  sentinels?: Array<{ host: string; port: number }>;
  masterName?: string;
  clusterNodes?: Array<{ host: string; port: number }>;
} {
  return {
    url: config.REDIS_URL,
    ...(config.REDIS_SENTINELS ? { sentinels: config.REDIS_SENTINELS, masterName: config.REDIS_MASTER_NAME } : {}),
    ...(config.REDIS_CLUSTER_NODES ? { clusterNodes: config.REDIS_CLUSTER_NODES } : {}),
  };
}

/**
 * The prefix of every key agentq writes: AGENTQ_REDIS_PREFIX, as a hash tag on a Redis Cluster
 * (`{agentq}`), so that every key of a script's, and of a BullMQ queue's, is on one node.
 */
export function keyPrefix(config: Config): string {
  return config.REDIS_CLUSTER_NODES ? `{${config.AGENTQ_REDIS_PREFIX}}` : config.AGENTQ_REDIS_PREFIX;
}

/**
 * The install's cell count as the configuration sets it: AGENTQ_CELLS; unset, 1 on one Redis, and on a
 * Redis Cluster `recorded`: the count the install recorded at its first start, or for a new install the
 * fewest cells that spread it evenly over the cluster's masters, recorded then (store's cluster-cells.ts).
 */
export function cellCount(config: Config): number | 'recorded' {
  return config.AGENTQ_CELLS ?? (config.REDIS_CLUSTER_NODES ? 'recorded' : 1);
}

/** AGENTQ_COMMIT_REPLICAS as the task store takes it; undefined when commits are not waited for. */
export function commitDurability(config: Config): { replicas: number; timeoutMs: number } | undefined {
  return config.AGENTQ_COMMIT_REPLICAS > 0
    ? { replicas: config.AGENTQ_COMMIT_REPLICAS, timeoutMs: config.AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS }
    : undefined;
}

export { effectiveConfig } from './effective-config.js';
export { configJsonSchema, configReference } from './config-reference.js';
