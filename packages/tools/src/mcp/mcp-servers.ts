/**
 * The MCP servers a worker's agents take tools from, started when first needed and kept for the next
 * calls. Who shares a server: with `scope: worker`, the tasks of one worker, agent and tenant (tenants
 * never share one: each has its own process, folder, uid and credentials); with `scope: task`, one
 * task alone, given its folder by name (never as its working directory), stopped when its run ends.
 * A stdio server runs in the agent's jail (never with the worker's environment), started in its own
 * folder, with a HOME of its own under `homeRoot`, searchable and never listable by others:
 * `worker/<agent>/<tenant>/<server>`, or `task/<taskId>/<server>` (made afresh, removed with the run).
 * A remote one is reached through http_fetch's egress rules.
 * A server that dies is started again by the next call; the call it was serving fails with a message
 * the model can act on. `tools/list_changed` empties the list kept, so the next run reads it again.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { MCP_TASK_DIR_ARGUMENT } from '@agentq/contract';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { BlockedDestinationError, blockedCause, blockedDestinations, checkedLookup } from '../blocked-destinations.js';
import { ToolError } from '../errors.js';
import type { ProcessIsolation } from '../process-isolation.js';
import { Jail, type JailOptions } from '../jail.js';
import { removeWorkdir } from '../remove-workdir.js';
import type { Tool } from '../tool.js';
import { JailedStdioTransport } from './jailed-stdio-transport.js';
import { mcpTool } from './mcp-tool.js';

/** A server as a worker starts it: the configuration file's entry, its secrets resolved. */
export type McpServerSpec =
  | {
      command: string;
      args: readonly string[];
      env: Readonly<Record<string, string>>;
      /** Its own files (absolute, links resolved), read-only in its jail, where it starts. None: an empty folder. */
      dir?: string | undefined;
      scope: 'worker' | 'task';
      timeoutMs?: number | undefined;
    }
  | { url: string; headers: Readonly<Record<string, string>>; timeoutMs?: number | undefined };

export interface McpRun {
  agent: string;
  tenant: string;
  taskId: string;
  /** The task's work directory (a `scope: task` server is given it), made before it starts. */
  workdir: string;
  prepareWorkdir: () => Promise<void>;
  /** The agent's servers, by name, each in the agent's jail (`isolation`). */
  servers: ReadonlyArray<{ name: string; spec: McpServerSpec }>;
  /** How the agent's processes run: a stdio server starts only where that is the jail. */
  isolation: ProcessIsolation;
  /** The agent's jail: its network and limits. */
  jail: Pick<JailOptions, 'network' | 'limits'>;
}

interface Connection {
  client: Client;
  transport: JailedStdioTransport | StreamableHTTPClientTransport;
  tools?: McpTool[];
  ended: boolean;
  close(): Promise<void>;
}

/** How long a server may take to start and answer `initialize`. */
const START_TIMEOUT_MS = 30_000;
/** The most tools one server may offer a model: a server listing thousands would fill every prompt. */
export const MAX_TOOLS_PER_SERVER = 128;

export class McpServers {
  private readonly connections = new Map<string, Promise<Connection>>();
  /** Jails that start servers from this process (a pool's starts its tools from a launcher), by settings. */
  private readonly jails = new Map<string, Jail>();
  private rootReady = false;
  /** The tasks whose servers' HOMEs were made here: removed when their run ends. */
  private readonly tasksWithHomes = new Set<string>();

  constructor(
    private readonly options: {
      /** The servers' HOMEs are made under it (AGENTQ_DATA_DIR/mcp). */
      homeRoot: string;
      /** Paths no jail may bind, nor a folder holding one (jail.ts's `hidden`). Default none. */
      hidden?: readonly string[];
      /** Let remote servers be on loopback and private addresses (AGENTQ_FETCH_PRIVATE). Default false. */
      allowPrivateNetwork?: boolean;
      /** Redis's public addresses: refused too. */
      serviceAddresses?: readonly string[];
      /** The most a tool call may take (AGENTQ_TOOL_TIMEOUT_MS). */
      timeoutMs: number;
      outputLimit: number;
    },
  ) {}

  /**
   * The tools of a run's servers, each named `<server>_<tool>`. A server that cannot start (or list its
   * tools) is left out, with why: the run goes on with the tools it has.
   */
  async toolsFor(run: McpRun): Promise<{ tools: Tool[]; unavailable: Array<{ server: string; reason: string }> }> {
    const tools: Tool[] = [];
    const unavailable: Array<{ server: string; reason: string }> = [];
    for (const { name, spec } of run.servers) {
      let listed: McpTool[];
      try {
        const connection = await this.connect(run, name, spec);
        listed = connection.tools ??= (await connection.client.listTools()).tools.slice(0, MAX_TOOLS_PER_SERVER);
      } catch (error) {
        unavailable.push({ server: name, reason: (error as Error).message });
        continue;
      }
      for (const tool of listed)
        tools.push(
          mcpTool({
            server: name,
            tool,
            call: async (args, signal, timeoutMs) => {
              const live = await this.connect(run, name, spec);
              try {
                return await live.client.callTool({ name: tool.name, arguments: args }, undefined, {
                  signal,
                  timeout: Math.min(timeoutMs, spec.timeoutMs ?? this.options.timeoutMs),
                });
              } catch (error) {
                // What the server wrote on stderr, when it died of it, says why.
                const said = live.transport instanceof JailedStdioTransport ? live.transport.lastStderr() : '';
                throw said ? new Error(`${(error as Error).message} (it said: ${said.slice(-500)})`) : error;
              }
            },
            outputLimit: this.options.outputLimit,
          }),
        );
    }
    return { tools, unavailable };
  }

  /** Ends the servers of a task's run (`scope: task`), and removes their HOMEs. */
  async endTask(taskId: string): Promise<void> {
    const ending: Array<Promise<void>> = [];
    for (const [key, pending] of this.connections) {
      if (!key.startsWith(`task\0${taskId}\0`)) continue;
      this.connections.delete(key);
      // The task is over: a close that fails is its server's to report, and nothing waits on it any more.
      ending.push(pending.then((connection) => connection.close()).catch(() => undefined));
    }
    await Promise.all(ending);
    if (this.tasksWithHomes.delete(taskId)) await rm(this.taskHomes(taskId), { recursive: true, force: true });
  }

  /**
   * Removes what a task's servers left in their HOMEs, whichever worker ran them: a deleted task's, after
   * a crash that skipped `endTask`.
   */
  async removeTaskHomes(taskId: string): Promise<void> {
    this.tasksWithHomes.delete(taskId);
    await removeWorkdir(this.taskHomes(taskId));
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    // This worker is stopping: a close that fails is its server's to report, and nothing waits on it any more.
    await Promise.all(all.map((pending) => pending.then((connection) => connection.close()).catch(() => undefined)));
    await Promise.all([...this.jails.values()].map((jail) => jail.close()));
    this.jails.clear();
  }

  private taskHomes(taskId: string): string {
    return path.join(this.options.homeRoot, 'task', taskId);
  }

  /**
   * The folders above a server's HOME: searchable by others (a root worker's jails run as other uids),
   * never listable (they name agents, tenants and tasks).
   */
  private makeParents(home: string): void {
    const root = this.options.homeRoot;
    if (!this.rootReady) {
      mkdirSync(root, { recursive: true, mode: 0o711 });
      chmodSync(root, 0o711);
      this.rootReady = true;
    }
    mkdirSync(path.dirname(home), { recursive: true, mode: 0o711 });
  }

  private key(run: McpRun, name: string, spec: McpServerSpec): string {
    return 'command' in spec && spec.scope === 'task'
      ? `task\0${run.taskId}\0${name}`
      : `worker\0${run.agent}\0${run.tenant}\0${name}`;
  }

  private async connect(run: McpRun, name: string, spec: McpServerSpec): Promise<Connection> {
    const key = this.key(run, name, spec);
    let pending = this.connections.get(key);
    if (pending) {
      // A start that failed was said to its own caller; this call starts the server again.
      const connection = await pending.catch(() => undefined);
      if (connection && !connection.ended) return connection;
      if (this.connections.get(key) === pending) this.connections.delete(key);
    }
    pending = this.start(run, name, spec);
    this.connections.set(key, pending);
    pending.catch(() => {
      if (this.connections.get(key) === pending) this.connections.delete(key);
    });
    return pending;
  }

  private async start(run: McpRun, name: string, spec: McpServerSpec): Promise<Connection> {
    const client = new Client({ name: 'agentq', version: '0.1.0' });
    let transport: JailedStdioTransport | StreamableHTTPClientTransport;
    let agent: Agent | undefined;
    let refused: BlockedDestinationError | undefined;
    if ('command' in spec) {
      if (run.isolation.kind !== 'jail')
        throw new ToolError(
          'tool_unavailable',
          `The MCP server "${name}" runs only in the jail, and this worker has none (${run.isolation.kind === 'unavailable' ? run.isolation.reason : 'AGENTQ_SANDBOX=none'}).`,
        );
      const settings = JSON.stringify(run.jail);
      let jail = this.jails.get(settings);
      if (!jail)
        this.jails.set(
          settings,
          (jail = new Jail({
            ...run.jail,
            ...(this.options.serviceAddresses ? { deny: this.options.serviceAddresses } : {}),
            ...(this.options.hidden ? { hidden: this.options.hidden } : {}),
          })),
        );
      const task = spec.scope === 'task';
      if (task) await run.prepareWorkdir();
      const home = task
        ? path.join(this.taskHomes(run.taskId), name)
        : path.join(this.options.homeRoot, 'worker', run.agent, run.tenant, name);
      this.makeParents(home);
      // A task's server starts with a HOME of its own, empty: nothing an earlier run left is loaded.
      if (task) {
        this.tasksWithHomes.add(run.taskId);
        await rm(home, { recursive: true, force: true });
      }
      const server = await jail.startServer({
        command: spec.command,
        args: task ? spec.args.map((arg) => arg.replaceAll(MCP_TASK_DIR_ARGUMENT, run.workdir)) : spec.args,
        env: spec.env,
        dir: spec.dir,
        home,
        ...(task ? { taskDir: run.workdir } : {}),
      });
      transport = new JailedStdioTransport(server);
    } else {
      const blocked = this.options.allowPrivateNetwork ? undefined : blockedDestinations(this.options.serviceAddresses);
      agent = new Agent(blocked ? { connect: { lookup: checkedLookup(blocked) } } : {});
      const dispatcher = agent;
      transport = new StreamableHTTPClientTransport(new URL(spec.url), {
        requestInit: { headers: { ...spec.headers } },
        // Every request through the egress rules of http_fetch: a name is checked at connect, redirects refused.
        fetch: (async (url: string | URL, init?: RequestInit) => {
          const target = new URL(url);
          const literal = target.hostname.replace(/^\[|\]$/g, '');
          if (blocked && isIP(literal) && blocked(literal))
            throw (refused = new BlockedDestinationError(literal, literal));
          try {
            return await undiciFetch(url, { ...(init as object), dispatcher, redirect: 'error' } as Parameters<
              typeof undiciFetch
            >[1]);
          } catch (error) {
            // The SDK keeps only a message: what was refused is remembered here.
            refused = blockedCause(error) ?? refused;
            throw error;
          }
        }) as unknown as typeof fetch,
      });
    }
    const connection: Connection = {
      client,
      transport,
      ended: false,
      close: async () => {
        connection.ended = true;
        // A remote server is told its session ended (a DELETE), as the protocol asks of a client that leaves.
        if (transport instanceof StreamableHTTPClientTransport)
          // A courtesy: a server that is gone or refuses ends the session by its own timeout.
          await transport.terminateSession().catch(() => undefined);
        // The connection is over either way; what it was closing is gone with it.
        await client.close().catch(() => undefined);
        await agent?.destroy();
      },
    };
    client.onclose = () => {
      connection.ended = true;
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      delete connection.tools;
    });
    try {
      await client.connect(transport, { timeout: START_TIMEOUT_MS });
    } catch (error) {
      const said = transport instanceof JailedStdioTransport ? transport.lastStderr() : '';
      await connection.close();
      const blocked = refused;
      throw new ToolError(
        'tool_unavailable',
        blocked
          ? `The MCP server "${name}" is at a private or local address (${blocked.address}): refused, as http_fetch refuses it (AGENTQ_FETCH_PRIVATE=true allows it).`
          : `The MCP server "${name}" did not start: ${(error as Error).message}${said ? ` (it said: ${said.slice(-500)})` : ''}`,
      );
    }
    return connection;
  }
}
