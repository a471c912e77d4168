/**
 * The MCP servers an agent lists among its tools, as a task of `tenant` starts them: every secret its
 * entry names resolved (a variable of the worker's read at start, or the tenant's own secret), its
 * folder made absolute with its links followed (the file's check of it read the same). A tenant
 * without a secret a server needs cannot start it: said as why. `optional`: a run may go on without it.
 */
import path from 'node:path';
import {
  agentNames,
  agentSettings,
  apiKeys,
  mcpServers,
  namedTenants,
  resolvedPath,
  type Config,
  type SecretValue,
} from '@agentq/config';
import { DEFAULT_TENANT } from '@agentq/store';
import type { McpServerSpec } from '@agentq/tools';

export type ResolvedServer = { name: string; optional: boolean } & ({ spec: McpServerSpec } | { reason: string });

export function agentMcpServers(config: Config, agent: string, tenant: string): ResolvedServer[] {
  const servers = mcpServers(config);
  const tenants = config.file.settings.tenants;
  const secrets = { ...tenants['*']?.secrets, ...tenants[tenant]?.secrets };
  return (agentSettings(config, agent)?.tools ?? [])
    .filter((tool) => Object.hasOwn(servers, tool))
    .map((name): ResolvedServer => {
      const settings = servers[name]!;
      const missing: string[] = [];
      const resolve = (values: Record<string, SecretValue>) =>
        Object.fromEntries(
          Object.entries(values).map(([key, value]) => {
            if (typeof value === 'string') return [key, value];
            if ('env' in value) return [key, config.file.secretValues[value.env] ?? ''];
            const own = secrets[value.tenantSecret];
            const found = own ? config.file.secretValues[own.env] : undefined;
            if (found === undefined) missing.push(value.tenantSecret);
            return [key, found ?? ''];
          }),
        );
      const spec: McpServerSpec =
        'command' in settings
          ? {
              command: settings.command,
              args: settings.args,
              env: resolve(settings.env),
              ...(settings.dir !== undefined ? { dir: resolvedPath(path.resolve(config.file.dir, settings.dir)) } : {}),
              scope: settings.scope,
              timeoutMs: settings.timeoutMs,
            }
          : { url: settings.url, headers: resolve(settings.headers), timeoutMs: settings.timeoutMs };
      return missing.length
        ? {
            name,
            optional: settings.optional,
            reason: `tenant ${tenant} has no secret ${missing.join(', ')} (tenants.${tenant}.secrets in the configuration file)`,
          }
        : { name, optional: settings.optional, spec };
    });
}

/**
 * The HOMEs of `scope: worker` servers the configuration names, as `<agent>/<tenant>/<server>`: each
 * agent's such servers, for each tenant the file names or gives a key (`default` when it has no key).
 * A worker's sweep removes the others, once no server runs with them: a tenant, agent or server taken
 * out of the file leaves no data behind.
 */
export function workerServerHomes(config: Config): Set<string> {
  const servers = mcpServers(config);
  const keys = apiKeys(config);
  const tenants = new Set([...namedTenants(config), ...keys.map((key) => key.tenant)]);
  if (!keys.length) tenants.add(DEFAULT_TENANT);
  const homes = new Set<string>();
  for (const agent of agentNames(config))
    for (const name of agentSettings(config, agent)?.tools ?? []) {
      const server = Object.hasOwn(servers, name) ? servers[name] : undefined;
      if (server && 'command' in server && server.scope === 'worker')
        for (const tenant of tenants) homes.add(`${agent}/${tenant}/${name}`);
    }
  return homes;
}
