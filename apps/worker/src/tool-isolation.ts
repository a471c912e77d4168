/**
 * The isolation of each pool's process tools, decided once when a worker starts: one jail per tool
 * network in use, each tried for real before the worker takes a job. Pools whose agents run no
 * process (casual, web, the planner) need none.
 */
import type { AgentPool, PoolIsolation } from '@agentq/contract';
import { lookup } from 'node:dns/promises';
import { existsSync, mkdirSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { UnrecoverableError } from 'bullmq';
import {
  agentSettings,
  installPrivatePaths,
  jailLimitsFor,
  toolNetworkFor,
  workRoot,
  type Config,
} from '@agentq/config';
import { agentBuiltinTools } from './agent-tools.js';
import {
  chooseIsolation,
  closeIsolation,
  copyWorkdir,
  describeIsolation,
  WorkdirTooLargeError,
  type DiskUsage,
  blockedDestinations,
  runsProcesses,
  type ProcessIsolation,
  type ToolNetwork,
} from '@agentq/tools';

export interface PoolTools {
  isolation: ProcessIsolation;
  /** What the pools page and `agentq doctor` show. */
  summary: PoolIsolation;
  /** One line for the start-up log. */
  description: string;
}

const NOT_NEEDED: ProcessIsolation = { kind: 'unavailable', reason: 'this agent runs no process tools' };

export async function isolationForPools(options: {
  config: Config;
  pools: readonly AgentPool[];
  serviceAddresses: readonly string[];
}): Promise<Map<AgentPool, PoolTools>> {
  const { config } = options;
  const work = workRoot(config);
  // Searchable, never listable: a task's name is not another's to learn.
  await mkdir(work, { recursive: true, mode: 0o711 });
  await chmod(work, 0o711);
  const deny = options.serviceAddresses;
  const hidden = installPrivatePaths(config);
  // One jail per network and limits in use: agents with the same settings share one.
  const bySettings = new Map<string, Promise<ProcessIsolation>>();
  const result = new Map<AgentPool, PoolTools>();
  for (const pool of options.pools) {
    if (!runsProcesses(agentBuiltinTools(config, pool)) && !runsMcpServers(config, pool)) {
      result.set(pool, {
        isolation: NOT_NEEDED,
        summary: { kind: 'not-needed' },
        description: 'runs no process tools',
      });
      continue;
    }
    const network: ToolNetwork = toolNetworkFor(config, pool);
    const limits = jailLimitsFor(config, pool);
    const settings = JSON.stringify({ network, limits });
    if (!bySettings.has(settings)) {
      bySettings.set(
        settings,
        chooseIsolation({
          mode: config.AGENTQ_SANDBOX,
          workRoot: work,
          jail: {
            network,
            deny,
            hidden,
            // Tools start from a small process of the worker's, not from its heap (tool-launcher.ts), jailed or not.
            separateProcess: true,
            limits,
          },
        }),
      );
    }
    const isolation = await bySettings.get(settings)!;
    result.set(pool, { isolation, summary: summarise(isolation), description: describeIsolation(isolation) });
  }
  return result;
}

/** Whether an agent lists a stdio MCP server: its process runs in the agent's jail. */
function runsMcpServers(config: Config, pool: string): boolean {
  const servers = config.file.settings.mcpServers;
  return (agentSettings(config, pool)?.tools ?? []).some((tool) => {
    const server = servers[tool];
    return server !== undefined && 'command' in server;
  });
}

/** Ends the pools' tool launchers. */
export async function closeIsolations(tools: ReadonlyMap<AgentPool, PoolTools>): Promise<void> {
  await Promise.all([...new Set([...tools.values()].map(({ isolation }) => isolation))].map(closeIsolation));
}

function summarise(isolation: ProcessIsolation): PoolIsolation {
  switch (isolation.kind) {
    case 'jail':
      return { kind: 'jail', network: isolation.jail.network };
    case 'none':
      return { kind: 'none' };
    case 'unavailable':
      return { kind: 'unavailable', reason: isolation.reason };
  }
}

/** Redis's addresses when they are not refused already (private, this host's): the egress network and `http_fetch` refuse them too. */
export async function redisAddresses(url: string): Promise<string[]> {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const addresses = (await lookup(host, { all: true })).map((entry) => entry.address);
    const blocked = blockedDestinations();
    return addresses.filter((address) => !blocked(address));
  } catch {
    return [];
  }
}

/**
 * Makes a task's work directory; a fork's first one (`copyFrom`: its ended source's, when it is on this
 * host) starts as a copy of the source's files, owned by the fork's tools' user, unless the source holds
 * more than `quota` (the fork then fails at once, saying so: the same copy would fail again).
 */
export async function prepareWorkdir(options: {
  isolation: ProcessIsolation;
  workdir: string;
  copyFrom?: string | undefined;
  quota?: DiskUsage | undefined;
}): Promise<void> {
  const { isolation, workdir, copyFrom } = options;
  if (copyFrom && existsSync(copyFrom) && !existsSync(workdir)) {
    try {
      await copyWorkdir({
        from: copyFrom,
        to: workdir,
        owner: isolation.kind === 'jail' ? isolation.jail.identity(workdir) : undefined,
        ...(options.quota ? { quota: options.quota } : {}),
      });
    } catch (error) {
      if (error instanceof WorkdirTooLargeError)
        throw new UnrecoverableError(`The fork cannot start: ${error.message}.`);
      throw error;
    }
  }
  if (isolation.kind === 'jail') await isolation.jail.prepareWorkdir(workdir);
  else mkdirSync(workdir, { recursive: true });
}
