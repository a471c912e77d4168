/**
 * The configuration file (agentq.config.yaml): what an install runs, declared in one place. Its agents
 * (each one a pool), the planner, the MCP servers the agents take tools from, and the models' prices and
 * shared limits. The environment keeps what belongs to a deployment: endpoints, secrets, ports, knobs.
 *
 * Every description here is the reference: docs/configuration.md and agentq.config.schema.json are
 * generated from this schema (`npm run config:docs`), and a test fails when they drift.
 */
import {
  AGENT_NAME,
  BUILTIN_TOOLS,
  DEFAULT_RETRY_POLICY,
  DELEGATE_DEFAULTS,
  MAX_TASK_DEPTH,
  RETRY_LIMITS,
  MCP_TASK_DIR_ARGUMENT,
  PLANNER_POOL,
  TOOL_PROTOCOLS,
  WEBHOOK_EVENTS,
} from '@agentq/contract';
import { z } from 'zod';

const modelName = z.string().min(1).max(200);

/** How long a task waits out an unreachable model endpoint, and how far apart the tries are, by default. */
export const DEFAULT_OUTAGE = { failAfterMinutes: 15, maxBackoffSeconds: 30, rateLimitedWaits: 3 } as const;

/** A pool's jobs at once per worker process, `what` saying whose. */
const concurrency = (what: string) =>
  z
    .number()
    .int()
    .positive()
    .max(1_000)
    .optional()
    .describe(`${what} one worker process runs at once. Default: AGENTQ_CONCURRENCY.`);

/** How a pool's runs are tried again after an error that is not an outage of the model endpoint. */
const retrySchema = z
  .object({
    attempts: z
      .number()
      .int()
      .min(1)
      .max(RETRY_LIMITS.maxAttempts)
      .default(DEFAULT_RETRY_POLICY.attempts)
      .describe(
        `Runs a task may have in all, the first included, before it fails (a submit's \`retry.attempts\` overrides it). At most ${RETRY_LIMITS.maxAttempts}. Default ${DEFAULT_RETRY_POLICY.attempts}.`,
      ),
    backoff: z
      .number()
      .min(RETRY_LIMITS.minBackoffSeconds)
      .max(RETRY_LIMITS.maxBackoffSeconds)
      .default(DEFAULT_RETRY_POLICY.backoff)
      .describe(
        `Seconds before the second run; each later one waits twice as long as the one before (at most ${RETRY_LIMITS.maxBackoffSeconds}). From ${RETRY_LIMITS.minBackoffSeconds} to ${RETRY_LIMITS.maxBackoffSeconds}. Default ${DEFAULT_RETRY_POLICY.backoff}.`,
      ),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(RETRY_LIMITS.maxAttempts)
      .default(RETRY_LIMITS.maxAttempts)
      .describe(
        `The most attempts a submit may ask for (\`retry.attempts\` of a task): more is refused with a 400. Default ${RETRY_LIMITS.maxAttempts}, the most there is.`,
      ),
  })
  .strict()
  .refine((retry) => retry.attempts <= retry.maxAttempts, {
    message: '"attempts" is more than "maxAttempts": raise "maxAttempts" or lower "attempts"',
    path: ['attempts'],
  })
  .describe(
    "How its tasks' runs are tried again after an error (a tool's server that would not start, a broken answer): the task fails once its attempts are used. An unreachable model endpoint spends no attempt (`models.<model>.outage`).",
  );

const jailSchema = z
  .object({
    network: z
      .enum(['none', 'egress'])
      .optional()
      .describe(
        "Network of this agent's jailed processes (its tools and its stdio MCP servers): `none`, only the jail's own loopback; `egress`, the internet but never this host, Redis or private ranges. Default: AGENTQ_TOOL_NETWORK.",
      ),
    memoryMb: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Memory of one jailed run, all its processes together, in MiB. Default: AGENTQ_TOOL_MEMORY_MB.'),
    processes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Processes and threads one jailed run may have at once. Default: AGENTQ_TOOL_PROCESSES.'),
    fileMb: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Largest file a jailed process may write, and its private /tmp, in MiB. Default: AGENTQ_TOOL_FILE_MB.'),
  })
  .strict()
  .describe("The jail of this agent's processes.");

const instructionsSchema = z
  .union([
    z.string().min(1),
    z
      .object({
        file: z
          .string()
          .min(1)
          .describe("A Markdown file of the instructions, relative to the configuration file's folder."),
      })
      .strict(),
  ])
  .describe("The agent's system prompt: inline text, or `{file: path}`.");

const hostName = z
  .string()
  .regex(/^(\*\.)?[a-z0-9.-]+$/i, 'a host name, or *.domain for its subdomains')
  .max(253);

const approvalRuleSchema = z
  .object({
    tool: z
      .string()
      .regex(/^[A-Za-z0-9_-]+\*?$/, "a tool's name, or a prefix ending in *")
      .describe(
        "The tool whose calls need approval: a tool's name, or a prefix ending in `*` (an MCP server's tools).",
      ),
    argument: z
      .string()
      .min(1)
      .optional()
      .describe('The argument `matches` or `unlessHosts` reads. Default for `unlessHosts`: `url`.'),
    matches: z
      .string()
      .min(1)
      .refine((pattern) => {
        try {
          new RegExp(pattern, 'u');
          return true;
        } catch {
          return false;
        }
      }, 'a regular expression (JavaScript, with the u flag)')
      .optional()
      .describe(
        "Only calls whose `argument` (as text) matches this regular expression need approval, tried in either Unicode form and any case. A file tool's `path` is read as the tool will open it: resolved in the work directory (`./`, `..`, `//`, links); a fence block that saves a file is read as a `write_file` of it. Any other argument (an MCP tool's path) is read as written and as each path in the work directory it may name (`./`, `//`, `..` read, links inside followed, a leading `/` dropped): another spelling of a path is held too.",
      ),
    unlessHosts: z
      .array(hostName)
      .min(1)
      .optional()
      .describe(
        'Only calls whose URL goes to a host not listed need approval (`*.example.com`: its subdomains); a URL that cannot be read needs it. `http_fetch` does not follow a redirect that a call to its URL would need approval for: the model is told where it went.',
      ),
  })
  .strict()
  .refine((rule) => !(rule.matches && rule.unlessHosts), 'give `matches` or `unlessHosts`, not both')
  .refine((rule) => !rule.matches || rule.argument, '`matches` needs the `argument` it reads');

const approvalsSchema = z
  .object({
    rules: z
      .array(approvalRuleSchema)
      .min(1)
      .max(100)
      .describe('The calls that wait for a person: a call any rule names is not run until approved.'),
    timeoutMinutes: z
      .number()
      .positive()
      .max(60 * 24 * 30)
      .optional()
      .describe(
        'Calls not decided within this many minutes are rejected. Default: they wait until decided or cancelled.',
      ),
  })
  .strict()
  .describe(
    'Approval before a tool runs: its task goes `waiting` with the call, frees its worker, and resumes when `POST /v1/tasks/:id/approvals` decides it.',
  );

const delegateSchema = z
  .object({
    agents: z
      .array(z.string().regex(AGENT_NAME))
      .min(1)
      .max(50)
      .describe('The agents its `delegate` calls may start tasks on (this one too, if listed).'),
    maxChildren: z
      .number()
      .int()
      .positive()
      .max(100)
      .default(DELEGATE_DEFAULTS.maxChildren)
      .describe(`Tasks one \`delegate\` call may start. Default ${DELEGATE_DEFAULTS.maxChildren}.`),
    maxDepth: z
      .number()
      .int()
      .positive()
      .max(MAX_TASK_DEPTH)
      .default(DELEGATE_DEFAULTS.maxDepth)
      .describe(
        `How far below the submitted task a task it starts may be (a submitted task's children are 1 below it). Default ${DELEGATE_DEFAULTS.maxDepth}, at most ${MAX_TASK_DEPTH}.`,
      ),
    maxDescendants: z
      .number()
      .int()
      .positive()
      .max(10_000)
      .default(DELEGATE_DEFAULTS.maxDescendants)
      .describe(
        `Tasks every \`delegate\` call in a submitted task's tree may start, together. Default ${DELEGATE_DEFAULTS.maxDescendants}.`,
      ),
  })
  .strict()
  .describe(
    'What its `delegate` tool may start: the call starts child tasks on these agents, its run pauses holding no worker, and it resumes with their answers once all have ended. A call past a limit is answered to the model as a failed call.',
  );

const agentSchema = z
  .object({
    description: z
      .string()
      .min(1)
      .max(1_000)
      .describe('What this agent is for, in a line: what the planner reads when it routes a subtask to an agent.'),
    instructions: instructionsSchema,
    model: modelName
      .optional()
      .describe('The model this agent calls, as the endpoint names it. Default: AGENTQ_MODEL.'),
    fallbackModels: z
      .array(modelName)
      .max(5)
      .default([])
      .describe(
        'Models tried in turn when a call to the model fails for good (its retries used up, or refused): the step is asked of the next one.',
      ),
    tools: z
      .array(z.string().min(1))
      .default([])
      .describe(
        `What the agent may call: built-in tools by name (${BUILTIN_TOOLS.join(', ')}) and MCP servers by their name in \`mcpServers\` (every tool the server lists). \`web_search\` is offered only when AGENTQ_SEARCH_URL is set.`,
      ),
    protocol: z
      .enum(TOOL_PROTOCOLS)
      .optional()
      .describe(
        'How the model asks for tools: `native` tool calls, or `fences` (code blocks) for small local models. Default: AGENTQ_TOOL_PROTOCOL.',
      ),
    concurrency: concurrency('Jobs of this agent'),
    stream: z
      .boolean()
      .default(true)
      .describe(
        'Ask the model for a stream and show the answer as it forms (`llm.delta` events, live only). An endpoint that answers whole is read as such, in the same request; one that breaks the stream is asked again whole. Default true; false asks for whole answers.',
      ),
    jail: jailSchema.optional(),
    approvals: approvalsSchema.optional(),
    retry: retrySchema.optional(),
    delegate: delegateSchema.optional(),
  })
  .strict();

const plannerSchema = z
  .object({
    model: modelName.optional().describe('The model the planner calls. Default: AGENTQ_MODEL.'),
    fallbackModels: z
      .array(modelName)
      .max(5)
      .default([])
      .describe('Models tried in turn when a call to the planner model fails for good.'),
    concurrency: concurrency('Planning jobs'),
    retry: retrySchema.optional(),
  })
  .strict()
  .describe('The planner: it breaks a task into subtasks for the agents (prompts/planner.md).');

const variableName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a variable name (letters, digits, "_")');
const count = (what: string) => z.number().int().positive().optional().describe(what);

/**
 * A tenant's limits where neither its own entry nor `*`'s sets them: the one place these defaults live
 * (the accessors in index.ts and the descriptions below read them).
 */
export const TENANT_LIMIT_DEFAULTS = {
  unfinished: 100_000,
  stored: 1_000_000,
  schedules: 100,
  sseStreams: 1_000,
  perConcurrencyKey: 1,
} as const;

const tenantLimitsSchema = z
  .object({
    unfinished: count(
      `Submitted tasks it may have not yet ended (pending, queued, running, waiting); past it a submit, retry or fork is a 429 that creates nothing. Default ${TENANT_LIMIT_DEFAULTS.unfinished}.`,
    ),
    stored: count(
      `Submitted tasks it may hold, ended ones included (kept AGENTQ_RETENTION_HOURS); past it a submit is a 429. Default ${TENANT_LIMIT_DEFAULTS.stored}.`,
    ),
    mb: z
      .number()
      .positive()
      .optional()
      .describe(
        'What its stored tasks and its schedules (their tasks and files) may have written to Redis, in MiB: past it a submit or a new schedule is a 429 and its running tasks stop after their step. Default: no limit (still counted).',
      ),
    schedules: count(
      `Schedules it may hold, paused ones included; past it a new schedule is a 429 that creates nothing. Default ${TENANT_LIMIT_DEFAULTS.schedules}.`,
    ),
    tokensPerDay: count(
      'Tokens its tasks may use per UTC day: past it, its submits are 429 until midnight UTC and its running tasks stop after their step. Default: no limit.',
    ),
    usdPerDay: z
      .number()
      .positive()
      .optional()
      .describe('USD its tasks may spend per UTC day, as `tokensPerDay`. Default: no limit.'),
    sseStreams: count(
      `Event streams (SSE) it may hold open on one API process; past it a new one is a 429. Default ${TENANT_LIMIT_DEFAULTS.sseStreams}.`,
    ),
    perConcurrencyKey: z
      .number()
      .int()
      .positive()
      .max(1_000)
      .optional()
      .describe(
        `How many of its tasks that name the same \`concurrencyKey\` run at once, across every worker and pool; a submit may ask for fewer (\`concurrencyLimit\`), never more. Default ${TENANT_LIMIT_DEFAULTS.perConcurrencyKey}.`,
      ),
  })
  .strict();

const tenantSchema = z
  .object({
    keys: z
      .array(
        z.union([
          z.object({ env: variableName }).strict().describe('The key is the value of this variable.'),
          z
            .object({ sha256: z.string().regex(/^[0-9a-f]{64}$/, 'the SHA-256 of the key, 64 lower-case hex digits') })
            .strict()
            .describe('The SHA-256 of the key, in hex (`printf %s "$KEY" | sha256sum`).'),
        ]),
      )
      .default([])
      .describe(
        'Its API keys, by reference: never a key in the file. A key belongs to one tenant: one given to two is refused at start. A key is printable ASCII without spaces (`openssl rand -hex 32`): one a client cannot send as written in `Authorization: Bearer` is refused at start.',
      ),
    admin: z
      .boolean()
      .default(false)
      .describe("Its keys see every tenant's tasks and usage, and open bull-board at /admin/queues."),
    weight: z
      .number()
      .positive()
      .max(1_000)
      .optional()
      .describe(
        "Its share of every pool while tenants wait (fair admission): 3 takes three turns for another's one. Default 1.",
      ),
    limits: tenantLimitsSchema.default({}),
    webhook: z
      .object({
        url: z
          .url({ protocol: /^https?$/, error: 'an http(s) URL' })
          .max(2048)
          .optional()
          .describe("Where its tasks' events go when a submit names no webhook of its own."),
        events: z
          .array(z.enum(WEBHOOK_EVENTS))
          .min(1)
          .optional()
          .describe('The events sent to that URL. Default: task.completed, task.failed, task.cancelled.'),
        secret: z
          .object({ env: variableName })
          .strict()
          .optional()
          .describe(
            "The variable that holds its own signing secret (whsec_...): its tasks' webhooks are signed with it instead of the key derived for it from AGENTQ_WEBHOOK_SECRET (or from `*`'s secret). It may hold no other tenant's key (its own or the one derived for it) nor AGENTQ_WEBHOOK_SECRET's, compared as the key's bytes however it is written: such a file is refused at start.",
          ),
      })
      .strict()
      .optional()
      .describe('Its webhooks: a default URL for its tasks, and its own signing secret.'),
    secrets: z
      .record(variableName, z.object({ env: variableName }).strict())
      .default({})
      .describe(
        "Its secrets by name, each the name of a variable of the worker's environment that holds it (`{env: ACME_GITHUB_TOKEN}`): an MCP server's `{tenantSecret: NAME}` is this tenant's value for its tasks.",
      ),
  })
  .strict()
  .describe('A tenant (or `*`).');

/** A value of a server's `env` or `headers`: text, or a secret named by reference. */
const secretValue = z
  .union([
    z.string(),
    z
      .object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) })
      .strict()
      .describe("The value of this environment variable of the worker's."),
    z
      .object({ tenantSecret: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) })
      .strict()
      .describe(
        "The task's tenant's secret of this name (`tenants.<name>.secrets`): each tenant's tasks reach the server with their own credentials.",
      ),
  ])
  .describe('Text, `{env: NAME}` or `{tenantSecret: NAME}`: a secret is named, never written in the file.');

const mcpToolTimeout = z
  .number()
  .int()
  .positive()
  .max(3_600_000)
  .optional()
  .describe(
    "Milliseconds one tool call may take. Default, and at most: AGENTQ_TOOL_TIMEOUT_MS (and always less than the step's time left).",
  );

const mcpOptional = z
  .boolean()
  .default(false)
  .describe(
    "`false` (the default): a run whose server cannot start fails that attempt, with the server's own error in the task's events, and is tried again as any failed attempt. `true`: the run goes on without the server's tools, and an `mcp.unavailable` event in the task's events says why (the same reason).",
  );

const stdioServerSchema = z
  .object({
    command: z
      .string()
      .min(1)
      .describe('The program, as in any MCP client: an absolute path, or a name found on the system PATH.'),
    args: z.array(z.string()).default([]).describe("The program's arguments."),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), secretValue)
      .default({})
      .describe(
        "Its environment: nothing of the worker's is passed but what is named here (and PATH, LANG, PYTHONNOUSERSITE=1; HOME, a folder of its own where it may write: `<AGENTQ_DATA_DIR>/mcp/worker/<agent>/<tenant>/<server>`, kept until its tenant, agent or server leaves this file, or with `scope: task` `<AGENTQ_DATA_DIR>/mcp/task/<task id>/<server>`, removed with the run; AGENTQ_TASK_DIR with `scope: task`).",
      ),
    dir: z
      .string()
      .optional()
      .describe(
        "The folder of the server's own files: read-only in its jail, and where it starts (its working directory, so `python -m`, node and npx find its code there). Relative to the configuration file's folder. It may not hold the configuration's folder, the .env or the data folder, nor be inside the data folder. Default: none; the server starts in an empty folder (its code on the system, or given in `args`).",
      ),
    scope: z
      .enum(['worker', 'task'])
      .default('worker')
      .describe(
        "`worker`: one process per worker, agent and tenant, kept for the next calls (tenants never share one). `task`: one per task, for servers that work on a task's files: the task's folder is bound read-write and named by `AGENTQ_TASK_DIR` in its environment and by `${AGENTQ_TASK_DIR}` in its `args`; it still starts in its own folder, so nothing the task writes is loaded as its code. Stopped when the task's run ends (and its HOME removed).",
      ),
    optional: mcpOptional,
    timeoutMs: mcpToolTimeout,
  })
  .strict();

const httpServerSchema = z
  .object({
    url: z
      .string()
      .url()
      .describe(
        'A Streamable HTTP endpoint. Reached through the same egress rules as `http_fetch`: no loopback or private address unless AGENTQ_FETCH_PRIVATE=true.',
      ),
    headers: z
      .record(z.string(), secretValue)
      .default({})
      .describe('Headers of every request (credentials by reference).'),
    optional: mcpOptional,
    timeoutMs: mcpToolTimeout,
  })
  .strict();

export const mcpServerSchema = z
  .union([stdioServerSchema, httpServerSchema])
  .describe('`{command, args, env}` for a stdio server, `{url, headers}` for a Streamable HTTP one.');

const modelSettingsSchema = z
  .object({
    price: z
      .object({
        input: z.number().min(0).describe('Prompt tokens.'),
        cachedInput: z.number().min(0).optional().describe('Prompt tokens the provider had cached. Default: `input`.'),
        output: z.number().min(0).describe('Completion tokens.'),
      })
      .strict()
      .optional()
      .describe('USD per million tokens (over the built-in table of common models).'),
    limits: z
      .object({
        rpm: z.number().int().positive().optional().describe('Requests per minute.'),
        tpm: z.number().int().positive().optional().describe('Tokens (prompt and completion) per minute.'),
        requests: z.number().int().positive().optional().describe('Requests per `perSeconds` (instead of `rpm`).'),
        tokens: z.number().int().positive().optional().describe('Tokens per `perSeconds` (instead of `tpm`).'),
        perSeconds: z.number().positive().max(86_400).optional().describe('The window of `requests` and `tokens`.'),
      })
      .strict()
      .refine(
        (limit) => [limit.rpm, limit.tpm, limit.requests, limit.tokens].some((value) => value !== undefined),
        'needs "rpm", "tpm", or "requests"/"tokens" with "perSeconds"',
      )
      .refine(
        (limit) =>
          (limit.rpm === undefined && limit.tpm === undefined) ||
          (limit.requests === undefined && limit.tokens === undefined && limit.perSeconds === undefined),
        'give "rpm"/"tpm" (per minute) or "requests"/"tokens" per "perSeconds", not both',
      )
      .optional()
      .describe(
        "The provider's limits for this model, shared by every worker on every host: a call waits, its worker slot given back, until it fits.",
      ),
    outage: z
      .object({
        failAfterMinutes: z
          .number()
          .positive()
          .max(7 * 24 * 60)
          .default(DEFAULT_OUTAGE.failAfterMinutes)
          .describe(
            `How long a task waits for the model endpoint to answer again before it fails, in minutes (from its first failed call). Default ${DEFAULT_OUTAGE.failAfterMinutes}.`,
          ),
        maxBackoffSeconds: z
          .number()
          .min(1)
          .max(3_600)
          .default(DEFAULT_OUTAGE.maxBackoffSeconds)
          .describe(
            `The longest wait between two tries of the endpoint while it is down, in seconds: the first comes 1 s after the failure, each later one about twice as late, with jitter. Default ${DEFAULT_OUTAGE.maxBackoffSeconds}.`,
          ),
        rateLimitedWaits: z
          .number()
          .int()
          .min(0)
          .max(100)
          .default(DEFAULT_OUTAGE.rateLimitedWaits)
          .describe(
            `How many 429s in a row (since its model last answered) a task waits out without spending an attempt; each further one spends an attempt of its retry policy, so a prompt the provider refuses with 429 every time ends. Default ${DEFAULT_OUTAGE.rateLimitedWaits}.`,
          ),
      })
      .strict()
      .optional()
      .describe(
        "When this model's endpoint cannot be reached (connection refused or reset, DNS, timeouts, 5xx answers, after the SDK's own quick retries), or answers 429 (for a model without `limits`): that tenant's tasks of this model give their worker slots back and wait, spending no attempt, while one call at a time (per tenant) tries the endpoint, with backoff or after the 429's Retry-After (5 minutes at most); all go on as soon as it answers. A task fails once it waited `failAfterMinutes`, and its 429s past `rateLimitedWaits` spend attempts.",
      ),
  })
  .strict();

export const fileSchema = z
  .object({
    $schema: z.string().optional().describe('For editors: the path of agentq.config.schema.json.'),
    planner: plannerSchema.default({ fallbackModels: [] }),
    agents: z
      .record(z.string(), agentSchema.describe('An agent.'))
      .describe(
        'The agents, by name (a lower-case word): each is a pool of workers (`agentq worker --pools NAME`), a choice a submit may name, and a role the planner routes subtasks to.',
      ),
    mcpServers: z
      .record(z.string(), mcpServerSchema)
      .default({})
      .describe('MCP servers, by name, in the shape every MCP client uses. An agent lists a server among its tools.'),
    tenants: z
      .record(z.string(), tenantSchema)
      .default({})
      .describe(
        "Tenants, by name, and `*` for every tenant not named. With any key here, every /v1 call needs one (`Authorization: Bearer <key>`, `x-api-key`, or the dashboard's cookie), and a tenant sees only its own tasks. Without keys the API serves loopback only (or anyone, with AGENTQ_ALLOW_NO_AUTH), as tenant `default`, an admin.",
      ),
    models: z
      .record(modelName, modelSettingsSchema.describe('A model, as the endpoint names it.'))
      .default({})
      .describe(
        "Models by name: their prices, shared limits and how an unreachable endpoint is waited out. A submit may name any model here or any agent's (a batch can compare models on the same prompts).",
      ),
  })
  .strict()
  .superRefine((file, context) => {
    const names = Object.keys(file.agents);
    if (!names.length) context.addIssue({ code: 'custom', path: ['agents'], message: 'declares no agent' });
    for (const name of names) {
      if (!AGENT_NAME.test(name) || name === PLANNER_POOL || name === 'agents')
        context.addIssue({
          code: 'custom',
          path: ['agents', name],
          message: `"${name}" is not an agent name: a lower-case word (a-z, 0-9, "_", "-"), at most 32 characters, not "${PLANNER_POOL}" or "agents"`,
        });
    }
    for (const server of Object.keys(file.mcpServers)) {
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(server))
        context.addIssue({
          code: 'custom',
          path: ['mcpServers', server],
          message: `"${server}" is not a server name: letters, digits, "_" or "-", at most 32 characters (it is part of its tools' names)`,
        });
      if ((BUILTIN_TOOLS as readonly string[]).includes(server))
        context.addIssue({
          code: 'custom',
          path: ['mcpServers', server],
          message: `"${server}" is the name of a built-in tool: name the server otherwise`,
        });
      const spec = file.mcpServers[server]!;
      if ('command' in spec && spec.scope !== 'task' && spec.args.some((arg) => arg.includes(MCP_TASK_DIR_ARGUMENT)))
        context.addIssue({
          code: 'custom',
          path: ['mcpServers', server, 'args'],
          message: `names ${MCP_TASK_DIR_ARGUMENT}, which only a server with \`scope: task\` has: add \`scope: task\` or take it out`,
        });
    }
    for (const [name, tenant] of Object.entries(file.tenants)) {
      // A tenant's name is a folder's (its servers' HOMEs): not `.` or `..`.
      if (name !== '*' && !/^(?!\.\.?$)[\w.-]{1,64}$/.test(name))
        context.addIssue({
          code: 'custom',
          path: ['tenants', name],
          message: `"${name}" is not a tenant name: letters, digits, "_", "." or "-", at most 64 characters, not "." or ".." (or "*")`,
        });
      if (name === '*' && (tenant.keys.length || tenant.admin))
        context.addIssue({
          code: 'custom',
          path: ['tenants', '*'],
          message: 'gives the settings of the tenants not named: a key or admin belongs to a named tenant',
        });
    }
    for (const [name, agent] of Object.entries(file.agents)) {
      agent.tools.forEach((tool, index) => {
        if (!(BUILTIN_TOOLS as readonly string[]).includes(tool) && !(tool in file.mcpServers))
          context.addIssue({
            code: 'custom',
            path: ['agents', name, 'tools', index],
            message: `"${tool}" is neither a built-in tool (${BUILTIN_TOOLS.join(', ')}) nor a server of mcpServers`,
          });
      });
      // `delegate` starts tasks only on the agents its settings name: one without them could start none.
      if (agent.tools.includes('delegate') !== (agent.delegate !== undefined))
        context.addIssue({
          code: 'custom',
          path: ['agents', name, agent.delegate ? 'delegate' : 'tools'],
          message: agent.delegate
            ? 'says what `delegate` may start, but `tools` does not list delegate: add it, or take `delegate` out'
            : 'lists delegate: say which agents it may start tasks on with `delegate: { agents: [...] }`',
        });
      agent.delegate?.agents.forEach((target, index) => {
        if (!(target in file.agents))
          context.addIssue({
            code: 'custom',
            path: ['agents', name, 'delegate', 'agents', index],
            message: `"${target}" is not an agent of this file (${Object.keys(file.agents).join(', ')})`,
          });
      });
      // A rule for a tool the agent does not have would hold nothing: a misspelt name must not pass.
      agent.approvals?.rules.forEach((rule, index) => {
        const prefix = rule.tool.replace(/\*$/, '');
        const reaches = agent.tools.some((tool) =>
          tool in file.mcpServers
            ? `${tool}_`.startsWith(prefix) || prefix.startsWith(`${tool}_`)
            : rule.tool.endsWith('*')
              ? tool.startsWith(prefix)
              : tool === rule.tool,
        );
        if (!reaches)
          context.addIssue({
            code: 'custom',
            path: ['agents', name, 'approvals', 'rules', index, 'tool'],
            message: `"${rule.tool}" names none of this agent's tools (${agent.tools.join(', ') || 'none'}); an MCP server's tools are <server>_<tool>, or <server>_*`,
          });
      });
    }
  });

export type AgentqFile = z.infer<typeof fileSchema>;
export type AgentSettings = AgentqFile['agents'][string];
export type McpServerSettings = z.infer<typeof mcpServerSchema>;
export type SecretValue = z.infer<typeof secretValue>;
export type TenantSettings = z.infer<typeof tenantSchema>;
