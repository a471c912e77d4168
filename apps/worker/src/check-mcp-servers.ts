/**
 * The MCP servers of a configuration, tried as a worker would start them (`agentq config check`): each
 * stdio server in its agent's jail, each remote one through the egress rules, once per tenant whose
 * secrets make it another server (or for `default`, without tenants), and its tools listed. Nothing is
 * kept: every server is ended, its folder removed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { agentNames, installPrivatePaths, jailLimitsFor, toolNetworkFor, type Config } from '@agentq/config';
import { McpServers } from '@agentq/tools';
import { agentMcpServers } from './agent-mcp-servers.js';
import { closeIsolations, isolationForPools } from './tool-isolation.js';

export interface ServerCheck {
  server: string;
  agent: string;
  tenant: string;
  optional: boolean;
  /** The names of its tools, when it started. */
  tools?: string[];
  /** Why it did not. */
  error?: string;
}

export async function checkMcpServers(options: {
  config: Config;
  /** Redis's addresses, which a remote server may not be at either. */
  serviceAddresses: readonly string[];
}): Promise<ServerCheck[]> {
  const { config } = options;
  const named = Object.keys(config.file.settings.tenants).filter((tenant) => tenant !== '*');
  const tenants = named.length ? named : ['default'];
  const agents = agentNames(config).filter((agent) => agentMcpServers(config, agent, tenants[0]!).length);
  if (!agents.length) return [];
  const pools = await isolationForPools({ config, pools: agents, serviceAddresses: options.serviceAddresses });
  const homeRoot = await mkdtemp(path.join(tmpdir(), 'agentq-mcp-check-'));
  const servers = new McpServers({
    homeRoot,
    hidden: installPrivatePaths(config),
    allowPrivateNetwork: config.AGENTQ_FETCH_PRIVATE,
    serviceAddresses: options.serviceAddresses,
    timeoutMs: config.AGENTQ_TOOL_TIMEOUT_MS,
    outputLimit: config.AGENTQ_TOOL_OUTPUT_LIMIT,
    answerLimitBytes: config.AGENTQ_MCP_ANSWER_MB * 1024 * 1024,
  });
  const checks: ServerCheck[] = [];
  // A server the same for two tenants (no secret of theirs, or the same) is tried once.
  const tried = new Set<string>();
  try {
    for (const agent of agents) {
      const jail = { network: toolNetworkFor(config, agent), limits: jailLimitsFor(config, agent) };
      for (const tenant of tenants) {
        for (const server of agentMcpServers(config, agent, tenant)) {
          const check = { server: server.name, agent, tenant, optional: server.optional };
          if ('reason' in server) {
            checks.push({ ...check, error: server.reason });
            continue;
          }
          const same = JSON.stringify({ spec: server.spec, jail });
          if (tried.has(same)) continue;
          tried.add(same);
          const { isolation } = pools.get(agent)!;
          // A `scope: task` server is given a task's folder: an empty one.
          const workdir = path.join(homeRoot, 'task-folder');
          const { tools, unavailable } = await servers.toolsFor({
            agent,
            tenant,
            taskId: 'config-check',
            workdir,
            prepareWorkdir: async () => {
              if (isolation.kind === 'jail') await isolation.jail.prepareWorkdir(workdir);
            },
            servers: [server],
            isolation,
            jail,
          });
          checks.push(
            unavailable[0]
              ? { ...check, error: unavailable[0].reason }
              : { ...check, tools: tools.map((tool) => tool.name.slice(server.name.length + 1)) },
          );
          await servers.endTask('config-check');
        }
      }
    }
  } finally {
    await servers.close();
    await closeIsolations(pools);
    await rm(homeRoot, { recursive: true, force: true });
  }
  return checks;
}
