/**
 * An agent job: claim the task (still wanted?), run the agent loop from the task's journal, and
 * record how it ended. How a run ends for the job (hand-back, pool pause, retry) is hold-task.ts's.
 */
import { existsSync } from 'node:fs';
import { UnrecoverableError, type Job } from 'bullmq';
import { type AgentPool, TERMINAL_STATUSES } from '@agentq/contract';
import {
  agentInstructions,
  agentSettings,
  tenantRoom,
  approvalsFor,
  jailLimitsFor,
  streamsAnswers,
  taskWorkdir,
  toolNetworkFor,
  toolProtocolFor,
} from '@agentq/config';
import {
  protocolFor,
  runAgent,
  type AgentJournal,
  timeBudgetIs,
  tokenBudgetIs,
  type AgentOutcome,
  type RunAgentOptions,
  type StopCondition,
} from '@agentq/core';
import type { LanguageModel } from '@agentq/llm';
import type { MemoryEntry } from '@agentq/protocol';
import { createRedisScratchpad, inputFiles, type TaskRecord } from '@agentq/store';
import { forkDiskQuota, onChildFinished, resumeParentIfDone } from '@agentq/tasks';
import { type JobPayload } from '@agentq/scheduling';
import { createToolSettings, WorkdirDisk } from '@agentq/tools';
import { agentBuiltinTools } from './agent-tools.js';
import { agentMcpServers } from './agent-mcp-servers.js';
import { forkJournal } from './fork-journal.js';
import { holdTask, type HeldTask } from './hold-task.js';
import type { JobContext } from './job-context.js';
import { recordOutcome } from './record-outcome.js';
import { spendingIsWithin } from './spending-stop.js';
import { subtaskPrompt } from './subtask-prompt.js';
import { readPrompt, systemPromptFor } from './system-prompts.js';
import { prepareWorkdir } from './tool-isolation.js';
import { placeInputs } from './place-inputs.js';
import { delegateTool } from './delegate-tool.js';
import { liveDeltas, type LiveDeltas } from './live-deltas.js';

export async function runAgentJob(
  job: Job,
  payload: JobPayload<'agent'>,
  context: JobContext,
  agent: AgentPool,
  token?: string,
): Promise<string> {
  const { taskId } = payload;
  const { store, transitions, config } = context;
  const protocolName = toolProtocolFor(config, agent);
  const builtin = agentBuiltinTools(config, agent);
  const approvals = approvalsFor(config, agent);
  const budgets: StopCondition[] = [];
  if (config.AGENTQ_TOKEN_BUDGET) budgets.push(tokenBudgetIs(config.AGENTQ_TOKEN_BUDGET));
  if (config.AGENTQ_TIME_BUDGET_MS) budgets.push(timeBudgetIs(config.AGENTQ_TIME_BUDGET_MS));

  // A fork's files start as its source's, once nothing of the source runs any more.
  const diskQuota = forkDiskQuota(config.AGENTQ_TASK_DISK_MB);
  const disk = diskQuota && new WorkdirDisk(taskWorkdir(config, taskId), diskQuota);
  const endedSourceWorkdir = async (sourceId: string) => {
    const source = await store.getRecord(sourceId);
    return source && TERMINAL_STATUSES.has(source.status) ? taskWorkdir(config, sourceId) : undefined;
  };
  // A fork's steps and files, both taken when it starts: its source may be deleted (its folder swept)
  // before the fork's first tool call. The lazy prepareWorkdir below still copies them into a folder
  // not made yet (a fork resumed on another host).
  const startFork = async (sourceId: string, journal: () => Promise<MemoryEntry[]>, workdir: string) => {
    const kept = await journal();
    const from = await endedSourceWorkdir(sourceId);
    if (from && existsSync(from))
      await prepareWorkdir({ isolation: context.isolation, workdir, copyFrom: from, quota: diskQuota });
    return kept;
  };
  // The agent's MCP servers' tools, for this task's tenant. A server that cannot start fails the run's
  // attempt, with its error (tried again as any failed attempt; at once, for a secret the tenant lacks),
  // unless the file says it is optional: then the run goes on without it, and says why in the task's
  // events (`mcp.unavailable`, the same reason), so its user knows why the model does without it.
  const mcpTools = async (tenant: string, workdir: string, makeWorkdir: () => Promise<void>, journal: AgentJournal) => {
    const servers = agentMcpServers(config, agent, tenant);
    if (!servers.length) return [];
    const { tools, unavailable } = await context.mcp.toolsFor({
      agent,
      tenant,
      taskId,
      workdir,
      prepareWorkdir: makeWorkdir,
      servers: servers.flatMap((server) => ('spec' in server ? [server] : [])),
      isolation: context.isolation,
      jail: { network: toolNetworkFor(config, agent), limits: jailLimitsFor(config, agent) },
    });
    // `again`: whether another attempt may start it (a secret the tenant lacks it will lack then too).
    const failed = [
      ...servers.flatMap((server) =>
        'reason' in server
          ? [{ ...server, reason: `The MCP server "${server.name}" cannot start: ${server.reason}`, again: false }]
          : [],
      ),
      ...unavailable.map(({ server, reason }) => ({
        name: server,
        reason,
        again: true,
        optional: servers.some((one) => one.name === server && one.optional),
      })),
    ];
    for (const server of failed)
      context.logger.warn({ taskId, agent, server: server.name }, `MCP server unavailable: ${server.reason}`);
    const required = failed.filter((server) => !server.optional);
    if (required.length) {
      const message = `${required.map((server) => server.reason).join('; ')}. A run of ${agent} needs its servers (\`optional: true\` in a server's entry lets runs go on without it).`;
      throw required.every((server) => server.again) ? new Error(message) : new UnrecoverableError(message);
    }
    // Written with the run's first write, after its `task.started`.
    const skipped = failed.map((server) => ({
      type: 'mcp.unavailable' as const,
      data: { server: server.name, reason: server.reason },
    }));
    if (skipped.length) await journal.commit({ lazy: true, events: skipped });
    // A name taken already (a built-in's, or another server tool's once made a valid name) is not offered
    // twice: a server cannot shadow a built-in tool.
    const taken = new Set(builtin.map((tool) => tool.name));
    return tools.filter((tool) => {
      if (!taken.has(tool.name)) return taken.add(tool.name);
      context.logger.warn({ taskId, agent, tool: tool.name }, 'MCP tool left out: its name is taken by another tool');
      return false;
    });
  };
  // A task's own servers (`scope: task`) end with its run, however it ended, and before its outcome is
  // recorded: from then on its next run may start here (an answer to its question), and would be given
  // the servers this run is about to end.
  const endingServers = (run: (held: HeldTask) => Promise<AgentOutcome>) => (held: HeldTask) =>
    run(held).finally(() => context.mcp.endTask(taskId));
  const held = holdTask({
    job,
    token,
    context,
    task: payload,
    agent,
    resumed: (record) => record.steps > 0 || record.status === 'running',
    // A run that must wait goes back through admission (hold-task.ts).
    readmit: true,
    run: endingServers(async ({ record, journal, signal, spending, model }) => {
      const workdir = taskWorkdir(config, taskId);
      const makeWorkdir = async () => {
        // A task given files gets its folder whole, with every file in it (again on another host, for a
        // resumed run): an attempt cut short left none, and this one places them all.
        if (record.inputs && !existsSync(workdir))
          await placeInputs({
            files: await inputFiles(store, record.inputsOf ?? record.rootId),
            given: record.inputs,
            workdir,
            owner: context.isolation.kind === 'jail' ? context.isolation.jail.identity(workdir) : undefined,
            mode: context.isolation.kind === 'jail' ? 0o700 : undefined,
          });
        await prepareWorkdir({
          isolation: context.isolation,
          workdir,
          copyFrom: record.forkOf ? await endedSourceWorkdir(record.forkOf) : undefined,
          quota: diskQuota,
        });
      };
      // A task given files has them before its first step.
      if (record.inputs) await makeWorkdir();
      const delegating = agentSettings(config, agent)?.delegate;
      const tools = [
        ...builtin,
        ...(delegating
          ? [
              delegateTool({
                store,
                queues: context.queues,
                record,
                settings: delegating,
                room: tenantRoom(config, record.tenant),
              }),
            ]
          : []),
        ...(await mcpTools(record.tenant, workdir, makeWorkdir, journal)),
      ];
      const systemPrompt = systemPromptFor({
        instructions: agentInstructions(config, agent),
        protocol: protocolName,
        tools,
      });
      // The answer as it forms, to the task's followers (the agent's `stream`), before its commit.
      const deltas = streamsAnswers(config, agent)
        ? liveDeltas({ redis: store.redis, channel: store.keys.eventsChannel(taskId), task: record, agent })
        : undefined;
      return runAgent({
        model: deltas ? endingDeltas(model, deltas) : model,
        ...(deltas ? { onDelta: deltas.push } : {}),
        tools,
        protocol: protocolFor(protocolName),
        journal,
        systemPrompt,
        // A plan's subtask is told of its plan; a delegated child (its depth written) has what its parent wrote.
        prompt: record.parentId && record.depth === undefined ? await subtaskPrompt({ store, record }) : record.prompt,
        ...(record.forkOf
          ? { startFrom: () => startFork(record.forkOf!, () => forkJournal({ store, record, systemPrompt }), workdir) }
          : {}),
        toolContext: createToolSettings({
          workdir,
          isolation: context.isolation,
          // Made when a tool first needs it: most tasks of some kinds never do.
          prepareWorkdir: makeWorkdir,
          disk,
          scratchpad: createRedisScratchpad({ redis: store.redis, key: store.keys.scratchpad(record.rootId) }),
          allowPrivateNetwork: config.AGENTQ_FETCH_PRIVATE,
          serviceAddresses: context.serviceAddresses,
          timeoutMs: config.AGENTQ_TOOL_TIMEOUT_MS,
          outputLimit: config.AGENTQ_TOOL_OUTPUT_LIMIT,
        }),
        maxSteps: config.AGENTQ_MAX_STEPS,
        maxToolCallsPerStep: config.AGENTQ_MAX_TOOL_CALLS,
        // A task's own token budget also stops it before a call whose prompt alone would pass it (the
        // shared spending is known only once a call's commit adds it up).
        stopWhen: [
          ...budgets,
          ...(record.budgetTokens !== undefined && !record.parentId ? [tokenBudgetIs(record.budgetTokens)] : []),
          spendingIsWithin(spending, record),
        ],
        usage: { promptTokens: record.promptTokens, completionTokens: record.completionTokens },
        startedAt: Date.parse(record.startedAt ?? '') || Date.now(),
        compaction: { limit: config.AGENTQ_CONTEXT_TOKENS, prompt: readPrompt('summariser') },
        ...(approvals ? { approvals: { rules: approvals.rules, ...decidedOf(record) } } : {}),
        signal,
      });
    }),
    settle: async (ran, { record, by }) => {
      const outcome: AgentOutcome =
        ran.ended === 'ran'
          ? ran.value
          : { status: 'failed', reason: 'error', message: ran.message, steps: record.steps };
      // An approvals' time limit is set before the task waits: a timer with nothing to reject does nothing.
      const interrupt = outcome.status === 'interrupted' ? outcome.interrupt : undefined;
      const approvalsExpireAt =
        interrupt?.kind === 'approval' && approvals?.timeoutMs ? new Date(Date.now() + approvals.timeoutMs) : undefined;
      if (approvalsExpireAt && interrupt?.kind === 'approval')
        await context.timers.expireApprovalsAt(taskId, interrupt.step, approvalsExpireAt.getTime());
      // What its folder holds, for a fork's check: a fork must not copy past its own quota.
      await recordOutcome({
        transitions,
        task: record,
        by: { ...by, workdir: disk?.usage() },
        protocol: protocolName,
        outcome,
        ...(approvalsExpireAt ? { approvalsExpireAt } : {}),
      });
      // Children that all ended before it paused let it go on now (else the last one to end does).
      if (interrupt?.kind === 'children') await resumeParentIfDone({ store, queues: context.queues, parentId: taskId });
      if (record.parentId) await onChildFinished({ store, queues: context.queues, taskId });
      // Its concurrency key has room now: the next task with it starts (a task that waits keeps its place).
      if (outcome.status === 'completed' || outcome.status === 'failed' || outcome.status === 'cancelled')
        await context.queues.of(record.id).gate.ended(record);
      // A failed task is a failed job in BullMQ's counts too; it is recorded already, so not tried again.
      if (outcome.status === 'failed') throw new UnrecoverableError(outcome.message);
      return outcome.status;
    },
  });
  const end = await held;
  if (end.held) return end.value;
  // A job re-run after a crash right after its task ended, or a cancel that came first: finish what
  // follows a subtask's end (idempotent).
  if (end.record?.parentId && (end.cancelled || (end.status && TERMINAL_STATUSES.has(end.status))))
    await onChildFinished({ store, queues: context.queues, taskId });
  return end.lost ? 'lost' : end.cancelled ? 'cancelled' : 'skipped';
}

/** A model whose every call ends its deltas as it resolves: none is sent after the answer's commit. */
function endingDeltas(model: LanguageModel, deltas: LiveDeltas): LanguageModel {
  return {
    modelId: model.modelId,
    generate: (request) => model.generate(request).finally(() => deltas.end()),
  };
}

/** What was decided of the step a task's run resumes, and which approved calls of it began already. */
function decidedOf(record: TaskRecord): { decided?: NonNullable<RunAgentOptions['approvals']>['decided'] } {
  const { decisions, startedCalls } = record;
  if (!decisions) return {};
  return {
    decided: { ...decisions, ...(startedCalls?.step === decisions.step ? { started: startedCalls.ids } : {}) },
  };
}
